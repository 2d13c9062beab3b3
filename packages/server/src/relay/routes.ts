import type { App } from '../http/app-instance.js';
import { ProblemError } from '../evaluation/problem.js';
import { databaseFingerprint } from '../evaluation/snapshot-copies.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import { openEventStream } from '../evaluation/streaming.js';
import type { Services } from '../services.js';
import { acceptEvents } from '../usage/events-routes.js';
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
} from './protocol.js';
import { authenticateRelayKey, coveredEnvironments, type RelayKeyGrant } from './relay-keys.js';

function outsideScope(environmentIds: readonly string[]): ProblemError {
  return new ProblemError(
    403,
    'Forbidden',
    `The relay key does not cover environment ${environmentIds.join(', ')}.`,
    { environmentIds },
  );
}

/** Refuses the request unless the grant covers every environment named. */
async function checkCovered(
  services: Services,
  grant: RelayKeyGrant,
  environmentIds: Iterable<string>,
): Promise<void> {
  const named = new Set(environmentIds);
  if (named.size === 0) return;
  const covered = await coveredEnvironments(services.db, grant);
  const outside = [...named].filter((id) => !covered.has(id));
  if (outside.length > 0) throw outsideScope(outside);
}

/**
 * The upstream side of the relay protocol (`relay/protocol.ts`, design record 045), mounted in
 * the evaluation API's scope (under `/v1`, with its problem bodies) on every full node that
 * evaluates: the feed, and the intake of the usage and events relays send back. Every route
 * takes a relay key (`Authorization: Bearer vxr_…`); a missing, unknown or revoked one is 401.
 */
export function registerRelayApi(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  signals: RelayFeedSignals,
): void {
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
      feed.start(request.body.known);
    },
  );

  app.post(
    RELAY_USAGE_PATH,
    {
      schema: { tags: ['relay'], body: RelayUsageBody },
      bodyLimit: RELAY_INTAKE_BODY_LIMIT_BYTES,
    },
    async (request, reply) => {
      const grant = await authenticateRelayKey(services.db, request.headers.authorization);
      const { evaluations, customEvents, keyUses } = request.body;
      await checkCovered(services, grant, [
        ...evaluations.map((row) => row.environmentId),
        ...customEvents.map((row) => row.environmentId),
      ]);
      const keyEnvironments = await sdkKeyEnvironments(
        services,
        keyUses.map((use) => use.keyId),
      );
      await checkCovered(services, grant, keyEnvironments.values());
      const nowMs = services.clock.now().getTime();
      const { usage } = services;
      for (const row of evaluations) {
        // A null variation served none: not counted, as on this node (UsageAggregator).
        if (row.variation === null || row.hourMs > nowMs) continue;
        const lastMs = Math.min(Math.max(row.lastAtMs ?? row.hourMs, row.hourMs), nowMs);
        usage.addEvaluations(
          row.environmentId,
          row.flagKey,
          row.variation,
          row.hourMs,
          row.count,
          lastMs,
        );
      }
      for (const row of customEvents) {
        if (row.hourMs <= nowMs)
          usage.addCustomEvents(row.environmentId, row.eventKey, row.hourMs, row.count);
      }
      // Uses of keys unknown here (revoked and gone) are dropped, as the flush would drop them.
      for (const use of keyUses)
        if (keyEnvironments.has(use.keyId))
          usage.recordKeyUse(use.keyId, Math.min(use.atMs, nowMs));
      return reply.status(204).send();
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
      await checkCovered(services, grant, [environmentId]);
      const snapshot = await snapshots.get(environmentId);
      if (!snapshot) throw outsideScope([environmentId]);
      return reply.status(202).send(acceptEvents(services, snapshot, events, keyType));
    },
  );
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
