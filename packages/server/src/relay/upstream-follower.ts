import type { ValidateFunction } from 'ajv';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { schemaCompiler } from '../http/schema-validator.js';
import { traceFeedEvent } from '../telemetry/relay-sync.js';
import {
  RELAY_FEED_PATH,
  RELAY_KEEP_ALIVE_MS,
  RELAY_PROTOCOL_VERSION,
  RelayEnvironmentEvent,
  RelayHelloEvent,
  RelayKeysEvent,
  RelayPatchEvent,
  RelayRemovedEvent,
} from '../relay-feed/protocol.js';
import type { UpstreamSource } from './upstream-source.js';

/** Why a relay is not following its upstream right now; null while it follows. */
export interface UpstreamProblem {
  kind:
    | 'unreachable'
    /** The relay key was refused at connect (401): wrong, or revoked while the relay was away. */
    | 'keyRefused'
    /** The upstream revoked the relay key while the relay followed it. */
    | 'revoked'
    /** The upstream answered something that is not the relay protocol this relay speaks. */
    | 'incompatible';
  /** In words, for logs, `/healthz` and the CLI. */
  detail: string;
  /** Since when (epoch ms). */
  sinceMs: number;
}

/** How a follower reconnects. */
export interface FollowOptions {
  /** The upstream's base address, e.g. `https://flags.example.com`. */
  upstreamUrl: string;
  /** `vxr_…`. */
  relayKey: string;
  source: UpstreamSource;
  log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** Stamps the last contact and when a problem began. */
  clock: Clock;
  /** First delay before reconnecting (ms); doubled after each failure up to {@link maxBackoffMs}. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A stream silent this long (no event, no keep-alive) is taken for dead and replaced (ms). */
  stallMs?: number;
}

const compile = schemaCompiler({ coerceTypes: false, useDefaults: false });

/** The feed's events this relay acts on, and how each is checked. */
const EVENT_SCHEMAS: Record<string, ValidateFunction> = {
  hello: compile(RelayHelloEvent),
  environment: compile(RelayEnvironmentEvent),
  patch: compile(RelayPatchEvent),
  keys: compile(RelayKeysEvent),
  removed: compile(RelayRemovedEvent),
};

/** The feed said something this relay cannot take: the stream is dropped, the data kept. */
class IncompatibleUpstream extends Error {}

/**
 * Follows an upstream's `POST /v1/relay/feed` (relay protocol, design records 044 and 045): one
 * stream at a time, resumed after any loss with `known` = what the relay holds, reconnected with
 * exponential back-off (with jitter) for as long as the relay runs. Every event is checked against
 * the protocol's schemas before it is applied; a stream that says anything else is dropped and
 * the last good data kept. Never throws: what goes wrong is logged and kept in {@link problem}.
 */
export class UpstreamFollower {
  private stopped = false;
  private current: AbortController | undefined;
  private wakeUp: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private problemNow: UpstreamProblem | null = null;
  private lastContactMs: number | undefined;
  private followedOnce = false;
  private settleFirst: ((problem: UpstreamProblem | null) => void) | undefined;
  private readonly firstOutcome: Promise<UpstreamProblem | null>;
  /** The upstream identity its `hello` named: what the relay passes on to its own downstream. */
  upstreamId: string | undefined;
  /** The relay key's id, as the upstream's `hello` named it. */
  relayKeyId: string | undefined;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly stallMs: number;
  private readonly revokedListeners = new Set<() => void>();

  constructor(private readonly options: FollowOptions) {
    this.initialBackoffMs = options.initialBackoffMs ?? 250;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.stallMs = options.stallMs ?? 3 * RELAY_KEEP_ALIVE_MS;
    this.firstOutcome = new Promise((resolve) => {
      this.settleFirst = resolve;
    });
  }

  /** Starts following; returns at once. */
  start(): void {
    this.running ??= this.run();
  }

  /**
   * The outcome of the first connection: null once the upstream has sent its initial set
   * (`ready`), or the first problem met. Later attempts go on in the background either way.
   */
  firstConnection(): Promise<UpstreamProblem | null> {
    return this.firstOutcome;
  }

  /** Whether the relay follows its upstream now, caught up with it. */
  following(): boolean {
    return this.problemNow === null && this.followedOnce;
  }

  /** Why the relay does not follow its upstream now; null while it does (or still connects). */
  problem(): UpstreamProblem | null {
    return this.problemNow;
  }

  /**
   * How old the relay's data may be (ms): 0 while it follows the upstream, else the time since it
   * last heard from it (undefined when it never has: data from copies on disk only).
   */
  dataAgeMs(nowMs: number): number | undefined {
    if (this.problemNow === null && this.followedOnce) return 0;
    return this.lastContactMs === undefined ? undefined : nowMs - this.lastContactMs;
  }

  /** Calls `listener` when the upstream revokes the relay key (its downstream feeds close too). */
  onRevoked(listener: () => void): () => void {
    this.revokedListeners.add(listener);
    return () => this.revokedListeners.delete(listener);
  }

  /** Stops following and closes the stream. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.abort();
    this.wakeUp?.();
    await this.running;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      const caughtUp = await this.followOnce();
      if (this.isStopped()) break;
      failures = caughtUp ? 1 : failures + 1;
      const ceiling = Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** (failures - 1));
      await this.sleep(ceiling / 2 + Math.random() * (ceiling / 2));
    }
  }

  /** Read through a call: `stop()` sets it while the loop awaits. */
  private isStopped(): boolean {
    return this.stopped;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** One stream, from connect to its end; true when it had caught up (`ready`). */
  private async followOnce(): Promise<boolean> {
    const controller = new AbortController();
    this.current = controller;
    const { upstreamUrl, relayKey, source } = this.options;
    const url = new URL(`/v1${RELAY_FEED_PATH}`, upstreamUrl);
    let response: Response;
    // Only the answer's headers are timed: the stream itself lives as long as it is not silent.
    const connecting = setTimeout(() => controller.abort(), this.stallMs);
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${relayKey}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ known: source.known(), patches: true }),
        signal: controller.signal,
      });
    } catch (error) {
      this.fail('unreachable', `${url.origin} cannot be reached: ${describe(error)}`);
      return false;
    } finally {
      clearTimeout(connecting);
    }
    if (response.status === 401) {
      const detail = await problemDetail(response);
      if (this.followedOnce) this.fail('revoked', `the upstream refuses the relay key: ${detail}`);
      else this.fail('keyRefused', `the upstream refuses VEXIL_RELAY_KEY: ${detail}`);
      return false;
    }
    if (!response.ok || !/^text\/event-stream/i.test(response.headers.get('content-type') ?? '')) {
      const detail = await problemDetail(response);
      await response.body?.cancel().catch(() => undefined);
      if (response.status >= 500 && response.status !== 501)
        this.fail('unreachable', `the upstream answered ${response.status}: ${detail}`);
      else
        this.fail(
          'incompatible',
          `${url.href} is not a Vexil relay feed (answered ${response.status} ` +
            `${response.headers.get('content-type') ?? 'without a content type'}): is --upstream ` +
            `the address of a Vexil node of this version?`,
        );
      return false;
    }
    return this.read(response, controller);
  }

  /** Reads the stream's events in order until it ends; true when it had caught up. */
  private async read(response: Response, controller: AbortController): Promise<boolean> {
    let caughtUp = false;
    let failure: Error | undefined;
    let applying: Promise<void> = Promise.resolve();
    let stall = setTimeout(() => controller.abort(), this.stallMs);
    const parser = createParser({
      onEvent: (message) => {
        applying = applying.then(async () => {
          if (failure) return;
          try {
            if ((await traceFeedEvent(message, () => this.apply(message))) === 'ready')
              caughtUp = true;
          } catch (error) {
            failure = error as Error;
            controller.abort();
          }
        });
      },
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        clearTimeout(stall);
        this.lastContactMs = this.options.clock.now().getTime();
        parser.feed(decoder.decode(chunk, { stream: true }));
        // Read on once what arrived is applied: an initial set of large environments is then
        // parsed one at a time rather than all held as text at once (design record 049).
        await applying;
        // Silence is timed from here: applying is the relay's own time, not the upstream's.
        stall = setTimeout(() => controller.abort(), this.stallMs);
      }
    } catch {
      // Aborted (stalled, stopped, or a bad event), or the connection was lost: see below.
    }
    clearTimeout(stall);
    await applying;
    if (this.stopped) return caughtUp;
    if (failure instanceof IncompatibleUpstream) this.fail('incompatible', failure.message);
    else if (failure)
      this.fail('incompatible', `an event could not be applied: ${failure.message}`);
    else if (this.problemNow?.kind !== 'revoked')
      this.fail('unreachable', 'the feed ended; resuming');
    return caughtUp;
  }

  /** Applies one feed event; says `ready` when the relay has caught up. */
  private async apply(message: EventSourceMessage): Promise<'ready' | undefined> {
    const { source, log } = this.options;
    const event = message.event ?? 'message';
    if (event === 'ready') {
      await source.confirmed();
      const recovered = this.problemNow !== null;
      this.problemNow = null;
      this.followedOnce = true;
      this.settleFirst?.(null);
      this.settleFirst = undefined;
      if (recovered)
        log.info({ upstream: this.options.upstreamUrl }, 'relay caught up with its upstream');
      return 'ready';
    }
    if (event === 'revoked') {
      this.fail('revoked', 'the upstream revoked the relay key; serving what is held, retrying');
      for (const listener of this.revokedListeners) listener();
      return undefined;
    }
    const validate = EVENT_SCHEMAS[event];
    // Events of a later protocol version this relay does not know are left alone.
    if (!validate) return undefined;
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      throw new IncompatibleUpstream(`the ${event} event is not JSON`);
    }
    if (!validate(data)) {
      const protocol =
        event === 'hello' ? (Object(data) as { protocol?: unknown }).protocol : undefined;
      throw new IncompatibleUpstream(
        protocol !== undefined && protocol !== RELAY_PROTOCOL_VERSION
          ? `the upstream speaks relay protocol ${JSON.stringify(protocol)}; this relay speaks ${RELAY_PROTOCOL_VERSION}`
          : `the ${event} event does not match the relay protocol: ${validate.errors?.[0]?.instancePath ?? ''} ${validate.errors?.[0]?.message ?? ''}`,
      );
    }
    if (event === 'hello') {
      const hello = data as RelayHelloEvent;
      this.upstreamId = hello.upstream;
      this.relayKeyId = hello.relayKeyId;
    } else if (event === 'environment') await source.environment(data as RelayEnvironmentEvent);
    else if (event === 'patch') await source.patch(data as RelayPatchEvent);
    else if (event === 'keys') {
      const { environmentId, sdkKeys } = data as RelayKeysEvent;
      await source.keys(environmentId, sdkKeys);
    } else if (event === 'removed') await source.removed((data as RelayRemovedEvent).environmentId);
    return undefined;
  }

  private fail(kind: UpstreamProblem['kind'], detail: string): void {
    const previous = this.problemNow;
    // An outage that goes on is logged once, not at every retry.
    if (previous?.kind !== kind || previous.detail !== detail) {
      const level = kind === 'unreachable' ? 'warn' : 'error';
      this.options.log[level](
        { upstream: this.options.upstreamUrl, problem: kind },
        `relay upstream: ${detail}`,
      );
    }
    // A revocation stays what the relay reports until the upstream accepts the key again.
    this.problemNow =
      previous?.kind === 'revoked' && kind !== 'incompatible'
        ? previous
        : {
            kind,
            detail,
            sinceMs:
              previous?.kind === kind ? previous.sinceMs : this.options.clock.now().getTime(),
          };
    this.settleFirst?.(this.problemNow);
    this.settleFirst = undefined;
  }
}

/** A problem body's `detail`, or the status line. */
async function problemDetail(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const { detail } = JSON.parse(text) as { detail?: unknown };
    if (typeof detail === 'string') return detail;
  } catch {
    // Not a problem body.
  }
  return `${response.status} ${response.statusText}`.trim();
}

/** An error's message, with its cause's (fetch puts the socket error in `cause`). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
