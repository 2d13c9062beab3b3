import { createHash } from 'node:crypto';
import type { EvaluationDetails, FlagValue, Hook, HookContext } from '@openfeature/server-sdk';
import type { ActiveSpanSource } from '@vexil/node';

/** Options of {@link EvaluationEventsHook}. */
export interface EvaluationEventsHookOptions {
  /** `trace` of `@opentelemetry/api` (an optional peer dependency of this package). */
  trace: ActiveSpanSource;
  /** `feature_flag.set.id`, e.g. the environment the SDK key belongs to. */
  setId?: string;
  /** Share of evaluations that emit an event, 0 to 1; default 1. */
  sample?: number;
}

/** `error.type` values of the conventions: OpenFeature's error codes in lowercase. */
const lower = (text: string) => text.toLowerCase();

/** A value as an event attribute: primitives as they are, objects and arrays as JSON text. */
const attributeValue = (value: FlagValue): string | number | boolean =>
  typeof value === 'object' ? JSON.stringify(value) : value;

/**
 * An OpenFeature hook that records each evaluation done in the application as a
 * `feature_flag.evaluation` event on the active OpenTelemetry span, in the semantic conventions'
 * names (`feature_flag.key`, `feature_flag.result.variant`, `feature_flag.result.value`,
 * `feature_flag.result.reason` in lowercase, `feature_flag.context.id` as the SHA-256 of the
 * targeting key, `feature_flag.provider.name`, `feature_flag.set.id`, `error.type`): the same
 * event Vexil emits for server-side evaluations (docs/operations.md). Without an active span,
 * nothing is recorded.
 *
 * ```ts
 * import { trace } from '@opentelemetry/api';
 * OpenFeature.addHooks(new EvaluationEventsHook({ trace, setId: 'production' }));
 * ```
 */
export class EvaluationEventsHook implements Hook {
  private readonly sample: number;
  constructor(private readonly options: EvaluationEventsHookOptions) {
    this.sample = options.sample ?? 1;
  }

  finally(hookContext: Readonly<HookContext>, details: EvaluationDetails<FlagValue>): void {
    if (this.sample < 1 && Math.random() >= this.sample) return;
    const span = this.options.trace.getActiveSpan();
    if (!span) return;
    const attributes: Record<string, string | number | boolean> = {
      'feature_flag.key': details.flagKey,
      'feature_flag.provider.name': hookContext.providerMetadata.name,
    };
    if (this.options.setId !== undefined) attributes['feature_flag.set.id'] = this.options.setId;
    const targetingKey = hookContext.context.targetingKey;
    if (typeof targetingKey === 'string')
      attributes['feature_flag.context.id'] = createHash('sha256')
        .update(targetingKey)
        .digest('hex');
    if (details.variant !== undefined) attributes['feature_flag.result.variant'] = details.variant;
    if (details.errorCode === undefined)
      attributes['feature_flag.result.value'] = attributeValue(details.value);
    if (details.reason !== undefined)
      attributes['feature_flag.result.reason'] = lower(details.reason);
    if (details.errorCode !== undefined) attributes['error.type'] = lower(details.errorCode);
    span.addEvent('feature_flag.evaluation', attributes);
  }
}
