import type { App } from '../http/app-instance.js';
import { databaseFingerprint } from '../evaluation/snapshot-copies.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import { openEventStream } from '../evaluation/streaming.js';
import type { Services } from '../services.js';
import { acceptEvents } from '../evaluation/events-routes.js';
import { RelayFeed, type RelayFeedSignals } from './feed.js';
import {
  RELAY_EVENTS_PATH,
  RELAY_FEED_PATH,
  RELAY_INTAKE_BODY_LIMIT_BYTES,
  RELAY_USAGE_PATH,
  RelayEventsBody,
  RelayEventsResponse,
  RelayFeedBody,
  RelayUsageBody,
  RelayUsageResponse,
} from './protocol.js';
import { authenticateRelayKey, coveredEnvironments, outsideScope } from './relay-keys.js';
import { addRelayUsage } from './usage-intake.js';

/** Refuses the request unless every environment named is `covered` (by the relay key). */
function checkCovered(covered: ReadonlySet<string>, environmentIds: Iterable<string>): void {
  const outside = [...new Set(environmentIds)].filter((id) => !covered.has(id));
  if (outside.length > 0) throw outsideScope(outside);
}

/**
 * The upstream side of the relay protocol (`relay-feed/protocol.ts`, design record 045), mounted in
 * the evaluation API's scope (under `/v1`, with its problem bodies) on every full node that
 * evaluates: the feed, and the intake of the usage and events relays send back. Every route
 * takes a relay key (`Authorization: Bearer vxr_…`); a missing, unknown or revoked one is 401.
 * @returns how many feeds are open now (relays following this process), for `/metrics`
 */
export function registerRelayApi(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  signals: RelayFeedSignals,
): () => number {
  const upstream = databaseFingerprint(services.config.databaseUrl);
  const open = new Set<RelayFeed>();
  // A node shutting down ends its feeds (without `revoked`): relays reconnect to another node.
  app.addHook('preClose', (done) => {
    for (const feed of open) feed.close();
    done();
  });

  app.post(
    RELAY_FEED_PATH,
    { schema: { tags: ['relay'], body: RelayFeedBody } },
    async (request, reply) => {
      const grant = await authenticateRelayKey(services.db, request.headers.authorization);
      const response = openEventStream(reply);
      const feed = new RelayFeed(
        {
          db: services.db,
          snapshots,
          signals,
          upstream,
          log: request.log,
          // `VEXIL_STREAM_HEARTBEAT`, by default the protocol's RELAY_KEEP_ALIVE_MS.
          keepAliveMs: services.config.streamHeartbeatMs,
        },
        grant,
        response,
      );
      open.add(feed);
      response.on('close', () => open.delete(feed));
      feed.start(request.body.known, request.body.patches === true);
    },
  );

  app.post(
    RELAY_USAGE_PATH,
    {
      schema: {
        tags: ['relay'],
        body: RelayUsageBody,
        response: { 200: RelayUsageResponse },
      },
      bodyLimit: RELAY_INTAKE_BODY_LIMIT_BYTES,
    },
    async (request, reply) => {
      const grant = await authenticateRelayKey(services.db, request.headers.authorization);
      const { evaluations, customEvents, keyUses } = request.body;
      const covered = await coveredEnvironments(services.db, grant);
      const keyEnvironments = await sdkKeyEnvironments(
        services,
        keyUses.map((use) => use.keyId),
      );
      checkCovered(covered, [
        ...evaluations.map((row) => row.environmentId),
        ...customEvents.map((row) => row.environmentId),
        ...keyEnvironments.values(),
      ]);
      const plans = services.usage.exposures?.activePlansIn(covered) ?? [];
      const experiments = services.usage.exposures?.experiments.runningIn(covered) ?? [];
      addRelayUsage(
        services.usage,
        request.body,
        services.clock.now().getTime(),
        (keyId) => keyEnvironments.has(keyId),
        plans,
        experiments,
      );
      return reply.status(200).send({ plans, experiments });
    },
  );

  app.post(
    RELAY_EVENTS_PATH,
    {
      schema: {
        tags: ['relay'],
        body: RelayEventsBody,
        response: { 202: RelayEventsResponse },
      },
      bodyLimit: RELAY_INTAKE_BODY_LIMIT_BYTES,
    },
    async (request, reply) => {
      const grant = await authenticateRelayKey(services.db, request.headers.authorization);
      const { environmentId, keyType, events } = request.body;
      checkCovered(await coveredEnvironments(services.db, grant), [environmentId]);
      const snapshot = await snapshots.get(environmentId);
      if (!snapshot) throw outsideScope([environmentId]);
      return reply.status(202).send(acceptEvents(services, snapshot, events, keyType));
    },
  );
  return () => open.size;
}

/** The environment of each SDK key named (by id) that exists. */
async function sdkKeyEnvironments(
  services: Services,
  keyIds: readonly string[],
): Promise<Map<string, string>> {
  if (keyIds.length === 0) return new Map();
  const rows = await services.db
    .selectFrom('sdk_keys')
    .select(['id', 'environment_id'])
    .where('id', 'in', [...new Set(keyIds)])
    .execute();
  return new Map(rows.map((row) => [row.id, row.environment_id]));
}
