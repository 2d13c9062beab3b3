import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { context, propagation, trace, type Span } from '@opentelemetry/api';
import {
  bucketingIdentity,
  evaluationEventAttributes,
  type EvaluationContext,
  type EvaluationResult,
} from '@vexil/engine';

/** `feature_flag.provider.name` of evaluations done by the server. */
const PROVIDER_NAME = 'Vexil';

/** What an evaluation event says about where it was evaluated. */
export interface EvaluationSource {
  /** `feature_flag.set.id`: the environment's id. */
  environmentId: string;
  /** `feature_flag.version`: the environment's configuration version. */
  version: number;
}

/** The hashed context id of an evaluation event: SHA-256 of the context's bucketing identity. */
function hashedContextId(evaluationContext: EvaluationContext): string | undefined {
  const identity = bucketingIdentity(evaluationContext, null);
  return identity === undefined ? undefined : createHash('sha256').update(identity).digest('hex');
}

/** Records sampled evaluations; see {@link evaluationEvents}. */
export interface EvaluationEvents {
  /**
   * Emits one `feature_flag.evaluation` event per result, for the share of calls the sample
   * ratio picks, on a `feature_flag.evaluation` span that continues the request's trace (its
   * `traceparent`, or the active span). `results` is called only for the sampled share.
   */
  record(
    headers: IncomingHttpHeaders | undefined,
    source: EvaluationSource,
    evaluationContext: EvaluationContext,
    results: () => Iterable<EvaluationResult>,
  ): void;
}

/**
 * Null unless evaluation events are on (`VEXIL_OTEL_EVALUATION_SAMPLE` above 0 with an OTLP
 * endpoint): the evaluation routes test it, one branch, before doing anything else.
 */
export let evaluationEvents: EvaluationEvents | null = null;

function sampledEvents(ratio: number): EvaluationEvents {
  const tracer = trace.getTracer('@vexil/server');
  return {
    record(headers, source, evaluationContext, results) {
      if (Math.random() >= ratio) return;
      const active = context.active();
      const parent =
        trace.getSpan(active) || !headers ? active : propagation.extract(active, headers);
      const span: Span = tracer.startSpan('feature_flag.evaluation', {}, parent);
      const contextId = hashedContextId(evaluationContext);
      for (const result of results())
        span.addEvent(
          'feature_flag.evaluation',
          evaluationEventAttributes(result, { providerName: PROVIDER_NAME, ...source }, contextId),
        );
      span.end();
    },
  };
}

/** Turns evaluation events on at `ratio` (0 to 1); 0 leaves them off. */
export function startEvaluationEvents(ratio: number): void {
  evaluationEvents = ratio > 0 ? sampledEvents(ratio) : null;
}

/** Turns evaluation events off. */
export function stopEvaluationEvents(): void {
  evaluationEvents = null;
}
