import { createHash } from 'node:crypto';
import {
  bucketingIdentity,
  evaluationEventAttributes,
  type CompiledEnvironment,
  type EvaluationContext,
  type EvaluationEventAttributes,
  type EvaluationResult,
} from '@vexil/engine';

/** The part of `@opentelemetry/api`'s span an evaluation event is written to. */
export interface EventSpan {
  addEvent(name: string, attributes: EvaluationEventAttributes): unknown;
}

/** What evaluation events need from `@opentelemetry/api`: its `trace`. */
export interface ActiveSpanSource {
  getActiveSpan(): EventSpan | undefined;
}

/** The `evaluationEvents` option of `createClient` (design record 055). */
export interface EvaluationEventsOptions {
  /** `trace` of `@opentelemetry/api` (`import { trace } from '@opentelemetry/api'`). */
  trace: ActiveSpanSource;
  /** Share of evaluations that emit an event, 0 to 1; default 1. */
  sample?: number;
  /** `feature_flag.set.id`; default the key of the SDK key's environment. */
  setId?: string;
}

/** Records one evaluation as an event, or not (outside the sample, or without an active span). */
export type EvaluationEventRecorder = (
  environment: CompiledEnvironment,
  result: EvaluationResult,
  context: EvaluationContext,
) => void;

/**
 * Writes each evaluation as a `feature_flag.evaluation` event on the active OpenTelemetry span,
 * with the attributes the server gives its own evaluations (`evaluationEventAttributes` of
 * `@vexil/engine`): the context id is the SHA-256 of the context's bucketing identity.
 */
export function evaluationEventRecorder(options: EvaluationEventsOptions): EvaluationEventRecorder {
  const sample = options.sample ?? 1;
  return (environment, result, context) => {
    if (sample < 1 && Math.random() >= sample) return;
    const span = options.trace.getActiveSpan();
    if (!span) return;
    const identity = bucketingIdentity(context, null);
    const source = {
      providerName: 'Vexil',
      environmentId: options.setId ?? environment.environment ?? '',
      version: environment.version,
    };
    const contextId =
      identity === undefined ? undefined : createHash('sha256').update(identity).digest('hex');
    span.addEvent('feature_flag.evaluation', evaluationEventAttributes(result, source, contextId));
  };
}
