import { EventEmitter } from 'node:events';
import {
  bucketingIdentity,
  compileEnvironment,
  evaluateAll,
  evaluateFlag,
  flagMetadata,
  type CompiledEnvironment,
  type EvaluationContext,
  type EvaluationErrorCode,
  type EvaluationReason,
  type EvaluationResult,
  type FlagMetadata,
  type SdkConfiguration,
} from '@vexil/engine';
import { PatchBatch, type PatchEvent } from './configuration-patches.js';
import { ConfigurationPoller } from './configuration-poller.js';
import {
  evaluationEventRecorder,
  type EvaluationEventRecorder,
  type EvaluationEventsOptions,
} from './evaluation-events.js';
import { ConfigurationStream, StreamRefusedError } from './configuration-stream.js';
import { EventReporter, type TrackEvent } from './event-reporter.js';

/** Options of {@link createClient}. */
export interface VexilClientOptions {
  /** Where Vexil is reached, e.g. `https://flags.example.com` (no trailing `/v1`). */
  baseUrl: string;
  /** A server-side SDK key (`vxl_srv_…`) of the environment to evaluate. */
  sdkKey: string;
  /**
   * Hold the `GET /v1/sdk/stream` connection (Server-Sent Events) so changes arrive within
   * moments. While it is down or missing (404), the client polls and retries the stream with
   * backoff. Default true. A streaming client keeps the process alive until {@link VexilClient.close}.
   */
  streaming?: boolean;
  /**
   * Milliseconds between configuration checks (each is a conditional GET). Default 30 000. With
   * streaming they only run while the stream is not connected.
   */
  pollIntervalMs?: number;
  /** First delay before re-opening a failed stream, in milliseconds; doubles up to `streamRetryMaxMs`. Default 1 000. */
  streamRetryMs?: number;
  /** Longest delay between attempts to re-open the stream, in milliseconds. Default 30 000. */
  streamRetryMaxMs?: number;
  /**
   * Milliseconds without a byte on the stream after which it is considered dead and re-opened.
   * Vexil sends a heartbeat every 15 s by default. Default 45 000.
   */
  streamIdleTimeoutMs?: number;
  /** Milliseconds between event flushes to `/v1/sdk/events`. Default 10 000. */
  flushIntervalMs?: number;
  /** Per-request time-out in milliseconds. Default 10 000. */
  requestTimeoutMs?: number;
  /** The `fetch` used for downloads and event reports; defaults to the global one. (The stream uses `node:http`/`node:https`.) */
  fetch?: typeof fetch;
  /**
   * Writes each evaluation as an OpenTelemetry `feature_flag.evaluation` event on the active span,
   * in the semantic conventions' names, as Vexil does for the evaluations it serves
   * (docs/operations.md). Off unless given: `{ trace }` with `trace` of `@opentelemetry/api`.
   */
  evaluationEvents?: EvaluationEventsOptions;
}

/**
 * Where the client stands:
 * - `initializing`: no configuration yet; every evaluation returns the caller's default;
 * - `ready`: the configuration is current as of the last check;
 * - `stale`: the last check failed; the last good configuration is served;
 * - `closed`: after {@link VexilClient.close}.
 */
export type ClientStatus = 'initializing' | 'ready' | 'stale' | 'closed';

/**
 * How configuration changes reach the client: `streaming` (the SSE stream is connected and
 * pushes every change) or `polling` (no stream: disabled, not yet connected, missing or failed).
 */
export type ClientConnection = 'streaming' | 'polling';

/** Why a default was returned instead of a served value. */
export type DetailErrorCode = EvaluationErrorCode | 'CLIENT_NOT_READY' | 'TYPE_MISMATCH';

/** The outcome of an evaluation, with the reason it was served. */
export interface EvaluationDetail<T> {
  /** The served value, or the caller's default when `errorCode` is set. */
  value: T;
  /** The served variation key; null when the default was returned. */
  variation: string | null;
  reason: EvaluationReason;
  errorCode?: DetailErrorCode;
  /** The prerequisite that was not met (reason `PREREQUISITE_FAILED`) or could not be evaluated. */
  prerequisiteKey?: string;
  /** The rule that matched (reason `TARGETING_MATCH`). */
  ruleId?: string;
  /** The flag's metadata (frozen), when it has some and a variation was served. */
  metadata?: FlagMetadata;
}

/** Event names and their listener arguments. */
export interface ClientEvents {
  /** The first configuration arrived. */
  ready: [];
  /** A newer configuration replaced the one being served. */
  change: [{ version: number }];
  /** A download, the stream or an event report failed; the client keeps serving what it has. */
  error: [Error];
  /** {@link VexilClient.status} changed. */
  status: [ClientStatus];
  /** {@link VexilClient.connection} changed. */
  connection: [ClientConnection];
}

type ValueCheck<T> = (value: unknown) => value is T;
const isBoolean = (value: unknown): value is boolean => typeof value === 'boolean';
const isString = (value: unknown): value is string => typeof value === 'string';
const isNumber = (value: unknown): value is number => typeof value === 'number';
const isAnything = (value: unknown): value is unknown => value !== undefined;

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * A Vexil server SDK client. It downloads the environment configuration once, then follows it
 * through the SSE stream (or, while the stream is unavailable, re-checks it every
 * `pollIntervalMs` with a conditional GET), and evaluates flags locally with `@vexil/engine`, so
 * evaluations are synchronous and never wait on the network. Create it with
 * {@link createClient}; listen to `ready`, `change`, `status`, `connection` and `error`; call
 * {@link close} when done.
 */
export class VexilClient {
  private readonly emitter = new EventEmitter();
  private readonly poller: ConfigurationPoller;
  private readonly stream: ConfigurationStream | null;
  private readonly reporter: EventReporter;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly readyPromise: Promise<void>;
  private environment: CompiledEnvironment | null = null;
  /** The configuration {@link environment} was compiled from: stream patches apply to it. */
  private configuration: SdkConfiguration | null = null;
  /** The patches of a change still arriving (see {@link PatchBatch}). */
  private patches: PatchBatch | null = null;
  private currentStatus: ClientStatus = 'initializing';
  private currentConnection: ClientConnection = 'polling';
  private polling: Promise<void> = Promise.resolve();
  private readonly recordEvent: EvaluationEventRecorder | null;

  constructor(options: VexilClientOptions) {
    this.recordEvent = options.evaluationEvents
      ? evaluationEventRecorder(options.evaluationEvents)
      : null;
    const baseUrl = options.baseUrl.replace(/\/+$/, '');
    const fetchImpl = options.fetch ?? globalThis.fetch;
    const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    const onError = (error: Error) => this.reportError(error);
    this.poller = new ConfigurationPoller({
      baseUrl,
      sdkKey: options.sdkKey,
      requestTimeoutMs,
      fetch: fetchImpl,
    });
    this.reporter = new EventReporter({
      baseUrl,
      sdkKey: options.sdkKey,
      requestTimeoutMs,
      fetch: fetchImpl,
      onError,
    });
    this.stream =
      options.streaming === false
        ? null
        : new ConfigurationStream({
            baseUrl,
            sdkKey: options.sdkKey,
            retryInitialMs: options.streamRetryMs ?? 1_000,
            retryMaxMs: options.streamRetryMaxMs ?? 30_000,
            idleTimeoutMs: options.streamIdleTimeoutMs ?? 45_000,
            currentVersion: () => this.environment?.version,
            onConnected: () => this.streamConnected(),
            onPut: (data) => this.streamPut(data),
            onPatch: (patch, version) => this.streamPatch(patch, version),
            onDisconnected: (error, wasConnected) => this.streamDisconnected(error, wasConnected),
          });
    this.readyPromise = new Promise((resolve) => this.emitter.once('ready', resolve));
    // The stream opens after the first download, resuming from its version: no second download.
    this.polling = this.refresh().then(() => this.stream?.start());
    this.every(options.pollIntervalMs ?? 30_000, () => {
      if (this.currentConnection === 'streaming') return;
      this.polling = this.polling
        .then(() => this.refresh())
        .catch((error: unknown) => this.reportError(toError(error)));
    });
    this.every(options.flushIntervalMs ?? 10_000, () => void this.reporter.flush());
  }

  /** The client's status (see {@link ClientStatus}); changes are announced by the `status` event. */
  get status(): ClientStatus {
    return this.currentStatus;
  }

  /** How changes currently arrive (see {@link ClientConnection}); announced by the `connection` event. */
  get connection(): ClientConnection {
    return this.currentConnection;
  }

  /**
   * Resolves once the first configuration has arrived. Never rejects: while Vexil cannot be
   * reached it stays pending (pass `timeoutMs` to stop waiting; it then resolves `false`).
   */
  async waitForReady(timeoutMs?: number): Promise<boolean> {
    if (this.environment) return true;
    if (timeoutMs === undefined) return this.readyPromise.then(() => true);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([this.readyPromise.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Subscribes to an event of {@link ClientEvents}. Returns the client, for chaining. */
  on<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    this.emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /** Like {@link on}, for the next occurrence only. */
  once<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    this.emitter.once(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /** Removes a listener added with {@link on} or {@link once}. */
  off<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    this.emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /** A boolean flag's value for `context`, or `defaultValue` (see {@link boolVariationDetail}). */
  boolVariation(key: string, context: EvaluationContext, defaultValue: boolean): boolean {
    return this.boolVariationDetail(key, context, defaultValue).value;
  }

  /** A string flag's value for `context`, or `defaultValue`. */
  stringVariation(key: string, context: EvaluationContext, defaultValue: string): string {
    return this.stringVariationDetail(key, context, defaultValue).value;
  }

  /** A number flag's value for `context`, or `defaultValue`. */
  numberVariation(key: string, context: EvaluationContext, defaultValue: number): number {
    return this.numberVariationDetail(key, context, defaultValue).value;
  }

  /** A JSON flag's value for `context` (any JSON value; not checked against `T`), or `defaultValue`. */
  jsonVariation<T = unknown>(key: string, context: EvaluationContext, defaultValue: T): T {
    return this.jsonVariationDetail(key, context, defaultValue).value;
  }

  /**
   * Evaluates a boolean flag. The default is returned, with `errorCode` set, when the client has
   * no configuration yet (`CLIENT_NOT_READY`), the flag does not exist (`FLAG_NOT_FOUND`), its
   * value is not a boolean (`TYPE_MISMATCH`) or it cannot be served (`MALFORMED_FLAG`,
   * `PREREQUISITE_CYCLE`).
   */
  boolVariationDetail(
    key: string,
    context: EvaluationContext,
    defaultValue: boolean,
  ): EvaluationDetail<boolean> {
    return this.detail(key, context, defaultValue, isBoolean);
  }

  /** Evaluates a string flag; errors as for {@link boolVariationDetail}. */
  stringVariationDetail(
    key: string,
    context: EvaluationContext,
    defaultValue: string,
  ): EvaluationDetail<string> {
    return this.detail(key, context, defaultValue, isString);
  }

  /** Evaluates a number flag; errors as for {@link boolVariationDetail}. */
  numberVariationDetail(
    key: string,
    context: EvaluationContext,
    defaultValue: number,
  ): EvaluationDetail<number> {
    return this.detail(key, context, defaultValue, isNumber);
  }

  /** Evaluates a flag of any type, typically JSON; errors as for {@link boolVariationDetail}. */
  jsonVariationDetail<T = unknown>(
    key: string,
    context: EvaluationContext,
    defaultValue: T,
  ): EvaluationDetail<T> {
    return this.detail(key, context, defaultValue, isAnything as ValueCheck<T>);
  }

  /**
   * Every flag of the environment evaluated for `context`, by key (values only; a flag that
   * cannot be served maps to null). Empty until the client is ready.
   */
  allFlags(context: EvaluationContext): Record<string, unknown> {
    if (!this.environment) return {};
    const results = Object.entries(evaluateAll(this.environment, context));
    for (const [, result] of results) {
      this.recordServed(result, context);
      this.recordEvent?.(this.environment, result, context);
    }
    // fromEntries defines own members: a flag keyed `__proto__` stays a key, not the prototype.
    return Object.fromEntries(results.map(([key, result]) => [key, result.value]));
  }

  /** Queues a custom event for `/v1/sdk/events`; sent with the next flush. Never blocks. */
  track(event: TrackEvent): void {
    if (this.currentStatus === 'closed') return;
    this.reporter.track(event, Date.now());
  }

  /**
   * Closes the stream (its request is aborted, so the server's own shutdown is not held up),
   * stops polling, sends the queued events and releases timers, so the process can exit.
   * Evaluations after `close` keep answering from the last configuration.
   */
  async close(): Promise<void> {
    if (this.currentStatus === 'closed') return;
    this.setStatus('closed');
    for (const timer of this.timers) clearInterval(timer);
    await this.stream?.close();
    // The request in flight is awaited, not aborted: an aborted fetch can leave a half-open
    // connection that holds up the server's shutdown. It is bounded by requestTimeoutMs.
    await this.polling;
    await this.reporter.flush();
    this.emitter.removeAllListeners();
  }

  private detail<T>(
    key: string,
    context: EvaluationContext,
    defaultValue: T,
    check: ValueCheck<T>,
  ): EvaluationDetail<T> {
    if (!this.environment) {
      return {
        value: defaultValue,
        variation: null,
        reason: 'ERROR',
        errorCode: 'CLIENT_NOT_READY',
      };
    }
    const result = evaluateFlag(this.environment, key, context);
    this.recordEvent?.(this.environment, result, context);
    const detail: EvaluationDetail<T> =
      result.variation === null
        ? { value: defaultValue, variation: null, reason: 'ERROR' }
        : check(result.value)
          ? { value: result.value, variation: result.variation, reason: result.reason }
          : { value: defaultValue, variation: null, reason: 'ERROR', errorCode: 'TYPE_MISMATCH' };
    if (result.errorCode) detail.errorCode = result.errorCode;
    if (result.prerequisiteKey) detail.prerequisiteKey = result.prerequisiteKey;
    if (result.ruleId) detail.ruleId = result.ruleId;
    if (detail.variation !== null) {
      const metadata = flagMetadata(this.environment, key);
      if (metadata && Object.keys(metadata).length > 0) detail.metadata = metadata;
      this.recordServed(result, context);
    }
    return detail;
  }

  /**
   * Notes what `context` was served, naming its user as the server does for its own evaluations
   * (`userId`, else `key`, else `targetingKey`: the identity rollouts bucket by).
   */
  private recordServed(result: EvaluationResult, context: EvaluationContext): void {
    if (result.variation === null || this.currentStatus === 'closed') return;
    this.reporter.recordEvaluation(
      result.key,
      result.variation,
      Date.now(),
      bucketingIdentity(context, null),
      result.reason,
    );
  }

  private async refresh(): Promise<void> {
    if (this.currentStatus === 'closed') return;
    const outcome = await this.poller.fetchOnce();
    // close() may have run while the request was in flight.
    if (this.isClosed()) return;
    if (outcome.kind === 'failed') {
      if (this.environment) this.setStatus('stale');
      this.reportError(outcome.error);
      return;
    }
    if (outcome.kind === 'unchanged') {
      this.setStatus('ready');
      return;
    }
    this.apply(outcome.configuration);
  }

  /** Replaces the configuration served, unless the engine cannot read it. */
  private apply(configuration: SdkConfiguration): void {
    let compiled: CompiledEnvironment;
    try {
      compiled = compileEnvironment(configuration);
    } catch (error) {
      // A document this engine cannot read must not replace the last good one.
      this.reportError(toError(error));
      return;
    }
    const first = this.environment === null;
    this.environment = compiled;
    this.configuration = configuration;
    this.setStatus('ready');
    if (first) this.emitter.emit('ready');
    else this.emitter.emit('change', { version: compiled.version });
  }

  private streamConnected(): void {
    if (this.isClosed()) return;
    // The stream resumes from the version held: a change cut off before its end comes again.
    this.patches = null;
    this.setConnection('streaming');
    // The stream resumed from the version held: from now on it is current.
    if (this.environment) this.setStatus('ready');
  }

  private streamPut(data: string): void {
    if (this.isClosed()) return;
    let configuration: SdkConfiguration;
    try {
      configuration = JSON.parse(data) as SdkConfiguration;
    } catch (error) {
      this.reportError(toError(error));
      return;
    }
    // On reconnection the stream may repeat the version already held.
    if (configuration.version === this.environment?.version) return;
    this.apply(configuration);
  }

  private streamPatch(patch: PatchEvent, version: number | undefined): void {
    if (this.isClosed()) return;
    try {
      // The server sends patches only after the configuration they apply to.
      if (!this.configuration) throw new Error(`a stream ${patch.event} before any configuration`);
      this.patches ??= new PatchBatch();
      this.patches.add(patch);
    } catch (error) {
      this.patches = null;
      this.reportError(toError(error));
      // A change not applied would be missed until the next one: download the configuration.
      this.polling = this.polling
        .then(() => this.refresh())
        .catch((failure: unknown) => this.reportError(toError(failure)));
      return;
    }
    if (version === undefined) return;
    const { patches } = this;
    this.patches = null;
    // A poll may have brought this version already, while the stream was resuming from before it.
    if (version <= this.configuration.version) return;
    this.apply(patches.apply(this.configuration, version));
  }

  private streamDisconnected(error: Error, wasConnected: boolean): void {
    if (this.isClosed()) return;
    this.setConnection('polling');
    // A server without streaming is a normal set-up, not a failure: polling covers it.
    if (!(error instanceof StreamRefusedError && error.status === 404)) this.reportError(error);
    // Changes may have been missed while the stream was dying: check at once, not a poll later.
    if (wasConnected) {
      this.polling = this.polling
        .then(() => this.refresh())
        .catch((failure: unknown) => this.reportError(toError(failure)));
    }
  }

  private setStatus(status: ClientStatus): void {
    if (status === this.currentStatus) return;
    this.currentStatus = status;
    this.emitter.emit('status', status);
  }

  private setConnection(connection: ClientConnection): void {
    if (connection === this.currentConnection) return;
    this.currentConnection = connection;
    this.emitter.emit('connection', connection);
  }

  private isClosed(): boolean {
    return this.currentStatus === 'closed';
  }

  private reportError(error: Error): void {
    // An EventEmitter throws on an 'error' nobody listens to; a flag SDK must not crash its host.
    if (this.emitter.listenerCount('error') > 0) this.emitter.emit('error', error);
  }

  private every(intervalMs: number, task: () => void): void {
    const timer = setInterval(task, intervalMs);
    // Polling alone must not keep the process alive.
    timer.unref();
    this.timers.push(timer);
  }
}

/**
 * Creates a client and starts downloading the configuration in the background. Evaluations
 * return the caller's defaults until it arrives; `await client.waitForReady()` to wait for it.
 *
 * @example
 * const client = createClient({ baseUrl: 'http://localhost:8080', sdkKey: process.env.VEXIL_SDK_KEY! });
 * await client.waitForReady();
 * client.boolVariation('new-checkout', { userId: 'u1', attributes: { plan: 'pro' } }, false);
 */
export function createClient(options: VexilClientOptions): VexilClient {
  return new VexilClient(options);
}
