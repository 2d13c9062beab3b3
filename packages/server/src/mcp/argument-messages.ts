import { z } from 'zod';
import { alternatives, typeNames } from '../http/validation-messages.js';

type Issue = Parameters<z.core.$ZodErrorMap>[0];

/** zod's names for what it expected, in JSON's terms where they differ. */
const ZOD_TYPES: Record<string, string> = { int: 'integer', record: 'object', map: 'object' };

function expectedKinds(issue: Issue | z.core.$ZodIssue): string[] {
  if (issue.code === 'invalid_type') return typeNames(ZOD_TYPES[issue.expected] ?? issue.expected);
  if (issue.code === 'invalid_value') return issue.values.map((value) => JSON.stringify(value));
  if (issue.code === 'invalid_union' && !('note' in issue && issue.note))
    return issue.errors.flatMap((branch) => branch.flatMap((inner) => expectedKinds(inner)));
  return [];
}

/** "characters long", "items" or nothing, after "at most 200". */
function unit(origin: string): string {
  if (origin === 'string') return ' characters long';
  if (origin === 'array' || origin === 'set') return ' items';
  return '';
}

/**
 * How an invalid MCP tool argument reads, in the management API's words (issue #25, design
 * record 021): "is required", "must be a string", "must be at most 200". The MCP SDK validates
 * tool arguments with zod before any tool runs and appends "at <argument>" to each message,
 * so messages start with the verb, as the management API's field messages do.
 */
export const argumentMessage: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined
        ? 'is required'
        : `must be ${alternatives(expectedKinds(issue))}`;
    case 'invalid_value':
    case 'invalid_union': {
      const kinds = expectedKinds(issue);
      return kinds.length > 0
        ? `must be ${alternatives(kinds)}`
        : 'is not a value this tool accepts';
    }
    case 'too_big': {
      const limit = Number(issue.maximum);
      return `must be ${issue.inclusive === false ? 'less than' : 'at most'} ${limit}${unit(issue.origin)}`;
    }
    case 'too_small': {
      const limit = Number(issue.minimum);
      if (limit === 1 && issue.origin !== 'number' && issue.origin !== 'int')
        return 'must not be empty';
      return `must be ${issue.inclusive === false ? 'greater than' : 'at least'} ${limit}${unit(issue.origin)}`;
    }
    case 'invalid_format':
      return `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'unrecognized_keys':
      return `has arguments this tool does not take: ${issue.keys.join(', ')}`;
    default:
      // Our own refinements already speak these words ("is required for action update").
      return undefined;
  }
};

/** Makes zod, which the MCP SDK validates tool arguments with, speak {@link argumentMessage}. */
export function useArgumentMessages(): void {
  z.config({ customError: argumentMessage });
}
