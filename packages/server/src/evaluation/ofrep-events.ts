import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import { ProblemError } from './problem.js';
import type { SdkAuthenticator, SdkKeyType } from './sdk-authenticator.js';
import type { Snapshot } from './snapshots.js';
import { openEventStream, Stream, type StreamHost, type StreamOptions } from './streaming.js';

/**
 * OFREP event streams (OFREP 0.3, ADR-0008; design record 052): the bulk evaluation answer names
 * `GET /v1/ofrep/events` for the key's environment, and that stream tells the provider when to
 * fetch its answers again. It carries no answers itself: a `refetchEvaluation` message (an SSE
 * `message`, id = the configuration version) after every change of the environment's
 * configuration, and `: ping` heartbeats.
 */
export const OFREP_EVENTS_PATH = '/v1/ofrep/events';

/** How long (seconds) a provider may keep the stream closed while its page is hidden. */
const INACTIVITY_DELAY_SEC = 120;

/** One entry of the OFREP bulk answer's `eventStreams`. */
export interface OfrepEventStream {
  type: 'sse';
  endpoint: { requestUri: string };
  inactivityDelaySec: number;
}

/**
 * The bulk answer's `eventStreams` for an SDK key. `EventSource` cannot send headers, so a client
 * key (public by design, spec: Authentication rule 6) travels in the URL; a server key never
 * does: its caller sends `Authorization` as for every other request. The URI is relative, so the
 * provider resolves it against the origin it calls, whichever node or relay that is.
 */
export function ofrepEventStreams(type: SdkKeyType, key: string): OfrepEventStream[] {
  const requestUri =
    type === 'ClientSide'
      ? `${OFREP_EVENTS_PATH}?sdkKey=${encodeURIComponent(key)}`
      : OFREP_EVENTS_PATH;
  return [{ type: 'sse', endpoint: { requestUri }, inactivityDelaySec: INACTIVITY_DELAY_SEC }];
}

/** Per snapshot, the `eventStreams` JSON of each key that has asked: its environment's keys. */
const eventStreamsJson = new WeakMap<Snapshot, Map<string, string>>();

/**
 * {@link ofrepEventStreams} as JSON, made once per key and configuration version: a bulk answer
 * is sent for every request, and the key's streams are the same each time.
 */
export function ofrepEventStreamsJson(snapshot: Snapshot, type: SdkKeyType, key: string): string {
  let byKey = eventStreamsJson.get(snapshot);
  if (!byKey) eventStreamsJson.set(snapshot, (byKey = new Map<string, string>()));
  let json = byKey.get(key);
  if (json === undefined) byKey.set(key, (json = JSON.stringify(ofrepEventStreams(type, key))));
  return json;
}

/** Each snapshot's `refetchEvaluation` frame: one buffer written to every stream of the environment. */
const refetchFrames = new WeakMap<Snapshot, Buffer>();

/** The `refetchEvaluation` message for `snapshot`: its configuration's ETag, id its version. */
export function refetchFrame(snapshot: Snapshot): Buffer {
  let frame = refetchFrames.get(snapshot);
  if (!frame) {
    const data = JSON.stringify({ type: 'refetchEvaluation', etag: snapshot.document.etag });
    frame = Buffer.from(`id: ${snapshot.version}\ndata: ${data}\n\n`);
    refetchFrames.set(snapshot, frame);
  }
  return frame;
}

/**
 * An OFREP event stream. On connect it sends one `refetchEvaluation` unless `Last-Event-ID` names
 * the current version: the answer the provider holds may predate a change made while the stream
 * was being opened (a refetch that finds nothing new costs a 304).
 */
class RefetchStream extends Stream {
  resumeFrom(version: number): void {
    this.sentVersion = version;
  }

  protected push(snapshot: Snapshot): void {
    if (snapshot.version === this.sentVersion) return;
    this.sentVersion = snapshot.version;
    this.write(refetchFrame(snapshot));
  }
}

/** Registers `GET /events` for OFREP providers under the evaluation prefix ({@link OFREP_EVENTS_PATH}). */
export function registerOfrepEvents(app: App, sdk: SdkAuthenticator, host: StreamHost): void {
  app.get(
    '/ofrep/events',
    {
      schema: {
        tags: ['evaluation'],
        security: [{ sdkKey: [] }],
        description:
          'OFREP event stream (ADR-0008), named by `eventStreams` in the OFREP bulk answer: ' +
          'Server-Sent Events whose messages are `{"type":"refetchEvaluation","etag":…}` (id: ' +
          'the configuration version) after every change of the environment and once on ' +
          'connect unless `Last-Event-ID` is the current version; `: ping` comments as ' +
          'heartbeats. A client key may come as `sdkKey` (EventSource cannot send headers); a ' +
          'server key only in `Authorization`.',
        querystring: Type.Object({ sdkKey: Type.Optional(Type.String()) }),
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String()) }),
      },
    },
    async (request, reply) => {
      const fromUrl = !request.headers.authorization && request.query.sdkKey !== undefined;
      if (fromUrl) request.headers.authorization = request.query.sdkKey;
      const authenticate = async () => {
        const { type, snapshot } = await sdk.authenticateEither(request.headers.authorization);
        return { type, snapshot };
      };
      const { type, snapshot } = await authenticate();
      if (fromUrl && type === 'ServerSide')
        throw new ProblemError(
          400,
          'Invalid request',
          'A server-side SDK key is a secret: send it in the Authorization header, never in a URL.',
          { errors: [{ field: 'sdkKey', message: 'must be a client-side SDK key' }] },
        );
      const response = openEventStream(reply);
      const stream = new RefetchStream({
        environmentId: snapshot.environmentId,
        credential: request.headers.authorization ?? '',
        authenticate: async () => (await authenticate()).snapshot,
        snapshots: host.snapshots,
        response,
        onError: host.onError(request),
      } satisfies StreamOptions);
      const lastEventId = Number(request.headers['last-event-id']);
      if (Number.isInteger(lastEventId)) stream.resumeFrom(lastEventId);
      host.track(stream, response);
      stream.refresh();
    },
  );
}
