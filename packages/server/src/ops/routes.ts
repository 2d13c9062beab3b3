import { sql } from 'kysely';
import { Registry, collectDefaultMetrics, Gauge } from 'prom-client';
import type { App } from '../app.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { Services } from '../services.js';
import { RequestDurations } from './request-durations.js';

/** What `/readyz` and `/metrics` look at. */
export interface OpsState {
  /** False once shutdown has begun: load balancers stop sending traffic before the listener closes. */
  accepting: boolean;
}

/**
 * Operations endpoints for load balancers and monitoring (design record 010):
 * `/healthz` (liveness: the process answers), `/readyz` (readiness: accepting and the database
 * answers; 503 otherwise), `/metrics` (Prometheus text format). Register it before any other
 * route: request durations are recorded for the routes added after it (and for unmatched requests).
 */
export function registerOpsRoutes(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  state: OpsState,
): void {
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
      const rows = await services.db
        .selectFrom('webhook_deliveries')
        .select(['status', (eb) => eb.fn.countAll().as('count')])
        .groupBy('status')
        .execute();
      this.reset();
      for (const status of ['Pending', 'Succeeded', 'DeadLettered']) {
        this.set({ status }, Number(rows.find((row) => row.status === status)?.count ?? 0));
      }
    },
  });

  app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (!state.accepting) return reply.status(503).send({ status: 'shutting down' });
    try {
      await sql`select 1`.execute(services.db);
      return { status: 'ready' };
    } catch {
      return reply.status(503).send({ status: 'database unavailable' });
    }
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
}
