import { hash, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import type { Clock } from '../clock.js';
import type { EvaluationServices } from '../services.js';
import type { UsageAggregator } from '../usage/aggregator.js';
import { evaluateClientFlags, recordServed } from './client-flags.js';
import { patchEvents } from './configuration-changes.js';
import { ProblemError } from './problem.js';
import { SdkAuthFailure, type SdkAuthenticator, type SdkKeyType } from './sdk-authenticator.js';
import type { Snapshot, SnapshotStore } from './snapshots.js';

/** Header that names a client stream in `POST /v1/client/identify` (and answers it on connect). */
const STREAM_ID_HEADER = 'x-vexil-stream-id';

type Context = Record<string, unknown>;

/**
 * One Server-Sent Events frame (WHATWG HTML, "Server-sent events"). Every line of `data` gets
 * its own `data:` field, so a payload can never end the frame early.
 */
export function sseFrame(event: string, data: string, id?: string): string {
  const lines = data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('');
  return `event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}${lines}\n`;
}

/** A heartbeat: an SSE comment, ignored by parsers, that keeps proxies from closing the idle connection. */
export const PING = ': ping\n\n';

export interface StreamOptions {
  environmentId: string;
  credential: string;
  /** Re-checks the SDK key the stream was opened with; throws its {@link SdkAuthFailure} when refused. */
  authenticate: () => Snapshot | Promise<Snapshot>;
  snapshots: SnapshotStore;
  response: ServerResponse;
  onError: (error: unknown) => void;
}

/**
 * An open SSE response. Pushes are serialized per stream and coalesced: every push sends the
 * environment's latest state, so while one is queued (or the socket is congested) a further
 * change needs no push of its own.
 */
export abstract class Stream {
  /** Version of the configuration last sent, so an unchanged one is not sent again. */
  protected sentVersion: number | undefined;
  /** A push failed for a passing reason (database unavailable); the next heartbeat retries. */
  private failed = false;
  private queued = false;
  private chain: Promise<void> = Promise.resolve();

  readonly environmentId: string;
  /** The `Authorization` value the stream was opened with; streams sharing it are re-checked together. */
  readonly credential: string;
  readonly authenticate: () => Snapshot | Promise<Snapshot>;
  protected readonly snapshots: SnapshotStore;
  private readonly response: ServerResponse;
  private readonly onError: (error: unknown) => void;

  constructor(options: StreamOptions) {
    this.environmentId = options.environmentId;
    this.credential = options.credential;
    this.authenticate = options.authenticate;
    this.snapshots = options.snapshots;
    this.response = options.response;
    this.onError = options.onError;
    this.response.on('drain', () => this.refresh());
  }

  /** Sends the latest state if it differs from what the client has. */
  refresh(): void {
    if (this.queued || this.response.writableEnded) return;
    this.queued = true;
    this.chain = this.chain.then(async () => {
      this.queued = false;
      // A congested socket gets the newest state once it drains, not every state in between.
      if (this.response.writableNeedDrain) return;
      try {
        const snapshot = await this.snapshots.get(this.environmentId);
        this.failed = false;
        if (!snapshot) {
          this.close();
          return;
        }
        await this.push(snapshot);
      } catch (error) {
        this.failed = true;
        this.onError(error);
      }
    });
  }

  protected abstract push(snapshot: Snapshot): void | Promise<void>;

  protected write(...chunks: (string | Buffer)[]): void {
    // A client that hung up may still be registered until its 'close' event runs.
    if (this.response.writableEnded || this.response.destroyed) return;
    for (const chunk of chunks) this.response.write(chunk);
  }

  heartbeat(): void {
    this.write(PING);
    if (this.failed) this.refresh();
  }

  close(): void {
    if (!this.response.writableEnded) this.response.end();
  }
}

/**
 * `GET /v1/sdk/stream`: the full configuration (`put`, id = version) on connect and on every
 * change; with `?patches=true`, a change the node holds is sent as per-flag `patch` and `delete`
 * events instead (design record 060).
 */
class ConfigurationStream extends Stream {
  constructor(
    options: StreamOptions,
    private readonly patches: boolean,
  ) {
    super(options);
  }

  resumeFrom(version: number): void {
    this.sentVersion = version;
  }

  protected async push(snapshot: Snapshot): Promise<void> {
    if (snapshot.version === this.sentVersion) return;
    const changes = this.patches
      ? this.snapshots.changes.since(snapshot, this.sentVersion)
      : undefined;
    const frames = changes ? changes.map(patchEvents) : [await putFrame(snapshot)];
    this.sentVersion = snapshot.version;
    this.write(...frames);
  }
}

/** Each snapshot's `put` frame: built by the first stream to need it, shared while it is held. */
const putFrames = new WeakMap<Snapshot, { held?: WeakRef<Buffer>; building?: Promise<Buffer> }>();

/**
 * The `put` frame of `snapshot` (`event: put`, id = version, the document as its one `data`
 * line: the document is one line of JSON). A change reaches every stream of the environment at
 * once, so all of them write this one buffer rather than each its own copy. It is held weakly:
 * once the sockets have sent it, only the compressed document stays (design record 012).
 */
function putFrame(snapshot: Snapshot): Promise<Buffer> {
  let frames = putFrames.get(snapshot);
  if (!frames) putFrames.set(snapshot, (frames = {}));
  const held = frames.held?.deref();
  if (held) return Promise.resolve(held);
  const entry = frames;
  entry.building ??= snapshot.document.plain().then(
    (document) => {
      const frame = Buffer.concat([
        Buffer.from(`event: put\nid: ${snapshot.version}\ndata: `),
        document,
        Buffer.from('\n\n'),
      ]);
      entry.held = new WeakRef(frame);
      entry.building = undefined;
      return frame;
    },
    (error: unknown) => {
      entry.building = undefined;
      throw error;
    },
  );
  return entry.building;
}

/** `/v1/client/stream`: the client-visible flags evaluated for one context, re-sent on change. */
class ClientFlagsStream extends Stream {
  /** Random, not v7: the id is all `identify` needs to re-target the stream, so it must not be guessable. */
  readonly id: string;
  private context: Context;
  private contextChanged = true;
  /** A digest of the last `flags` data sent: the same answer is not sent twice. */
  private sentDigest: string | undefined;
  /** Null when the client reports its own reads (spec: Evaluation API rule 1). */
  private readonly usage: { aggregator: UsageAggregator; clock: Clock } | null;

  constructor(
    options: StreamOptions & {
      id: string;
      context: Context;
      usage: { aggregator: UsageAggregator; clock: Clock } | null;
    },
  ) {
    super(options);
    this.id = options.id;
    this.context = options.context;
    this.usage = options.usage;
  }

  /** Spec: Evaluation API rule 2, identify updates the context of active streams. */
  identify(context: Context): void {
    this.context = context;
    this.contextChanged = true;
    this.refresh();
  }

  protected push(snapshot: Snapshot): void {
    if (snapshot.version === this.sentVersion && !this.contextChanged) return;
    this.sentVersion = snapshot.version;
    const { body, results } = evaluateClientFlags(snapshot, this.context);
    const data = JSON.stringify(body);
    // A change that leaves this context's answers as they were is not sent (nor counted).
    const digest = hash('sha1', data, 'base64');
    if (digest === this.sentDigest && !this.contextChanged) return;
    this.contextChanged = false;
    this.sentDigest = digest;
    const usage = this.usage && {
      aggregator: this.usage.aggregator,
      nowMs: this.usage.clock.now().getTime(),
    };
    recordServed(snapshot, this.context, results, usage);
    this.write(sseFrame('flags', data));
  }
}

/** Streams written in one turn of the event loop after a change or at a heartbeat. */
const STREAMS_PER_SLICE = 16;

/**
 * Calls `each` for the streams {@link STREAMS_PER_SLICE} at a time, the event loop turning
 * between slices: a write to a socket costs tens of microseconds (more on loopback), so a
 * thousand streams written in one go would hold evaluations up for tens of milliseconds (design
 * record 060).
 */
async function inSlices(streams: readonly Stream[], each: (stream: Stream) => void): Promise<void> {
  for (let start = 0; start < streams.length; start += STREAMS_PER_SLICE) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const stream of streams.slice(start, start + STREAMS_PER_SLICE)) each(stream);
  }
}

/**
 * This node's open streams by environment. One snapshot listener and one heartbeat timer serve
 * them all, so a thousand streams cost a thousand sockets, not a thousand timers.
 */
class StreamRegistry {
  private readonly byEnvironment = new Map<string, Set<Stream>>();
  private readonly clientStreams = new Map<string, ClientFlagsStream>();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly snapshots: SnapshotStore,
    private readonly heartbeatMs: number,
  ) {}

  add(stream: Stream): void {
    let streams = this.byEnvironment.get(stream.environmentId);
    if (!streams) this.byEnvironment.set(stream.environmentId, (streams = new Set()));
    streams.add(stream);
    if (stream instanceof ClientFlagsStream) this.clientStreams.set(stream.id, stream);
    if (!this.heartbeatTimer) {
      this.heartbeatTimer = setInterval(() => void this.heartbeat(), this.heartbeatMs);
      this.heartbeatTimer.unref();
      this.unsubscribe = this.snapshots.onChange((ids) => this.changed(ids));
    }
  }

  remove(stream: Stream): void {
    const streams = this.byEnvironment.get(stream.environmentId);
    streams?.delete(stream);
    if (streams?.size === 0) this.byEnvironment.delete(stream.environmentId);
    if (stream instanceof ClientFlagsStream) this.clientStreams.delete(stream.id);
    if (this.byEnvironment.size === 0) {
      clearInterval(this.heartbeatTimer);
      this.heartbeatTimer = undefined;
      this.unsubscribe?.();
      this.unsubscribe = undefined;
    }
  }

  clientStream(id: string): ClientFlagsStream | undefined {
    return this.clientStreams.get(id);
  }

  /** Ends every stream (graceful shutdown must not wait for clients that never hang up). */
  closeAll(): void {
    for (const streams of [...this.byEnvironment.values()]) {
      for (const stream of [...streams]) stream.close();
    }
  }

  private changed(environmentIds: readonly string[] | 'all'): void {
    const ids = environmentIds === 'all' ? [...this.byEnvironment.keys()] : environmentIds;
    for (const id of ids) void this.refreshInSlices(id);
  }

  /**
   * Refreshes the environment's streams in slices ({@link inSlices}). The snapshot is built
   * first, so that the streams' pushes do not all run at once when it is ready.
   */
  private async refreshInSlices(environmentId: string): Promise<void> {
    // A failed build is each stream's to report (and retry at the next heartbeat).
    await this.snapshots.get(environmentId).catch(() => undefined);
    await inSlices([...(this.byEnvironment.get(environmentId) ?? [])], (stream) =>
      stream.refresh(),
    );
  }

  /**
   * Pings every stream, in slices as a change's refresh writes them, and re-checks each distinct
   * SDK key once: a revoked key's streams end within one heartbeat (design record 010, Streaming).
   */
  private async heartbeat(): Promise<void> {
    const byCredential = new Map<string, [Stream, ...Stream[]]>();
    const streams = [...this.byEnvironment.values()].flatMap((environment) => [...environment]);
    await inSlices(streams, (stream) => {
      stream.heartbeat();
      const group = byCredential.get(stream.credential);
      if (group) group.push(stream);
      else byCredential.set(stream.credential, [stream]);
    });
    await Promise.all(
      [...byCredential.values()].map(async (group) => {
        try {
          await group[0].authenticate();
        } catch (error) {
          // Only a refused key ends streams; an unavailable database is retried next time.
          if (error instanceof SdkAuthFailure && error.refusesKey) {
            for (const stream of group) stream.close();
          }
        }
      }),
    );
  }
}

const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  // nginx buffers proxied responses by default, which would hold events back.
  'x-accel-buffering': 'no',
};

/** Takes the response over from Fastify and sends the SSE headers at once. */
export function openEventStream(reply: FastifyReply, extraHeaders: Record<string, string> = {}) {
  reply.hijack();
  // Headers set before the takeover (CORS) were Fastify's to send, and it no longer will.
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) reply.raw.setHeader(name, value);
  }
  reply.raw.writeHead(200, { ...EVENT_STREAM_HEADERS, ...extraHeaders });
  reply.raw.flushHeaders();
  return reply.raw;
}

/** Decodes the `context` query parameter: base64url of a JSON object. */
function decodeContext(encoded: string): Context {
  let context: unknown;
  try {
    context = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    context = undefined;
  }
  if (typeof context !== 'object' || context === null || Array.isArray(context)) {
    throw new ProblemError(
      400,
      'Invalid request',
      'context must be a base64url-encoded JSON object.',
      {
        errors: [{ field: 'context', message: 'must be base64url of a JSON object' }],
      },
    );
  }
  return context as Context;
}

/** Switches a client stream held by this node to a new context; false when it holds no such stream. */
export type StreamIdentifier = (
  environmentId: string,
  streamId: string,
  context: Context,
) => boolean;

/** Reaches the client streams other nodes hold (the node bus implements it). */
export interface StreamRelay {
  /** Lets other nodes switch the client streams this node holds. */
  onIdentify(identify: StreamIdentifier): void;
  /** Switches a client stream held by another node; true once that node confirms. */
  identifyElsewhere(environmentId: string, streamId: string, context: Context): Promise<boolean>;
}

/** What a stream of another kind (the OFREP event stream) shares with the node's streams. */
export interface StreamHost {
  snapshots: SnapshotStore;
  /** Registers an open stream for changes and heartbeats until its response closes. */
  track(stream: Stream, response: ServerResponse): void;
  onError(request: FastifyRequest): (error: unknown) => void;
}

/** Lets `POST /v1/client/identify` reach the client streams of every node. */
export interface ClientStreams {
  /**
   * When the request carries `X-Vexil-Stream-Id` naming an open client stream of the same
   * environment, switches that stream to the request body's context; the stream then pushes a
   * fresh `flags` event. Answers `X-Vexil-Stream-Updated: true|false` when a stream id was sent.
   * Throws the same 401/403 problems as the other client endpoints.
   */
  identify(
    request: FastifyRequest<{ Body: { context: Context } }>,
    reply: FastifyReply,
  ): Promise<void>;
}

/**
 * The streaming endpoints of the evaluation API (spec: Evaluation API rule 2; design record 010,
 * Streaming; docs/streaming.md): `GET /v1/sdk/stream` for server SDKs, and `GET`/`POST
 * /v1/client/stream` for client SDKs. Streams follow the node's snapshots, so a change committed
 * on any node reaches them once that node's snapshot hears of it. All streams end when the app
 * closes.
 */
export function registerStreamingApi(
  app: App,
  services: EvaluationServices,
  snapshots: SnapshotStore,
  sdk: SdkAuthenticator,
  relay: StreamRelay,
): ClientStreams & { host: StreamHost } {
  const authenticate = (request: FastifyRequest, type: SdkKeyType) =>
    sdk.authenticate(request.headers.authorization, type);
  const registry = new StreamRegistry(snapshots, services.config.streamHeartbeatMs);
  app.addHook('preClose', (done) => {
    registry.closeAll();
    done();
  });
  const identifyHere: StreamIdentifier = (environmentId, streamId, context) => {
    const stream = registry.clientStream(streamId);
    // Another environment's stream is never touched, even when its id is known.
    if (stream?.environmentId !== environmentId) return false;
    stream.identify(context);
    return true;
  };
  relay.onIdentify(identifyHere);

  function track(stream: Stream, response: ServerResponse): void {
    registry.add(stream);
    response.on('close', () => registry.remove(stream));
  }
  const logError = (request: FastifyRequest) => (error: unknown) =>
    request.log.warn({ err: error }, 'stream push failed; retried at the next heartbeat');

  app.get(
    '/sdk/stream',
    {
      schema: {
        tags: ['evaluation'],
        security: [{ sdkKey: [] }],
        description:
          'Server-Sent Events: `put` (data: the `GET /v1/sdk/flags` document, id: its version) on ' +
          'connect and after every change; `: ping` comments as heartbeats. `Last-Event-ID` ' +
          'equal to the current version skips the initial `put`. With `patches=true`, a change ' +
          'comes as `patch` events (data: `{ path: "/flags/<key>" | "/segments/<key>", data }`) ' +
          'and `delete` events (data: `{ path }`), the last of them with the new version as id; ' +
          "a `put` when the node does not hold every change since the client's version.",
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String()) }),
        querystring: Type.Object({ patches: Type.Optional(Type.Boolean({ default: false })) }),
      },
    },
    async (request, reply) => {
      const snapshot = await authenticate(request, 'ServerSide');
      const response = openEventStream(reply);
      const stream = new ConfigurationStream(
        {
          environmentId: snapshot.environmentId,
          credential: request.headers.authorization ?? '',
          authenticate: () => authenticate(request, 'ServerSide'),
          snapshots,
          response,
          onError: logError(request),
        },
        request.query.patches === true,
      );
      const lastEventId = Number(request.headers['last-event-id']);
      if (Number.isInteger(lastEventId)) stream.resumeFrom(lastEventId);
      track(stream, response);
      stream.refresh();
    },
  );

  const reportsEvaluations = (request: FastifyRequest, query: { reportsEvaluations?: string }) =>
    request.headers['x-service-reports-evaluations'] === '1' || query.reportsEvaluations === '1';

  async function openClientStream(
    request: FastifyRequest,
    reply: FastifyReply,
    context: Context,
    reportsOwnEvaluations: boolean,
  ): Promise<void> {
    const snapshot = await authenticate(request, 'ClientSide');
    const id = randomUUID();
    const response = openEventStream(reply, { [STREAM_ID_HEADER]: id });
    const stream = new ClientFlagsStream({
      id,
      environmentId: snapshot.environmentId,
      credential: request.headers.authorization ?? '',
      authenticate: () => authenticate(request, 'ClientSide'),
      snapshots,
      response,
      onError: logError(request),
      context,
      usage: reportsOwnEvaluations ? null : { aggregator: services.usage, clock: services.clock },
    });
    response.write(sseFrame('stream', JSON.stringify({ streamId: id })));
    track(stream, response);
    stream.refresh();
  }

  const clientQuery = {
    /** EventSource cannot send headers: client keys (public by design) may come as `sdkKey`. */
    sdkKey: Type.Optional(Type.String()),
    reportsEvaluations: Type.Optional(Type.Enum(['1'])),
  };
  /** Moves a client key from the query string into the header every later check reads. */
  const keyFromQuery = (request: FastifyRequest, sdkKey: string | undefined) => {
    if (!request.headers.authorization && sdkKey) request.headers.authorization = sdkKey;
  };
  const clientDescription =
    'Server-Sent Events: `stream` (data: `{ streamId }`) first, then `flags` (data: the ' +
    '`/v1/client/evaluate` body) on connect, after every change and after `identify` with ' +
    '`X-Vexil-Stream-Id`; `: ping` comments as heartbeats.';

  app.get(
    '/client/stream',
    {
      schema: {
        tags: ['evaluation'],
        security: [{ sdkKey: [] }],
        description: clientDescription,
        querystring: Type.Object({ context: Type.String({ minLength: 1 }), ...clientQuery }),
      },
    },
    async (request, reply) => {
      keyFromQuery(request, request.query.sdkKey);
      const context = decodeContext(request.query.context);
      await openClientStream(request, reply, context, reportsEvaluations(request, request.query));
    },
  );

  app.post(
    '/client/stream',
    {
      schema: {
        tags: ['evaluation'],
        security: [{ sdkKey: [] }],
        description: clientDescription,
        querystring: Type.Object(clientQuery),
        body: Type.Object({ context: Type.Record(Type.String(), Type.Unknown()) }),
      },
    },
    async (request, reply) => {
      keyFromQuery(request, request.query.sdkKey);
      await openClientStream(
        request,
        reply,
        request.body.context,
        reportsEvaluations(request, request.query),
      );
    },
  );

  return {
    host: { snapshots, track, onError: logError },
    async identify(request, reply) {
      const streamId = request.headers[STREAM_ID_HEADER];
      if (typeof streamId !== 'string') return;
      const { environmentId } = await authenticate(request, 'ClientSide');
      const { context } = request.body;
      const updated =
        identifyHere(environmentId, streamId, context) ||
        (await relay.identifyElsewhere(environmentId, streamId, context));
      void reply.header('x-vexil-stream-updated', String(updated));
    },
  };
}
