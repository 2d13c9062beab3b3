import { sql } from 'kysely';
import { Registry, collectDefaultMetrics, Gauge } from 'prom-client';
import type { App } from '../http/app-instance.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { Services } from '../services.js';
import { RequestDurations } from './request-durations.js';

/** What `/healthz`, `/readyz` and `/metrics` look at. */
export interface OpsState {
  /** False once shutdown has begun: load balancers stop sending traffic before the listener closes. */
  accepting: boolean;
  /** Whether migrations have run since start (a node may start without its database). */
  databasePrepared: () => boolean;
  /** Whether this node serves evaluations, which go on without the database. */
  evaluates: boolean;
  /** Whether the shared (Redis) rate limits have fallen back to counting per node. */
  perNodeRateLimits: () => boolean;
}

/**
 * How long a health probe waits for the database (ms): as long as the pool waits for a
 * connection, so a busy machine is not taken for an outage, and a hung database does not hang
 * the probe for a query's 30 s.
 */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Operations endpoints for load balancers and monitoring (design record 010):
 * `/healthz` (liveness: the process answers), `/readyz` (readiness: accepting and the database
 * answers; 503 otherwise), `/metrics` (Prometheus text format). Register it before any other
 * route: request durations are recorded for the routes added after it (and for unmatched requests).
 * @returns the request-duration histogram, for routes served outside Fastify (design record 030)
 */
export function registerOpsRoutes(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  state: OpsState,
): RequestDurations {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const requestDurations = new RequestDurations();
  registry.registerMetric(requestDurations.asMetric());
  // Each route gets its own onResponse hook that knows its labels (design record 016).
  app.addHook('onRoute', (route) => {
    const observe = requestDurations.observer(
      typeof route.method === 'string' ? route.method : null,
      route.url,
    );
    const existing = route.onResponse;
    route.onResponse = existing === undefined ? [observe] : [existing, observe].flat();
  });
  // Requests that matched no route, which have no route hooks.
  const unmatched = requestDurations.observer(null, 'unmatched');
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request, reply, done);
    else done();
  });

  new Gauge({
    name: 'vexil_snapshot_version',
    help: 'Configuration version of each environment snapshot held in memory',
    labelNames: ['environment_id'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [environmentId, version] of snapshots.heldVersions())
        this.set({ environment_id: environmentId }, version);
    },
  });

  new Gauge({
    name: 'vexil_snapshot_age_seconds',
    help: 'Seconds since each held environment snapshot was built',
    labelNames: ['environment_id'],
    registers: [registry],
    collect() {
      this.reset();
      const now = Date.now();
      for (const environmentId of snapshots.heldVersions().keys()) {
        const builtAt = snapshots.builtAt(environmentId);
        if (builtAt !== undefined)
          this.set({ environment_id: environmentId }, (now - builtAt) / 1000);
      }
    },
  });

  new Gauge({
    name: 'vexil_usage_flush_lag_seconds',
    help: 'Seconds since usage counts were last completely written to the database',
    registers: [registry],
    collect() {
      this.set(services.usage.flushLagSeconds(Date.now()));
    },
  });

  new Gauge({
    name: 'vexil_events_discarded',
    help: 'Analytics events discarded since start, by reason (spec: Evaluation API rule 5)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      for (const [reason, count] of Object.entries(services.usage.discardCounts())) {
        this.set({ reason }, count);
      }
    },
  });

  new Gauge({
    name: 'vexil_webhook_deliveries',
    help: 'Webhook deliveries by status (Pending is the queue depth)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      // While the database is away the last counts stand: /metrics must answer through outages.
      const rows = await services.db
        .selectFrom('webhook_deliveries')
        .select(['status', (eb) => eb.fn.countAll().as('count')])
        .groupBy('status')
        .execute()
        .catch(() => undefined);
      if (!rows) return;
      this.reset();
      for (const status of ['Pending', 'Succeeded', 'DeadLettered']) {
        this.set({ status }, Number(rows.find((row) => row.status === status)?.count ?? 0));
      }
    },
  });

  /** Whether the database answers `select 1` within {@link PROBE_TIMEOUT_MS}. */
  async function databaseAnswers(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
    });
    const probe = sql`select 1`.execute(services.db).then(
      () => true,
      () => false,
    );
    const answered = await Promise.race([probe, timeout]);
    clearTimeout(timer);
    return answered && state.databasePrepared();
  }

  // Liveness: always 200 while the process answers; "degraded" lists what it is doing without
  // (design record 019).
  app.get('/healthz', { schema: { hide: true } }, async () => {
    const reasons: string[] = [];
    if (!(await databaseAnswers()))
      reasons.push(
        'database unavailable: evaluations served from held configurations; management API answers 503',
      );
    const restored = snapshots.restoredCount();
    if (restored > 0)
      reasons.push(`serving ${restored} environment(s) from snapshot copies on disk`);
    if (state.perNodeRateLimits())
      reasons.push('Redis unavailable: management rate limits counted per node');
    return reasons.length === 0 ? { status: 'ok' } : { status: 'degraded', reasons };
  });

  // Readiness: an evaluation node stays in rotation through a database outage while it has
  // configurations to serve.
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (!state.accepting) return reply.status(503).send({ status: 'shutting down' });
    if (await databaseAnswers()) return { status: 'ready' };
    if (state.evaluates && (await snapshots.canServeWithoutDatabase()))
      return { status: 'degraded', reason: 'database unavailable: serving held configurations' };
    return reply.status(503).send({ status: 'database unavailable' });
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
  return requestDurations;
}
