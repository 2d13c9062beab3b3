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

/**
 * Each operator in words, as it reads after the attribute ("country is one of DE or AT"), and its
 * negation ("country is not one of DE or AT"): one table for every reader of rules — the console's
 * editor and sentences, and the audit log's descriptions.
 */
export const OPERATOR_WORDS: Readonly<Record<ConditionOperator, readonly [string, string]>> = {
  Equals: ['is', 'is not'],
  NotEquals: ['is not', 'is'],
  Contains: ['contains', 'does not contain'],
  NotContains: ['does not contain', 'contains'],
  GreaterThan: ['is greater than', 'is not greater than'],
  LessThan: ['is less than', 'is not less than'],
  GreaterThanOrEqual: ['is at least', 'is not at least'],
  LessThanOrEqual: ['is at most', 'is not at most'],
  In: ['is one of', 'is not one of'],
  NotIn: ['is not one of', 'is one of'],
  MatchesRegex: ['matches regex', 'does not match regex'],
  StartsWith: ['starts with', 'does not start with'],
  EndsWith: ['ends with', 'does not end with'],
  Before: ['is before', 'is not before'],
  After: ['is after', 'is not after'],
  SemverEquals: ['version =', 'version ≠'],
  SemverGreaterThan: ['version >', 'version not >'],
  SemverGreaterThanOrEqual: ['version ≥', 'version not ≥'],
  SemverLessThan: ['version <', 'version not <'],
  SemverLessThanOrEqual: ['version ≤', 'version not ≤'],
};
