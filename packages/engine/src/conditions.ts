/**
 * Conditions: compiling them once (values parsed, regexes built) and matching them against a
 * context on the hot path, plus the write-time validation the server runs before storing one.
 */
import type { RE2JS } from 're2js';
import type { SemVer } from 'semver';
import { lookupAttribute } from './context.js';
import { normalizeOperator, operatorFamily } from './operators.js';
import type { OperatorFamily } from './operators.js';
import { compileRegex } from './regex.js';
import { CONDITION_OPERATORS } from './types.js';
import type { ConditionOperator, EvaluationContext, SdkCondition } from './types.js';
import {
  compareSemver,
  parseSemver,
  parseSemverMemoised,
  toInstant,
  toInstantMemoised,
  toNumber,
} from './value-parsing.js';

// Matcher kinds and comparisons are small integers so that matching is a switch on a number,
// with no closure per condition and no string comparison of operator names.
const KIND_NEVER = 0;
const KIND_EQUALS = 1;
const KIND_CONTAINS = 2;
const KIND_STARTS_WITH = 3;
const KIND_ENDS_WITH = 4;
const KIND_NUMBER = 5;
const KIND_INSTANT = 6;
const KIND_REGEX = 7;
const KIND_SEMVER = 8;

const CMP_EQ = 0;
const CMP_GT = 1;
const CMP_GTE = 2;
const CMP_LT = 3;
const CMP_LTE = 4;

/** A condition ready for evaluation. Every field is always present so all share one shape. */
export interface CompiledCondition {
  /**
   * Index in its environment's {@link ConditionTable}, where identical conditions share one
   * compiled condition and so one slot for memoising results within an evaluation; -1 when
   * compiled on its own.
   */
  readonly id: number;
  readonly attribute: string;
  readonly kind: number;
  readonly comparison: number;
  /** NotEquals, NotContains, NotIn: match when no value matches. */
  readonly noneOf: boolean;
  readonly negate: boolean;
  readonly strings: readonly string[];
  readonly stringSet: ReadonlySet<string>;
  readonly numbers: readonly number[];
  readonly regexes: readonly RE2JS[];
  readonly semvers: readonly SemVer[];
}

const EMPTY_STRINGS: readonly string[] = [];
const EMPTY_SET: ReadonlySet<string> = new Set();
const EMPTY_NUMBERS: readonly number[] = [];
const EMPTY_REGEXES: readonly RE2JS[] = [];
const EMPTY_SEMVERS: readonly SemVer[] = [];

function kindAndComparison(op: ConditionOperator): [kind: number, comparison: number] {
  switch (op) {
    case 'Equals':
    case 'NotEquals':
    case 'In':
    case 'NotIn':
      return [KIND_EQUALS, CMP_EQ];
    case 'Contains':
    case 'NotContains':
      return [KIND_CONTAINS, CMP_EQ];
    case 'StartsWith':
      return [KIND_STARTS_WITH, CMP_EQ];
    case 'EndsWith':
      return [KIND_ENDS_WITH, CMP_EQ];
    case 'GreaterThan':
      return [KIND_NUMBER, CMP_GT];
    case 'GreaterThanOrEqual':
      return [KIND_NUMBER, CMP_GTE];
    case 'LessThan':
      return [KIND_NUMBER, CMP_LT];
    case 'LessThanOrEqual':
      return [KIND_NUMBER, CMP_LTE];
    case 'Before':
      return [KIND_INSTANT, CMP_LT];
    case 'After':
      return [KIND_INSTANT, CMP_GT];
    case 'MatchesRegex':
      return [KIND_REGEX, CMP_EQ];
    case 'SemverEquals':
      return [KIND_SEMVER, CMP_EQ];
    case 'SemverGreaterThan':
      return [KIND_SEMVER, CMP_GT];
    case 'SemverGreaterThanOrEqual':
      return [KIND_SEMVER, CMP_GTE];
    case 'SemverLessThan':
      return [KIND_SEMVER, CMP_LT];
    case 'SemverLessThanOrEqual':
      return [KIND_SEMVER, CMP_LTE];
  }
}

function stringValues(values: unknown): string[] {
  if (!Array.isArray(values)) return [];
  const out: string[] = [];
  for (const v of values) if (typeof v === 'string') out.push(v);
  return out;
}

/** The typed operands of a condition: only the list its kind reads is non-empty. */
interface ConditionOperands {
  strings?: readonly string[];
  stringSet?: ReadonlySet<string>;
  numbers?: readonly number[];
  regexes?: readonly RE2JS[];
  semvers?: readonly SemVer[];
}

// Every compiled condition is built by this one object literal, so that all of them share one
// hidden class and the property reads in `conditionMatches` stay monomorphic. (Building them with
// object spread from several call sites gave almost every condition its own hidden class, which
// made matching several times slower once an environment held more than a handful of flags.)
function makeCondition(
  id: number,
  attribute: string,
  kind: number,
  comparison: number,
  noneOf: boolean,
  negate: boolean,
  operands: ConditionOperands,
): CompiledCondition {
  return {
    id,
    attribute,
    kind,
    comparison,
    noneOf,
    negate,
    strings: operands.strings ?? EMPTY_STRINGS,
    stringSet: operands.stringSet ?? EMPTY_SET,
    numbers: operands.numbers ?? EMPTY_NUMBERS,
    regexes: operands.regexes ?? EMPTY_REGEXES,
    semvers: operands.semvers ?? EMPTY_SEMVERS,
  };
}

/**
 * Compiles a condition. Never throws: an unknown operator compiles to a condition that never
 * matches (negated or not), and values that do not parse for the operator are dropped, since
 * they could never match anything. Write-time validation ({@link validateCondition}) keeps both
 * out of stored configuration.
 */
export function compileCondition(condition: SdkCondition): CompiledCondition {
  return compileNormalized(normalizeCondition(condition), -1);
}

/** A condition's fields as compilation reads them: what two conditions must share to be equal. */
interface NormalizedCondition {
  attribute: string;
  op: ConditionOperator | undefined;
  negate: boolean;
  values: readonly string[];
}

function normalizeCondition(condition: SdkCondition): NormalizedCondition {
  return {
    attribute: typeof condition.attribute === 'string' ? condition.attribute : '',
    op: typeof condition.operator === 'string' ? normalizeOperator(condition.operator) : undefined,
    negate: condition.negate === true,
    values: stringValues(condition.values),
  };
}

function compileNormalized(condition: NormalizedCondition, id: number): CompiledCondition {
  const { attribute, op, negate, values } = condition;
  if (op === undefined) return makeCondition(id, attribute, KIND_NEVER, CMP_EQ, false, negate, {});
  const [kind, comparison] = kindAndComparison(op);
  const noneOf = op === 'NotEquals' || op === 'NotContains' || op === 'NotIn';
  return makeCondition(id, attribute, kind, comparison, noneOf, negate, operandsFor(kind, values));
}

/**
 * The conditions of one environment, compiled once each: conditions with the same attribute,
 * operator, values and negation (common across flags and segments: "country in DE, FR", "plan
 * equals pro") become one compiled condition with its own {@link CompiledCondition.id}, so that an
 * evaluation can match each of them at most once per context.
 */
export class ConditionTable {
  private readonly byKey = new Map<string, CompiledCondition>();

  /** How many distinct conditions have been compiled; ids run from 0 to `size - 1`. */
  get size(): number {
    return this.byKey.size;
  }

  /** Compiles a condition, or returns the identical one compiled before. */
  compile(condition: SdkCondition): CompiledCondition {
    const normalized = normalizeCondition(condition);
    const key = JSON.stringify([
      normalized.attribute,
      normalized.op ?? null,
      normalized.negate,
      normalized.values,
    ]);
    let compiled = this.byKey.get(key);
    if (compiled === undefined) {
      compiled = compileNormalized(normalized, this.byKey.size);
      this.byKey.set(key, compiled);
    }
    return compiled;
  }
}

function operandsFor(kind: number, values: readonly string[]): ConditionOperands {
  switch (kind) {
    case KIND_EQUALS:
      return { stringSet: new Set(values) };
    case KIND_NUMBER:
    case KIND_INSTANT: {
      const parse = kind === KIND_NUMBER ? toNumber : toInstant;
      return { numbers: values.map((v) => parse(v)).filter((n) => !Number.isNaN(n)) };
    }
    case KIND_REGEX: {
      const regexes: RE2JS[] = [];
      for (const v of values) {
        const compiled = compileRegex(v);
        if (compiled.ok) regexes.push(compiled.regex);
      }
      return { regexes };
    }
    case KIND_SEMVER: {
      const semvers: SemVer[] = [];
      for (const v of values) {
        const parsed = parseSemver(v);
        if (parsed !== null) semvers.push(parsed);
      }
      return { semvers };
    }
    default:
      return { strings: values };
  }
}

function compare(actual: number, expected: number, comparison: number): boolean {
  switch (comparison) {
    case CMP_GT:
      return actual > expected;
    case CMP_GTE:
      return actual >= expected;
    case CMP_LT:
      return actual < expected;
    case CMP_LTE:
      return actual <= expected;
    default:
      return actual === expected;
  }
}

/** Usable attribute scalars: strings, finite numbers, booleans. */
function isScalar(value: unknown): value is string | number | boolean {
  const t = typeof value;
  return t === 'string' || t === 'boolean' || (t === 'number' && Number.isFinite(value));
}

/** Whether one scalar satisfies the positive form of the condition for any of its values. */
function scalarMatches(c: CompiledCondition, value: string | number | boolean): boolean {
  switch (c.kind) {
    case KIND_EQUALS:
      return c.stringSet.has(String(value));
    case KIND_CONTAINS: {
      const s = String(value);
      for (const v of c.strings) if (s.includes(v)) return true;
      return false;
    }
    case KIND_STARTS_WITH: {
      const s = String(value);
      for (const v of c.strings) if (s.startsWith(v)) return true;
      return false;
    }
    case KIND_ENDS_WITH: {
      const s = String(value);
      for (const v of c.strings) if (s.endsWith(v)) return true;
      return false;
    }
    case KIND_NUMBER:
    case KIND_INSTANT: {
      const n = c.kind === KIND_NUMBER ? toNumber(value) : toInstantMemoised(value);
      if (Number.isNaN(n)) return false;
      for (const v of c.numbers) if (compare(n, v, c.comparison)) return true;
      return false;
    }
    case KIND_REGEX: {
      const s = String(value);
      for (const r of c.regexes) if (r.test(s)) return true;
      return false;
    }
    case KIND_SEMVER: {
      if (typeof value !== 'string') return false;
      const version = parseSemverMemoised(value);
      if (version === null) return false;
      for (const v of c.semvers)
        if (compare(compareSemver(version, v), 0, c.comparison)) return true;
      return false;
    }
    default:
      return false;
  }
}

/**
 * Whether a context satisfies a condition.
 *
 * - A missing attribute (absent, `null`, or of an unusable type such as an object) satisfies no
 *   operator, the negative ones included; `negate` then inverts that, so it matches.
 * - An array attribute satisfies a positive operator when any of its scalar elements does, and a
 *   negative one (NotEquals, NotContains, NotIn) when none does.
 * - `negate` inverts the final result.
 */
export function conditionMatches(c: CompiledCondition, context: EvaluationContext): boolean {
  if (c.kind === KIND_NEVER) return false;
  const value = lookupAttribute(context, c.attribute);
  let found: boolean;
  if (isScalar(value)) {
    found = scalarMatches(c, value);
  } else if (Array.isArray(value)) {
    found = false;
    for (const element of value as unknown[]) {
      if (isScalar(element) && scalarMatches(c, element)) {
        found = true;
        break;
      }
    }
  } else {
    return c.negate;
  }
  return (c.noneOf ? !found : found) !== c.negate;
}

/** A condition as the management API receives it: every field may be missing or null. */
export interface ConditionInput {
  attribute?: string | null;
  operator?: string | null;
  values?: readonly unknown[] | null;
  negate?: boolean | null;
}

/**
 * Checks a condition before it is stored, so that nothing reaches the engine that would silently
 * never match.
 *
 * @returns human-readable problems, each starting with the field it is about (`attribute`,
 *   `operator`, `values` or `values[i]`); empty when the condition is valid.
 */
export function validateCondition(condition: ConditionInput): string[] {
  const problems: string[] = [];
  if (typeof condition.attribute !== 'string' || condition.attribute.trim() === '') {
    problems.push('attribute must not be empty');
  }
  let op: ConditionOperator | undefined;
  if (typeof condition.operator !== 'string' || condition.operator === '') {
    problems.push('operator is required');
  } else {
    op = normalizeOperator(condition.operator);
    if (op === undefined) {
      problems.push(
        `operator "${condition.operator}" is not a known operator; expected one of ${CONDITION_OPERATORS.join(', ')}`,
      );
    }
  }
  const values = condition.values;
  if (!Array.isArray(values) || values.length === 0) {
    problems.push('values must contain at least one value');
    return problems;
  }
  const family = op === undefined ? undefined : operatorFamily(op);
  values.forEach((value: unknown, i) => {
    if (typeof value !== 'string') {
      problems.push(`values[${i}] must be a string`);
      return;
    }
    const problem = family === undefined ? undefined : valueProblem(family, value);
    if (problem !== undefined) problems.push(`values[${i}] ${problem}`);
  });
  return problems;
}

function valueProblem(family: OperatorFamily, value: string): string | undefined {
  switch (family) {
    case 'number':
      return Number.isNaN(toNumber(value)) ? `"${value}" is not a number` : undefined;
    case 'instant':
      return Number.isNaN(toInstant(value))
        ? `"${value}" is not a date: use ISO 8601 (e.g. 2025-01-31 or 2025-01-31T12:00:00Z) or Unix milliseconds`
        : undefined;
    case 'semver':
      return parseSemver(value) === null
        ? `"${value}" is not a semantic version: use MAJOR.MINOR.PATCH (e.g. 1.4.0 or 2.0.0-beta.1)`
        : undefined;
    case 'regex': {
      const compiled = compileRegex(value);
      return compiled.ok
        ? undefined
        : `"${value}" is not a valid RE2 regular expression: ${compiled.problem}`;
    }
    default:
      return undefined;
  }
}
