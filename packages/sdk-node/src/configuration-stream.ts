import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PatchEvent } from './configuration-patches.js';
import { SseParser } from './sse-parser.js';

/** The stream could not be opened: the server answered something other than an event stream. */
export class StreamRefusedError extends Error {
  constructor(readonly status: number) {
    super(`GET /v1/sdk/stream answered ${status}`);
    this.name = 'StreamRefusedError';
  }
}

/** Where and how the stream is held, and what to tell the client. */
export interface StreamOptions {
  baseUrl: string;
  sdkKey: string;
  /** First reconnection delay in milliseconds; doubled per failed attempt up to `retryMaxMs`. */
  retryInitialMs: number;
  retryMaxMs: number;
  /** Reconnect when no byte (not even a `: ping` heartbeat) arrived for this long. */
  idleTimeoutMs: number;
  /** The configuration version held, sent as `Last-Event-ID` so an unchanged one is not re-sent. */
  currentVersion: () => number | undefined;
  /** The stream answered 200: from now on it carries every change. */
  onConnected: () => void;
  /** A `put` arrived: `data` is a `GET /v1/sdk/flags` document. */
  onPut: (data: string) => void;
  /**
   * A `patch` or `delete` arrived; `version` is given on the last event of a change, the
   * configuration's version once the change is applied.
   */
  onPatch: (patch: PatchEvent, version: number | undefined) => void;
  /**
   * The stream failed to open or ended; another attempt follows after a backoff. `wasConnected`
   * says whether it had been carrying changes (so the client knows it may have missed some).
   */
  onDisconnected: (error: Error, wasConnected: boolean) => void;
}

/**
 * Holds `GET /v1/sdk/stream` open (docs/streaming.md) and reconnects with exponential backoff
 * and jitter when it fails, ends or goes silent; parses it with {@link SseParser}; never throws.
 *
 * Each attempt uses its own connection (`node:http` without an agent) rather than `fetch`:
 * `fetch`'s shared pool opens spare connections while the stream occupies one, and a connection
 * that never carried a request holds a Node server's graceful close up for a minute. Here
 * {@link close} destroys the one socket the stream owns, and nothing is left behind.
 */
export class ConfigurationStream {
  private current: ClientRequest | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private closed = false;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: StreamOptions) {
    this.delayMs = options.retryInitialMs;
  }

  /** Opens the stream (once; later attempts are scheduled by the stream itself). */
  start(): void {
    if (!this.closed) this.running = this.connect();
  }

  /** Stops reconnecting and aborts the open request; resolves once it has let go. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.idleTimer);
    this.current?.destroy();
    await this.running;
  }

  private async connect(): Promise<void> {
    // Per-flag changes rather than the whole configuration on every change (docs/streaming.md).
    const url = new URL(`${this.options.baseUrl}/v1/sdk/stream?patches=true`);
    const headers: Record<string, string> = {
      authorization: this.options.sdkKey,
      accept: 'text/event-stream',
    };
    const version = this.options.currentVersion();
    if (version !== undefined) headers['last-event-id'] = String(version);
    let connected = false;
    let failure: Error;
    try {
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
        const outgoing = send(url, { headers, agent: false }, resolve);
        this.current = outgoing;
        outgoing.on('error', reject);
        this.watchIdle(outgoing);
        outgoing.end();
      });
      const type = response.headers['content-type'] ?? '';
      if (response.statusCode !== 200 || !type.startsWith('text/event-stream')) {
        response.destroy();
        throw new StreamRefusedError(response.statusCode ?? 0);
      }
      connected = true;
      this.options.onConnected();
      await this.read(response);
      failure = new Error('GET /v1/sdk/stream ended');
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
    } finally {
      clearTimeout(this.idleTimer);
      this.current?.destroy();
    }
    if (this.closed) return;
    this.options.onDisconnected(failure, connected);
    this.scheduleReconnect();
  }

  private async read(response: IncomingMessage): Promise<void> {
    const parser = new SseParser();
    // Decodes UTF-8 across chunk boundaries.
    response.setEncoding('utf8');
    for await (const chunk of response as AsyncIterable<string>) {
      if (this.current) this.watchIdle(this.current);
      // A stream that delivers bytes is healthy: its next failure starts the backoff over.
      this.delayMs = this.options.retryInitialMs;
      for (const message of parser.push(chunk)) {
        if (message.event === 'put') this.options.onPut(message.data);
        else if (message.event === 'patch' || message.event === 'delete')
          this.options.onPatch(
            { event: message.event, data: message.data },
            message.hasId ? Number(message.id) : undefined,
          );
      }
    }
  }

  /** (Re)arms the silence watchdog: heartbeats stopping means a dead connection, not a quiet one. */
  private watchIdle(outgoing: ClientRequest): void {
    clearTimeout(this.idleTimer);
    const { idleTimeoutMs } = this.options;
    this.idleTimer = setTimeout(
      () => outgoing.destroy(new Error(`no data on the stream for ${idleTimeoutMs} ms`)),
      idleTimeoutMs,
    );
    this.idleTimer.unref();
  }

  private scheduleReconnect(): void {
    // A delay drawn from [delay/2, delay]: many SDKs dropped by one server restart do not return at once.
    const delay = this.delayMs / 2 + Math.random() * (this.delayMs / 2);
    this.delayMs = Math.min(this.delayMs * 2, this.options.retryMaxMs);
    this.retryTimer = setTimeout(() => {
      if (!this.closed) this.running = this.connect();
    }, delay);
    this.retryTimer.unref();
  }
}
