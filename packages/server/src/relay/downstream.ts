import { createHash, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { App } from '../http/app-instance.js';
import { ProblemError } from '../evaluation/problem.js';
import { openEventStream } from '../evaluation/streaming.js';
import type { EvaluationServices } from '../services.js';
import { acceptEvents } from '../evaluation/events-routes.js';
import {
  RELAY_EVENTS_PATH,
  RELAY_FEED_PATH,
  RELAY_INTAKE_BODY_LIMIT_BYTES,
  RELAY_PROTOCOL_VERSION,
  RELAY_USAGE_PATH,
  relayEnvironmentFrame,
  relayFeedFrame,
  relayPatchFrame,
  RelayEventsBody,
  RelayEventsResponse,
  RelayFeedBody,
  RelayUsageBody,
  RelayUsageResponse,
  type RelayFeedEventName,
  type RelayFeedEvents,
} from '../relay-feed/protocol.js';
import type { UpstreamFollower } from './upstream-follower.js';
import type { HeldChange, HeldEnvironment, UpstreamSource } from './upstream-source.js';
import { outsideScope } from '../relay-feed/relay-keys.js';
import { addRelayUsage } from '../relay-feed/usage-intake.js';

/** What a relay's own feed passes on. */
export interface DownstreamOptions {
  services: EvaluationServices;
  source: UpstreamSource;
  follower: UpstreamFollower;
  /** The relay's own key: a downstream relay must present the same one (spec: relay, chains). */
  relayKey: string;
  /** Names the upstream in `hello` until the upstream's own `hello` has named itself. */
  upstreamUrl: string;
  keepAliveMs: number;
}

/** What one write of the feed sends, in order. */
type Chunks = readonly (string | Buffer)[];

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** Refuses a request without the relay's own key (401, as the upstream would). */
function checkKey(request: FastifyRequest, keyHash: Buffer): void {
  const sent = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (sent === undefined || !timingSafeEqual(sha256(sent), keyHash))
    throw new ProblemError(
      401,
      'Unauthorized',
      'A relay following this relay sends the same relay key (Authorization: Bearer vxr_…).',
    );
}

/**
 * The relay protocol's routes on a relay (design record 044), so that relays can follow relays
 * (a chain): the feed passes on what this relay holds and every change it receives; usage and
 * events sent by a downstream relay are added into this relay's own counts, which go upstream
 * with its next flush. A downstream relay needs the same relay key: it covers the same
 * environments.
 */
export function registerDownstreamRoutes(app: App, options: DownstreamOptions): void {
  const { services, source, follower } = options;
  const keyHash = sha256(options.relayKey);
  const feeds = new Set<ServerResponse>();
  app.addHook('preClose', (done) => {
    for (const response of feeds) response.end();
    done();
  });

  app.post(
    RELAY_FEED_PATH,
    { schema: { hide: true, body: RelayFeedBody } },
    async (request, reply) => {
      checkKey(request, keyHash);
      const response = openEventStream(reply);
      feeds.add(response);
      // Writes go out in order; an environment's frame waits for its document to be inflated.
      let writing: Promise<void> = Promise.resolve();
      const write = (frame: () => Chunks | Promise<Chunks>) => {
        writing = writing
          .then(async () => {
            const chunks = await frame();
            if (response.writableEnded || response.destroyed) return;
            for (const chunk of chunks) response.write(chunk);
          })
          .catch((error: unknown) => {
            request.log.warn({ err: error }, 'relay feed not passed on; the follower reconnects');
            response.destroy();
          });
      };
      const send = <E extends RelayFeedEventName>(event: E, data: RelayFeedEvents[E]) =>
        write(() => [relayFeedFrame(event, data)]);
      const { known, patches } = request.body;
      /** The version the downstream relay holds of each environment, as far as this feed knows. */
      const sent = new Map<string, number>();
      const sendEnvironment = ({ snapshot, sdkKeys }: HeldEnvironment) => {
        sent.set(snapshot.environmentId, snapshot.version);
        write(() => relayEnvironmentFrame(snapshot, JSON.stringify(sdkKeys)));
      };
      /** A change: what changed, when the relay takes patches and this relay holds them. */
      const sendChange = (environment: HeldEnvironment) => {
        const { environmentId, version } = environment.snapshot;
        const from = sent.get(environmentId);
        const changes =
          patches === true && from !== undefined
            ? source.snapshots.changes.since(environment.snapshot, from)
            : undefined;
        if (!changes) {
          sendEnvironment(environment);
          return;
        }
        sent.set(environmentId, version);
        write(() => changes.map(relayPatchFrame));
        // A whole state received may have brought other keys too.
        send('keys', { environmentId, sdkKeys: environment.sdkKeys });
      };
      send('hello', {
        protocol: RELAY_PROTOCOL_VERSION,
        upstream: follower.upstreamId ?? `relay:${options.upstreamUrl}`,
        relayKeyId: follower.relayKeyId ?? '00000000-0000-0000-0000-000000000000',
      });
      const held = new Set<string>();
      for (const environment of source.environments()) {
        const { environmentId, version } = environment.snapshot;
        held.add(environmentId);
        // From here on, changes are worked out against this snapshot.
        source.snapshots.changes.record(environment.snapshot);
        // Keys change without a version: the relay's are sent again on resume.
        if (known[environmentId] === version) {
          sent.set(environmentId, version);
          send('keys', { environmentId, sdkKeys: environment.sdkKeys });
        } else sendEnvironment(environment);
      }
      for (const environmentId of Object.keys(known))
        if (!held.has(environmentId)) send('removed', { environmentId });
      send('ready', {});
      const passOn = (change: HeldChange) => {
        if (change.kind === 'environment') sendChange(change);
        else if (change.kind === 'keys')
          send('keys', { environmentId: change.environmentId, sdkKeys: change.sdkKeys });
        else {
          sent.delete(change.environmentId);
          send('removed', { environmentId: change.environmentId });
        }
      };
      const unsubscribe = [
        source.onChange(passOn),
        follower.onRevoked(() => {
          send('revoked', {});
          void writing.then(() => response.end());
        }),
      ];
      const keepAlive = setInterval(() => {
        write(() => [': keep-alive\n\n']);
      }, options.keepAliveMs);
      keepAlive.unref();
      response.on('close', () => {
        clearInterval(keepAlive);
        for (const stop of unsubscribe) stop();
        feeds.delete(response);
      });
    },
  );

  app.post(
    RELAY_USAGE_PATH,
    {
      schema: { hide: true, body: RelayUsageBody, response: { 200: RelayUsageResponse } },
      bodyLimit: RELAY_INTAKE_BODY_LIMIT_BYTES,
    },
    async (request, reply) => {
      checkKey(request, keyHash);
      // The same key: what this relay may record, the downstream one may (the plans this relay's
      // upstream named), and its SDK keys' scope was checked where they were used.
      const plans = services.usage.exposures?.activePlansIn() ?? [];
      const experiments = services.usage.exposures?.experiments.runningIn() ?? [];
      addRelayUsage(
        services.usage,
        request.body,
        services.clock.now().getTime(),
        () => true,
        plans,
        experiments,
      );
      return reply.status(200).send({ plans, experiments });
    },
  );

  app.post(
    RELAY_EVENTS_PATH,
    {
      schema: { hide: true, body: RelayEventsBody, response: { 202: RelayEventsResponse } },
      bodyLimit: RELAY_INTAKE_BODY_LIMIT_BYTES,
    },
    async (request, reply) => {
      checkKey(request, keyHash);
      const { environmentId, keyType, events } = request.body;
      const snapshot = await source.snapshots.get(environmentId);
      if (!snapshot) throw outsideScope([environmentId]);
      return reply.status(202).send(acceptEvents(services, snapshot, events, keyType));
    },
  );
}
