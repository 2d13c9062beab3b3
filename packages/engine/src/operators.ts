import { CONDITION_OPERATORS } from './types.js';
import type { ConditionOperator } from './types.js';

const BY_LOWER_CASE: ReadonlyMap<string, ConditionOperator> = new Map(
  CONDITION_OPERATORS.map((op) => [op.toLowerCase(), op]),
);

/**
 * Maps an operator name to its canonical casing, matching case-insensitively (spec: "On write,
 * operators are matched by name case-insensitively ... and normalised to the canonical casing").
 * Surrounding whitespace is not trimmed: `" Equals"` is unknown.
 *
 * @returns the canonical operator, or `undefined` when the name is not one of the twenty.
 */
export function normalizeOperator(name: string): ConditionOperator | undefined {
  return BY_LOWER_CASE.get(name.toLowerCase());
}

/** How an operator reads the attribute and its values. */
export type OperatorFamily = 'string' | 'number' | 'instant' | 'regex' | 'semver';

/** The family an operator belongs to, which decides how its values are parsed and validated. */
export function operatorFamily(op: ConditionOperator): OperatorFamily {
  switch (op) {
    case 'GreaterThan':
    case 'LessThan':
    case 'GreaterThanOrEqual':
    case 'LessThanOrEqual':
      return 'number';
    case 'Before':
    case 'After':
      return 'instant';
    case 'MatchesRegex':
      return 'regex';
    case 'SemverEquals':
    case 'SemverGreaterThan':
    case 'SemverGreaterThanOrEqual':
    case 'SemverLessThan':
    case 'SemverLessThanOrEqual':
      return 'semver';
    default:
      return 'string';
  }
}
