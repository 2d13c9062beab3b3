import { sql } from 'kysely';
import { Registry, collectDefaultMetrics, Gauge, Histogram } from 'prom-client';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { App } from '../app.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { Services } from '../services.js';

/** What `/readyz` and `/metrics` look at. */
export interface OpsState {
  /** False once shutdown has begun: load balancers stop sending traffic before the listener closes. */
  accepting: boolean;
}

type DurationObserver = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

/**
 * An onResponse hook recording the request's duration under `route` and the route's method
 * (`null` or several: the request's), with one histogram child per method and status.
 */
function durationObserver(
  histogram: Histogram<'method' | 'route' | 'status'>,
  method: string | readonly string[] | null,
  route: string,
): DurationObserver {
  const children = new Map<string | number, Histogram.Internal<'method' | 'route' | 'status'>>();
  const fixedMethod = typeof method === 'string' ? method : null;
  return (request, reply, done) => {
    const requestMethod = fixedMethod ?? request.method;
    const status = reply.statusCode;
    // With a fixed method the status alone is the key, which needs no string building.
    const key = fixedMethod === null ? `${requestMethod} ${status}` : status;
    let child = children.get(key);
    if (child === undefined) {
      child = histogram.labels({ method: requestMethod, route, status: String(status) });
      children.set(key, child);
    }
    child.observe(reply.elapsedTime / 1000);
    done();
  };
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

  const requestDuration = new Histogram({
    name: 'vexil_http_request_duration_seconds',
    help: 'HTTP request duration by route, method and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // Each route gets its own onResponse hook that knows its labels and keeps the histogram child
  // per status, so a request costs one map read and one observation: labelling every observation
  // (building the `routeOptions` object, hashing the label set) was 2–3% of an evaluation's CPU.
  app.addHook('onRoute', (route) => {
    const observe = durationObserver(requestDuration, route.method, route.url);
    const existing = route.onResponse;
    route.onResponse = (
      existing === undefined ? [observe] : [existing, observe].flat()
    ) as typeof route.onResponse;
  });
  // Requests that matched no route, which have no route hooks.
  const unmatched = durationObserver(requestDuration, null, 'unmatched');
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
