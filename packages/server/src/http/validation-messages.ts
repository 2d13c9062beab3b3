import type { ErrorObject } from 'ajv';

/**
 * Schema validation errors in words a person reads next to the field they typed in (issue #25,
 * design record 021): one sentence per field, naming what is expected ("must be a string or
 * null", "must be at most 100"), never the validator's vocabulary (`anyOf`, raw patterns).
 * Every API that validates with a schema maps through here: the management error envelope,
 * the evaluation API's problem bodies, OFREP's `errorDetails` and, through the management API,
 * the MCP tools.
 *
 * Needs ajv's `allErrors` and `verbose` (a union's branches are described from its schema);
 * a `pattern` is described by its schema's `errorMessage` (`ajv-errors`).
 */

/** One invalid field: its dotted name and what it must be. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** The most fields one refusal names: a body can provoke thousands of errors (issue 38). */
export const FIELD_PROBLEM_LIMIT = 20;

/**
 * Turns ajv's errors for one part of a request into one problem per field, in schema order, for
 * the first {@link FIELD_PROBLEM_LIMIT} fields.
 * @param part `body`, `querystring`, `params` or `headers`; body fields are named bare,
 *   the others with the part as a prefix (`querystring.limit`).
 */
export function fieldProblems(errors: readonly ErrorObject[], part: string): FieldProblem[] {
  const problems = new Map<string, string>();
  for (const error of resolveUnions(errors)) {
    if (problems.size === FIELD_PROBLEM_LIMIT) break;
    const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const params = error.params as { missingProperty?: string; additionalProperty?: string };
    const property = params.missingProperty ?? params.additionalProperty;
    const field = [part === 'body' ? '' : part, path, property].filter(Boolean).join('.') || part;
    if (!problems.has(field)) problems.set(field, sentence(error));
  }
  return [...problems].map(([field, message]) => ({ field, message }));
}

/** The top-level message naming every invalid field: `name must be a string or null.` */
export function validationSummary(problems: readonly FieldProblem[]): string {
  const list = problems.map(({ field, message }) => `${field} ${message}`).join('; ');
  return problems.length < FIELD_PROBLEM_LIMIT
    ? `${list}.`
    : `${list} (the first ${FIELD_PROBLEM_LIMIT} problems; there may be more).`;
}

const UNIONS = new Set(['anyOf', 'oneOf']);
/** Errors saying the value is of the wrong kind altogether, rather than wrong in detail. */
const KIND = new Set(['type', 'const', 'enum']);

/**
 * Replaces each union's errors (one set per branch, then "must match a schema in anyOf") by the
 * errors of the branch the value was meant for — the one whose kind it has, e.g. the string
 * branch of "string or null" for a string that is too long — or, when it has the kind of no
 * branch, by one error listing the branches ("must be a string or null").
 *
 * Ajv reports a union's branch errors together, just before the union's own error, so one pass
 * resolves every union, inner ones before the unions around them: each error is moved once per
 * union around it, however many errors a body provokes (issue 38).
 */
function resolveUnions(errors: readonly ErrorObject[]): ErrorObject[] {
  const resolved: ErrorObject[] = [];
  for (const error of errors) {
    if (!UNIONS.has(error.keyword)) {
      resolved.push(error);
      continue;
    }
    const prefix = `${error.schemaPath}/`;
    let first = resolved.length;
    for (let before = resolved[first - 1]; before && belongsTo(before, error, prefix);)
      before = resolved[--first - 1];
    const branches = new Map<string, ErrorObject[]>();
    for (const branchError of resolved.splice(first)) {
      const [branch = ''] = branchError.schemaPath.slice(prefix.length).split('/');
      const list = branches.get(branch);
      if (list) list.push(branchError);
      else branches.set(branch, [branchError]);
    }
    const fitting = [...branches]
      .filter(([branch, branchErrors]) =>
        branchErrors.every(
          (branchError) =>
            !(
              KIND.has(branchError.keyword) &&
              branchError.instancePath === error.instancePath &&
              branchError.schemaPath === `${prefix}${branch}/${branchError.keyword}`
            ),
        ),
      )
      .map(([, branchErrors]) => branchErrors)
      .sort((a, b) => a.length - b.length);
    // `unionKinds` is ours, not ajv's: "must be" followed by what each branch accepts.
    resolved.push(
      ...(fitting[0] ?? [
        { ...error, keyword: 'unionKinds', params: { kinds: error.schema as unknown[] } },
      ]),
    );
  }
  return resolved;
}

/** Whether `error` is one of `union`'s branch errors (for the value the union checked). */
function belongsTo(error: ErrorObject, union: ErrorObject, prefix: string): boolean {
  return (
    error.schemaPath.startsWith(prefix) &&
    (error.instancePath === union.instancePath ||
      error.instancePath.startsWith(`${union.instancePath}/`))
  );
}

/** How one error reads after its field name. */
function sentence(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const limit = params.limit as number;
  switch (error.keyword) {
    case 'type':
      return `must be ${alternatives(String(params.type).split(',').flatMap(typeNames))}`;
    case 'unionKinds':
      return `must be ${alternatives((params.kinds as Schema[]).flatMap(kinds))}`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'enum':
      return `must be ${alternatives((params.allowedValues as unknown[]).map((value) => JSON.stringify(value)))}`;
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a field this request accepts';
    case 'minLength':
      return limit === 1 ? 'must not be empty' : `must be at least ${limit} characters long`;
    case 'maxLength':
      return `must be at most ${limit} characters long`;
    case 'minimum':
      return `must be at least ${limit}`;
    case 'maximum':
      return `must be at most ${limit}`;
    case 'exclusiveMinimum':
      return `must be greater than ${limit}`;
    case 'exclusiveMaximum':
      return `must be less than ${limit}`;
    case 'multipleOf':
      return `must be a multiple of ${params.multipleOf as number}`;
    case 'minItems':
      return limit === 1 ? 'must not be empty' : `must have at least ${limit} items`;
    case 'maxItems':
      return `must have at most ${limit} items`;
    case 'uniqueItems':
      return `must not repeat an item (items ${params.j as number} and ${params.i as number} are equal)`;
    case 'minProperties':
      return `must have at least ${limit} properties`;
    case 'maxProperties':
      return `must have at most ${limit} properties`;
    case 'format':
      return FORMATS[params.format as string] ?? `must be a valid ${params.format as string}`;
    case 'errorMessage':
      // The schema's own description (ajv-errors), e.g. what a key may contain.
      return error.message ?? 'is not valid';
    case 'pattern':
      return 'is not in the expected format';
    default:
      return 'is not valid here';
  }
}

const FORMATS: Record<string, string> = {
  uuid: 'must be a UUID',
  'date-time': 'must be a date and time such as 2026-06-01T13:00:00Z',
  date: 'must be a date such as 2026-06-01',
  uri: 'must be an absolute URL such as https://example.com/path',
  email: 'must be an email address',
};

const TYPE_NAMES: Record<string, string[]> = {
  string: ['a string'],
  number: ['a number'],
  integer: ['a whole number'],
  boolean: ['true', 'false'],
  object: ['an object'],
  array: ['an array'],
  null: ['null'],
};

/** How a JSON type reads in "must be …": `integer` is "a whole number". */
export function typeNames(type: string): string[] {
  return TYPE_NAMES[type] ?? [type];
}

interface Schema {
  const?: unknown;
  enum?: unknown[];
  type?: string | string[];
  anyOf?: Schema[];
  oneOf?: Schema[];
}

/** What a union branch accepts, as listed in "must be …". */
function kinds(schema: Schema): string[] {
  if ('const' in schema) return [JSON.stringify(schema.const)];
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value));
  const nested = schema.anyOf ?? schema.oneOf;
  if (nested) return nested.flatMap(kinds);
  if (schema.type) return [schema.type].flat().flatMap(typeNames);
  return ['a valid value'];
}

/** `a`, `a or b`, `a, b or c` — each alternative once. */
export function alternatives(items: string[]): string {
  const unique = [...new Set(items)];
  return unique.length <= 1
    ? (unique[0] ?? '')
    : `${unique.slice(0, -1).join(', ')} or ${unique[unique.length - 1] ?? ''}`;
}
