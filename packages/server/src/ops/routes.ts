import { sql } from 'kysely';
import { Registry, collectDefaultMetrics, Gauge, Histogram } from 'prom-client';
import type { App } from '../app.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { Services } from '../services.js';

/** What `/readyz` and `/metrics` look at. */
export interface OpsState {
  /** False once shutdown has begun: load balancers stop sending traffic before the listener closes. */
  accepting: boolean;
}

/**
 * Operations endpoints for load balancers and monitoring (design record 010):
 * `/healthz` (liveness: the process answers), `/readyz` (readiness: accepting and the database
 * answers; 503 otherwise), `/metrics` (Prometheus text format).
 */
export function registerOpsRoutes(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  state: OpsState,
): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const requestDuration = new Histogram({
    name: 'vexil_http_request_duration_seconds',
    help: 'HTTP request duration by route, method and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    requestDuration.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
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
    name: 'vexil_webhook_deliveries',
    help: 'Webhook deliveries by status (Pending is the queue depth)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const rows = await services.db
        .selectFrom('webhook_deliveries')
        .select(['status', (eb) => eb.fn.countAll<number>().as('count')])
        .groupBy('status')
        .execute();
      this.reset();
      for (const status of ['Pending', 'Succeeded', 'DeadLettered']) {
        this.set({ status }, Number(rows.find((row) => row.status === status)?.count ?? 0));
      }
    },
  });

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

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
