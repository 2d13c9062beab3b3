import type { EvaluationReason, EvaluationResult } from './types.js';

/** The attributes of a `feature_flag.evaluation` event: OpenTelemetry attribute values. */
export type EvaluationEventAttributes = Record<string, string | number | boolean>;

/** Where an evaluation was done, as its event says it. */
export interface EvaluationEventSource {
  /** `feature_flag.provider.name`, e.g. `Vexil`. */
  providerName: string;
  /** `feature_flag.set.id`: the environment's id. */
  environmentId: string;
  /** `feature_flag.version`: the environment's configuration version. */
  version: number;
}

/**
 * The conventions' `feature_flag.result.reason` values (semantic conventions, feature flags):
 * lowercase, and an unmet prerequisite serves the off variation as a default, as over OFREP.
 */
const REASONS: Record<EvaluationReason, string> = {
  DISABLED: 'disabled',
  TARGETING_MATCH: 'targeting_match',
  SPLIT: 'split',
  DEFAULT: 'default',
  PREREQUISITE_FAILED: 'default',
  ERROR: 'error',
};

/** A result's value as an attribute: primitives as they are, objects and arrays as JSON text. */
function attributeValue(value: unknown): string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? value
    : JSON.stringify(value);
}

/**
 * The `feature_flag.evaluation` event of one result, in the OpenTelemetry semantic conventions'
 * names (Release Candidate, semantic-conventions PR #2277), as the server and `@vexil/node` both
 * write it (design record 055). `contextId` is the caller's hash of the context's bucketing
 * identity (never the identity itself), or undefined for a context without one. `error.type` is
 * OpenFeature's lowercase error code; the engine's own codes are `general`.
 */
export function evaluationEventAttributes(
  result: EvaluationResult,
  source: EvaluationEventSource,
  contextId: string | undefined,
): EvaluationEventAttributes {
  const attributes: EvaluationEventAttributes = {
    'feature_flag.key': result.key,
    'feature_flag.provider.name': source.providerName,
    'feature_flag.set.id': source.environmentId,
    'feature_flag.version': String(source.version),
    'feature_flag.result.reason': REASONS[result.reason],
  };
  if (contextId !== undefined) attributes['feature_flag.context.id'] = contextId;
  if (result.variation !== null) {
    attributes['feature_flag.result.variant'] = result.variation;
    attributes['feature_flag.result.value'] = attributeValue(result.value);
  }
  if (result.reason === 'ERROR')
    attributes['error.type'] = result.errorCode === 'FLAG_NOT_FOUND' ? 'flag_not_found' : 'general';
  return attributes;
}
