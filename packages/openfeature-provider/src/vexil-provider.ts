import {
  ErrorCode,
  OpenFeatureEventEmitter,
  ProviderEvents,
  StandardResolutionReasons,
  type EvaluationContext,
  type JsonValue,
  type Provider,
  type ResolutionDetails,
  type TrackingEventDetails,
} from '@openfeature/server-sdk';
import {
  createClient,
  type DetailErrorCode,
  type EvaluationDetail,
  type VexilClient,
  type VexilClientOptions,
} from '@vexil/node';

/**
 * Options of {@link VexilProvider}: either the options of a `@vexil/node` client the provider
 * creates (and closes in `onClose`), or a `client` you created and close yourself.
 */
export type VexilProviderOptions =
  | (VexilClientOptions & {
      /** How long `initialize` waits for the first configuration, in milliseconds. Default 10 000. */
      initTimeoutMs?: number;
    })
  | { client: VexilClient; initTimeoutMs?: number };

/** The SDK's error codes in OpenFeature's vocabulary. */
const ERROR_CODES: Record<DetailErrorCode, ErrorCode> = {
  CLIENT_NOT_READY: ErrorCode.PROVIDER_NOT_READY,
  FLAG_NOT_FOUND: ErrorCode.FLAG_NOT_FOUND,
  TYPE_MISMATCH: ErrorCode.TYPE_MISMATCH,
  MALFORMED_FLAG: ErrorCode.GENERAL,
  PREREQUISITE_CYCLE: ErrorCode.GENERAL,
};

/** OpenFeature object flags hold JSON objects or arrays, not scalars. */
const isJsonStructure = (value: unknown): boolean => typeof value === 'object' && value !== null;

/**
 * An OpenFeature server provider that evaluates Vexil flags locally with `@vexil/node` (the engine
 * Vexil itself runs), so resolutions are synchronous in-memory lookups after `initialize`.
 *
 * - **Context**: passed to the engine as-is; `targetingKey` is the bucketing identity unless the
 *   context also has `userId` or `key` (design record 009).
 * - **Reasons**: `TARGETING_MATCH` (with `flagMetadata.ruleId`), `SPLIT`, `DEFAULT`, `DISABLED`; a
 *   failed prerequisite is `DEFAULT` with `flagMetadata.prerequisiteKey`, as on OFREP.
 * - **Flag metadata**: the flag's metadata is returned in `flagMetadata`, with `ruleId` and
 *   `prerequisiteKey` winning over metadata keys of the same name, as on OFREP.
 * - **Errors** (the caller's default is returned): `PROVIDER_NOT_READY` (no configuration yet),
 *   `FLAG_NOT_FOUND`, `TYPE_MISMATCH` (the flag's value is not of the type asked for), `GENERAL`
 *   (a flag Vexil cannot serve: malformed, prerequisite cycle).
 * - **Events**: `PROVIDER_CONFIGURATION_CHANGED` on every new configuration, `PROVIDER_STALE`
 *   while Vexil cannot be reached (the last configuration is served), `PROVIDER_READY` when it
 *   is again (or when the first configuration arrives after `initialize` gave up).
 */
export class VexilProvider implements Provider {
  readonly metadata = { name: 'Vexil' } as const;
  readonly runsOn = 'server' as const;
  readonly events = new OpenFeatureEventEmitter();
  /** The `@vexil/node` client the provider reads from. */
  readonly client: VexilClient;
  private readonly ownsClient: boolean;
  private readonly initTimeoutMs: number;
  private wasStale = false;

  constructor(options: VexilProviderOptions) {
    this.initTimeoutMs = options.initTimeoutMs ?? 10_000;
    if ('client' in options) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      this.client = createClient(options);
      this.ownsClient = true;
    }
    this.client.on('ready', () => this.events.emit(ProviderEvents.Ready));
    this.client.on('change', () =>
      this.events.emit(ProviderEvents.ConfigurationChanged, { message: 'configuration changed' }),
    );
    this.client.on('status', (status) => {
      if (status === 'stale')
        this.events.emit(ProviderEvents.Stale, { message: 'Vexil unreachable' });
      // Back from stale; the first 'ready' is announced by the 'ready' event above.
      else if (status === 'ready' && this.wasStale) this.events.emit(ProviderEvents.Ready);
      this.wasStale = status === 'stale';
    });
  }

  /**
   * Waits for the first configuration, at most `initTimeoutMs`. Throws when it has not arrived
   * by then: OpenFeature marks the provider `ERROR` and serves defaults, and the provider emits
   * `PROVIDER_READY` once the configuration arrives.
   */
  async initialize(): Promise<void> {
    if (!(await this.client.waitForReady(this.initTimeoutMs)))
      throw new Error(`Vexil configuration not received within ${this.initTimeoutMs} ms`);
  }

  /** Closes the client the provider created (a client passed in is left to its owner). */
  async onClose(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  // Resolutions are synchronous lookups; OpenFeature's server interface asks for promises.
  resolveBooleanEvaluation(
    flagKey: string,
    defaultValue: boolean,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<boolean>> {
    return Promise.resolve(
      resolution(this.client.boolVariationDetail(flagKey, context, defaultValue)),
    );
  }

  resolveStringEvaluation(
    flagKey: string,
    defaultValue: string,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<string>> {
    return Promise.resolve(
      resolution(this.client.stringVariationDetail(flagKey, context, defaultValue)),
    );
  }

  resolveNumberEvaluation(
    flagKey: string,
    defaultValue: number,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<number>> {
    return Promise.resolve(
      resolution(this.client.numberVariationDetail(flagKey, context, defaultValue)),
    );
  }

  resolveObjectEvaluation<T extends JsonValue>(
    flagKey: string,
    defaultValue: T,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<T>> {
    const detail = this.client.jsonVariationDetail<T>(flagKey, context, defaultValue);
    if (detail.variation !== null && !isJsonStructure(detail.value)) {
      return Promise.resolve({
        value: defaultValue,
        reason: StandardResolutionReasons.ERROR,
        errorCode: ErrorCode.TYPE_MISMATCH,
        errorMessage: `flag "${flagKey}" is not an object`,
      });
    }
    return Promise.resolve(resolution(detail));
  }

  /** Sends an OpenFeature `track` call to Vexil as a custom event (`POST /v1/sdk/events`). */
  track(
    trackingEventName: string,
    context: EvaluationContext,
    details: TrackingEventDetails,
  ): void {
    const userId = context.userId ?? context.targetingKey;
    this.client.track({
      key: trackingEventName,
      ...(typeof userId === 'string' ? { userId } : {}),
      ...(Object.keys(details).length > 0 ? { metadata: { ...details } } : {}),
    });
  }
}

/** An SDK evaluation detail as OpenFeature resolution details. */
function resolution<T>(detail: EvaluationDetail<T>): ResolutionDetails<T> {
  if (detail.errorCode && detail.variation === null) {
    return {
      value: detail.value,
      reason: StandardResolutionReasons.ERROR,
      errorCode: ERROR_CODES[detail.errorCode],
      errorMessage: detail.errorCode,
    };
  }
  // The flag's metadata, then the evaluation's keys, which win on a clash (as over OFREP).
  const flagMetadata: Record<string, string | number | boolean> = { ...detail.metadata };
  if (detail.ruleId) flagMetadata.ruleId = detail.ruleId;
  if (detail.prerequisiteKey) flagMetadata.prerequisiteKey = detail.prerequisiteKey;
  return {
    value: detail.value,
    ...(detail.variation !== null ? { variant: detail.variation } : {}),
    // The off variation served for an unmet prerequisite is a pre-configured fallback: DEFAULT.
    reason: detail.reason === 'PREREQUISITE_FAILED' ? 'DEFAULT' : detail.reason,
    flagMetadata,
  };
}
