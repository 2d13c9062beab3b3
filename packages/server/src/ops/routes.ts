import { sql } from 'kysely';
import { Registry, collectDefaultMetrics, Gauge } from 'prom-client';
import { exportOverOtlp } from '../telemetry/metrics.js';
import type { UsageAggregator } from '../usage/aggregator.js';
import type { App } from '../http/app-instance.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { Services } from '../services.js';
import { ProblemError, problemErrorHandler } from '../evaluation/problem.js';
import { ClusterWorkerMetrics, NodeMetricsUnavailable } from './cluster-metrics.js';
import { RequestDurations } from '../http/request-durations.js';

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
  /** Whether this process is a worker of `vexil serve --workers`: `/metrics` answers for the whole node. */
  clusterWorker: boolean;
  /** How many relays follow this process now (open relay feeds, design record 045). */
  relayFeeds: () => number;
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
  return registerNodeOpsRoutes(app, {
    usage: services.usage,
    snapshots,
    clusterWorker: state.clusterWorker,
    health: databaseHealth(services, snapshots, state),
    metrics: (registry) => {
      webhookDeliveryGauge(registry, services);
      new Gauge({
        name: 'vexil_relay_feeds_open',
        help: 'Relays following this node now: its open relay feeds',
        registers: [registry],
        aggregator: 'sum',
        collect() {
          this.set(state.relayFeeds());
        },
      });
    },
  });
}

/** What `/healthz` and `/readyz` say of a node: by its database, or a relay by its upstream. */
export interface NodeHealth {
  /** Why the node is degraded (empty when it is not): `/healthz`. */
  degradedReasons(): Promise<string[]>;
  /** `/readyz`: the status code and body. */
  readiness(): Promise<{ statusCode: 200 | 503; body: Record<string, unknown> }>;
}

/** What every node's operations routes look at. */
export interface NodeOpsOptions {
  usage: Pick<UsageAggregator, 'flushLagSeconds' | 'discardCounts'>;
  snapshots: SnapshotStore;
  clusterWorker: boolean;
  health: NodeHealth;
  /** Registers the node's own metrics. */
  metrics?: (registry: Registry) => void;
}

/**
 * The operations routes of any node, the health checks given by `options.health`.
 * @returns the request-duration histogram, for routes served outside Fastify (design record 030)
 */
export function registerNodeOpsRoutes(app: App, options: NodeOpsOptions): RequestDurations {
  const { usage, snapshots } = options;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const stopExporting = exportOverOtlp(registry);
  app.addHook('onClose', (_instance, done) => {
    stopExporting();
    done();
  });

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
    // Across the workers of a node: the one furthest behind.
    aggregator: 'min',
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
    // Across the workers of a node: the oldest.
    aggregator: 'max',
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
    // Each worker flushes its own counts: the node lags as much as its slowest worker.
    aggregator: 'max',
    collect() {
      this.set(usage.flushLagSeconds(Date.now()));
    },
  });

  new Gauge({
    name: 'vexil_events_discarded',
    help: 'Analytics events discarded since start, by reason (spec: Evaluation API rule 5)',
    labelNames: ['reason'],
    registers: [registry],
    // Each worker counts its own discards.
    aggregator: 'sum',
    collect() {
      for (const [reason, count] of Object.entries(usage.discardCounts())) {
        this.set({ reason }, count);
      }
    },
  });

  options.metrics?.(registry);

  // Liveness: always 200 while the process answers; "degraded" lists what it is doing without
  // (design record 019).
  app.get('/healthz', { schema: { hide: true } }, async () => {
    const reasons = await options.health.degradedReasons();
    return reasons.length === 0 ? { status: 'ok' } : { status: 'degraded', reasons };
  });

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const { statusCode, body } = await options.health.readiness();
    return reply.status(statusCode).send(body);
  });

  // Under `--workers`, a scrape reaches one worker, which answers for the node (design record 029).
  const workerMetrics = options.clusterWorker ? new ClusterWorkerMetrics(registry) : undefined;
  if (workerMetrics !== undefined) {
    app.addHook('onClose', (_instance, done) => {
      workerMetrics.stop();
      done();
    });
  }
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (workerMetrics === undefined)
      return reply.type(registry.contentType).send(await registry.metrics());
    let nodeMetrics: string;
    try {
      nodeMetrics = await workerMetrics.nodeMetrics();
    } catch (error) {
      if (!(error instanceof NodeMetricsUnavailable)) throw error;
      request.log.warn({ err: error }, 'node metrics not collected');
      return problemErrorHandler(
        new ProblemError(503, 'Service Unavailable', error.message),
        request,
        reply,
      );
    }
    return reply.type(registry.contentType).send(nodeMetrics);
  });
  return requestDurations;
}

/** The webhook delivery queue's depth and outcomes, read from the database. */
function webhookDeliveryGauge(registry: Registry, services: Services): void {
  new Gauge({
    name: 'vexil_webhook_deliveries',
    help: 'Webhook deliveries by status (Pending is the queue depth)',
    labelNames: ['status'],
    registers: [registry],
    // Read from the database, which every worker shares: the same figures from each.
    aggregator: 'first',
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
}

/**
 * The health of a node with a database: `/readyz` is ready while the database answers and
 * migrations have run, or, on an evaluation node, while it has configurations to serve.
 */
function databaseHealth(services: Services, snapshots: SnapshotStore, state: OpsState): NodeHealth {
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

  return {
    async degradedReasons() {
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
      return reasons;
    },
    // Readiness: an evaluation node stays in rotation through a database outage while it has
    // configurations to serve.
    async readiness() {
      if (!state.accepting) return { statusCode: 503, body: { status: 'shutting down' } };
      if (await databaseAnswers()) return { statusCode: 200, body: { status: 'ready' } };
      if (state.evaluates && (await snapshots.canServeWithoutDatabase()))
        return {
          statusCode: 200,
          body: { status: 'degraded', reason: 'database unavailable: serving held configurations' },
        };
      return { statusCode: 503, body: { status: 'database unavailable' } };
    },
  };
}
