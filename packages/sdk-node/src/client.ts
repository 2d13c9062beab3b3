import { EventEmitter } from 'node:events';
import {
  compileEnvironment,
  evaluateAll,
  evaluateFlag,
  type CompiledEnvironment,
  type EvaluationContext,
  type EvaluationErrorCode,
  type EvaluationReason,
  type EvaluationResult,
} from '@vexil/engine';
import { ConfigurationPoller } from './configuration-poller.js';
import { EventReporter, type TrackEvent } from './event-reporter.js';

/** Options of {@link createClient}. */
export interface VexilClientOptions {
  /** Where Vexil is reached, e.g. `https://flags.example.com` (no trailing `/v1`). */
  baseUrl: string;
  /** A server-side SDK key (`vxl_srv_…`) of the environment to evaluate. */
  sdkKey: string;
  /** Milliseconds between configuration checks (each is a conditional GET). Default 30 000. */
  pollIntervalMs?: number;
  /** Milliseconds between event flushes to `/v1/sdk/events`. Default 10 000. */
  flushIntervalMs?: number;
  /** Per-request time-out in milliseconds. Default 10 000. */
  requestTimeoutMs?: number;
  /** A `fetch` implementation; defaults to the global one. */
  fetch?: typeof fetch;
}

/**
 * Where the client stands:
 * - `initializing`: no configuration yet; every evaluation returns the caller's default;
 * - `ready`: the configuration is current as of the last check;
 * - `stale`: the last check failed; the last good configuration is served;
 * - `closed`: after {@link VexilClient.close}.
 */
export type ClientStatus = 'initializing' | 'ready' | 'stale' | 'closed';

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
}

/** Event names and their listener arguments. */
export interface ClientEvents {
  /** The first configuration arrived. */
  ready: [];
  /** A newer configuration replaced the one being served. */
  change: [{ version: number }];
  /** A download or event report failed; the client keeps serving what it has. */
  error: [Error];
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
 * A Vexil server SDK client. It downloads the environment configuration once, re-checks it every
 * `pollIntervalMs` (conditional GET; a 304 costs nothing), and evaluates flags locally with
 * `@vexil/engine`, so evaluations are synchronous and never wait on the network. Create it with
 * {@link createClient}; listen to `ready`, `change` and `error`; call {@link close} when done.
 */
export class VexilClient {
  private readonly emitter = new EventEmitter();
  private readonly poller: ConfigurationPoller;
  private readonly reporter: EventReporter;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly readyPromise: Promise<void>;
  private environment: CompiledEnvironment | null = null;
  private currentStatus: ClientStatus = 'initializing';
  private polling: Promise<void> = Promise.resolve();

  constructor(options: VexilClientOptions) {
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
    this.readyPromise = new Promise((resolve) => this.emitter.once('ready', resolve));
    this.polling = this.refresh();
    this.every(options.pollIntervalMs ?? 30_000, () => {
      this.polling = this.polling
        .then(() => this.refresh())
        .catch((error: unknown) => this.reportError(toError(error)));
    });
    this.every(options.flushIntervalMs ?? 10_000, () => void this.reporter.flush());
  }

  /** The client's status (see {@link ClientStatus}). */
  get status(): ClientStatus {
    return this.currentStatus;
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

  /** Subscribes to `ready`, `change` or `error`. Returns the client, for chaining. */
  on<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    this.emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /** Removes a listener added with {@link on}. */
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
    const flags: Record<string, unknown> = {};
    if (!this.environment) return flags;
    const results = evaluateAll(this.environment, context);
    for (const [key, result] of Object.entries(results)) {
      flags[key] = result.value;
      this.recordServed(result);
    }
    return flags;
  }

  /** Queues a custom event for `/v1/sdk/events`; sent with the next flush. Never blocks. */
  track(event: TrackEvent): void {
    if (this.currentStatus === 'closed') return;
    this.reporter.track(event, Date.now());
  }

  /**
   * Stops polling, sends the queued events and releases timers, so the process can exit.
   * Evaluations after `close` keep answering from the last configuration.
   */
  async close(): Promise<void> {
    if (this.currentStatus === 'closed') return;
    this.currentStatus = 'closed';
    for (const timer of this.timers) clearInterval(timer);
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
    const detail: EvaluationDetail<T> =
      result.variation === null
        ? { value: defaultValue, variation: null, reason: 'ERROR' }
        : check(result.value)
          ? { value: result.value, variation: result.variation, reason: result.reason }
          : { value: defaultValue, variation: null, reason: 'ERROR', errorCode: 'TYPE_MISMATCH' };
    if (result.errorCode) detail.errorCode = result.errorCode;
    if (result.prerequisiteKey) detail.prerequisiteKey = result.prerequisiteKey;
    if (result.ruleId) detail.ruleId = result.ruleId;
    if (detail.variation !== null) this.recordServed(result);
    return detail;
  }

  private recordServed(result: EvaluationResult): void {
    if (result.variation !== null && this.currentStatus !== 'closed')
      this.reporter.recordEvaluation(result.key, result.variation, Date.now());
  }

  private async refresh(): Promise<void> {
    if (this.currentStatus === 'closed') return;
    const outcome = await this.poller.fetchOnce();
    // close() may have run while the request was in flight.
    if (this.isClosed()) return;
    if (outcome.kind === 'failed') {
      if (this.environment) this.currentStatus = 'stale';
      this.reportError(outcome.error);
      return;
    }
    if (outcome.kind === 'unchanged') {
      this.currentStatus = 'ready';
      return;
    }
    let compiled: CompiledEnvironment;
    try {
      compiled = compileEnvironment(outcome.configuration);
    } catch (error) {
      // A document this engine cannot read must not replace the last good one.
      this.reportError(toError(error));
      return;
    }
    const first = this.environment === null;
    this.environment = compiled;
    this.currentStatus = 'ready';
    if (first) this.emitter.emit('ready');
    else this.emitter.emit('change', { version: compiled.version });
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
