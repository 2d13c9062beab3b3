/**
 * The server-SDK environment configuration (spec: "Server-SDK environment configuration",
 * `GET /v1/sdk/flags`). This is the engine's input: the server serves it as-is, and SDKs that
 * evaluate locally feed the same document to the same engine.
 */

/** Flag value types (spec: Flag detail `type`). */
export type FlagType = 'Boolean' | 'String' | 'Number' | 'Json';

/** The twenty condition operators, in canonical casing (spec: "Condition operators"). */
export const CONDITION_OPERATORS = [
  'Equals',
  'NotEquals',
  'Contains',
  'NotContains',
  'GreaterThan',
  'LessThan',
  'GreaterThanOrEqual',
  'LessThanOrEqual',
  'In',
  'NotIn',
  'MatchesRegex',
  'StartsWith',
  'EndsWith',
  'Before',
  'After',
  'SemverEquals',
  'SemverGreaterThan',
  'SemverGreaterThanOrEqual',
  'SemverLessThan',
  'SemverLessThanOrEqual',
] as const;

export type ConditionOperator = (typeof CONDITION_OPERATORS)[number];

export type LogicalOperator = 'And' | 'Or';

/** One condition on a context attribute. `values` match if any entry matches (positive operators). */
export interface SdkCondition {
  attribute: string;
  operator: ConditionOperator;
  values: string[];
  negate?: boolean;
}

export interface SdkConditionGroup {
  operator: LogicalOperator;
  conditions: SdkCondition[];
}

/** A variation served by a flag. `value` is the typed value (boolean, string, number or JSON). */
export interface SdkVariation {
  key: string;
  value: unknown;
}

/**
 * What a rule or the fallthrough serves.
 * - `Fixed`: always `variation`.
 * - `Rollout`: the context's bucket (0–99 999, from `bucketBy` and `salt`) picks a variation by
 *   cumulative `weight` in thousandths of a percent (100 000 = 100%). Weights summing to less than
 *   100 000 leave the remaining buckets unserved: a rule then does not apply and evaluation goes on.
 */
export interface SdkServe {
  type: 'Fixed' | 'Rollout';
  variation?: string;
  bucketBy?: string;
  salt?: string;
  variations?: { key: string; weight: number }[];
}

export interface SdkRule {
  id: string;
  priority: number;
  conditionGroups: SdkConditionGroup[];
  serve: SdkServe;
  segmentKey?: string;
}

export interface SdkPrerequisite {
  prerequisiteFlagKey: string;
  expectedVariationKey: string;
}

/**
 * Flag metadata (OpenFeature's flag metadata): what the team recorded about the flag, for the
 * code that reads it. Evaluation never reads it.
 */
export type FlagMetadata = Readonly<Record<string, string | number | boolean>>;

export interface SdkFlag {
  key: string;
  version: number;
  type: FlagType;
  enabled: boolean;
  variations: SdkVariation[];
  rules: SdkRule[];
  fallthrough: SdkServe;
  offVariation: string;
  prerequisites: SdkPrerequisite[];
  /** The flag's metadata; absent when it has none. */
  metadata?: FlagMetadata;
}

export interface SdkSegment {
  key: string;
  version: number;
  conditions: SdkCondition[];
  conditionLogic: LogicalOperator;
}

export interface SdkConfiguration {
  environment: string | null;
  version: number;
  flags: SdkFlag[];
  segments: SdkSegment[];
}

/**
 * The evaluation context: a free-form map of attributes. The server SDK shape
 * `{ userId, attributes: {...} }` is accepted as-is: an attribute is looked up on the context
 * first, then inside `attributes`.
 */
export type EvaluationContext = Readonly<Record<string, unknown>>;

/** Reasons, aligned with OpenFeature's vocabulary. */
export type EvaluationReason =
  'DISABLED' | 'TARGETING_MATCH' | 'SPLIT' | 'DEFAULT' | 'PREREQUISITE_FAILED' | 'ERROR';

export type EvaluationErrorCode = 'FLAG_NOT_FOUND' | 'MALFORMED_FLAG' | 'PREREQUISITE_CYCLE';

/** The outcome of one evaluation. `variation` and `value` are null only when `reason` is `ERROR`. */
export interface EvaluationResult {
  key: string;
  value: unknown;
  variation: string | null;
  reason: EvaluationReason;
  prerequisiteKey?: string;
  ruleId?: string;
  errorCode?: EvaluationErrorCode;
}
