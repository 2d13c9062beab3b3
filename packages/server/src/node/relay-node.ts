import type { InjectOptions, Response as InjectedResponse } from 'light-my-request';
import { Gauge } from 'prom-client';
import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import { SnapshotCopies } from '../evaluation/snapshot-copies.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { App } from '../http/app-instance.js';
import { registerEvaluationRole } from './evaluation-role.js';
import { answerUnknownRoutes, createHttpApp } from './http-app.js';
import { NodeLife } from './node-life.js';
import { registerNodeOpsRoutes, type NodeHealth } from '../ops/routes.js';
import { UsageAggregator } from '../usage/aggregator.js';
import { ExposureRecorder } from '../usage/exposures.js';
import { registerDownstreamRoutes } from '../relay/downstream.js';
import { UpstreamFollower, type UpstreamProblem } from '../relay/upstream-follower.js';
import { UpstreamSource } from '../relay/upstream-source.js';
import { UpstreamBackingOff, UpstreamUsageStore } from '../relay/upstream-usage.js';

/** A running relay (`vexil relay`, design record 044). */
export interface VexilRelay {
  app: App;
  snapshots: SnapshotStore;
  source: UpstreamSource;
  follower: UpstreamFollower;
  usage: UsageAggregator;
  /** Sends a request through the relay's request listener, as `Vexil.inject` does. */
  inject(options: InjectOptions): Promise<InjectedResponse>;
  close(): Promise<void>;
}

/** What a relay follows, and how its parts are set up. */
export interface RelayOptions {
  /** The upstream's base address (a full node or another relay). */
  upstreamUrl: string;
  /** `VEXIL_RELAY_KEY`: `vxr_…`. */
  relayKey: string;
  clock?: Clock;
  logger?: boolean;
  logStream?: NodeJS.WritableStream;
  /** The first reconnect delay (ms); tests shorten it. */
  initialBackoffMs?: number;
  /** Whether this process is a worker of `vexil relay --workers`: `/metrics` answers for all. */
  clusterWorker?: boolean;
}

/**
 * The composition root of a relay (design record 044): a node with the evaluation role alone,
 * whose source is an upstream Vexil followed over the relay feed instead of a database. It serves
 * every evaluation route as the upstream would, the relay feed to relays that follow it, and
 * `/healthz`, `/readyz`, `/metrics`; everything else is a 404 naming the upstream. It starts from
 * its copies on disk when it has good ones, and follows the upstream in the background.
 */
export async function createRelayNode(config: Config, options: RelayOptions): Promise<VexilRelay> {
  const { upstreamUrl, relayKey } = options;
  const { app, compileBody } = createHttpApp(config, options);
  const clock = options.clock ?? systemClock;
  const copies = config.snapshotCacheDir
    ? new SnapshotCopies(config.snapshotCacheDir, `relay:${upstreamUrl}`, app.log)
    : undefined;
  const source = new UpstreamSource(copies, app.log);
  await source.restoreFromCopies();
  const follower = new UpstreamFollower({
    upstreamUrl,
    relayKey,
    source,
    log: app.log,
    clock,
    initialBackoffMs: options.initialBackoffMs,
  });
  const usageStore = new UpstreamUsageStore({
    upstreamUrl,
    relayKey,
    intervalMs: config.usageFlushIntervalMs,
    clock,
    onRefused: (status, detail) =>
      app.log.error({ status, detail }, 'usage refused by the upstream; dropped'),
  });
  const usage = new UsageAggregator(
    usageStore,
    (error) => {
      if (!(error instanceof UpstreamBackingOff))
        app.log.warn({ err: error }, 'usage not sent upstream; kept for the next flush');
    },
    // The upstream's answers name its guarded release plans; their exposures go up with usage.
    new ExposureRecorder(usageStore),
  );
  const services = { config, clock, usage };

  const life = new NodeLife(app);
  const requestDurations = registerNodeOpsRoutes(app, {
    usage,
    snapshots: source.snapshots,
    clusterWorker: options.clusterWorker === true,
    health: relayHealth(upstreamUrl, source, follower, clock, () => life.accepting),
    metrics: (registry) => {
      new Gauge({
        name: 'vexil_relay_upstream_connected',
        help: '1 while the relay follows its upstream, else 0',
        registers: [registry],
        aggregator: 'min',
        collect() {
          this.set(follower.following() ? 1 : 0);
        },
      });
      new Gauge({
        name: 'vexil_relay_data_age_seconds',
        help: 'Seconds since the relay last heard from its upstream (0 while it follows it)',
        registers: [registry],
        aggregator: 'max',
        collect() {
          this.set((follower.dataAgeMs(clock.now().getTime()) ?? 0) / 1000);
        },
      });
      new Gauge({
        name: 'vexil_relay_usage_refused',
        help: 'Evaluation and custom-event counts the upstream refused and the relay dropped',
        registers: [registry],
        aggregator: 'sum',
        collect() {
          this.set(usageStore.refusedCounts);
        },
      });
    },
  });

  const listener = await registerEvaluationRole(app, {
    services,
    source,
    compileBody,
    durations: requestDurations,
    accepting: () => life.accepting,
    fallback: life.fastifyListener,
    extraRoutes: (evaluation) =>
      registerDownstreamRoutes(evaluation, {
        services,
        source,
        follower,
        relayKey,
        upstreamUrl,
        keepAliveMs: config.streamHeartbeatMs,
      }),
  });
  answerUnknownRoutes(
    app,
    (path, method) =>
      `No route ${method} ${path} on this relay: it serves the evaluation API only. ` +
      `The management API, /mcp and the console are served by its upstream, ${upstreamUrl}.`,
  );

  usage.start(config.usageFlushIntervalMs, null);
  follower.start();
  await life.serve(listener);

  return {
    app,
    snapshots: source.snapshots,
    source,
    follower,
    usage,
    inject: (injected) => life.inject(injected),
    close: () =>
      life.close(
        () => follower.stop(),
        // The last counts go upstream if it answers; a relay keeps nothing on disk.
        () => usage.close(),
      ),
  };
}

/**
 * A relay's health: `degraded` with the reason and the age of its data while it does not follow
 * its upstream; ready while it has configurations to serve (spec: relay, upstream unreachable).
 */
function relayHealth(
  upstreamUrl: string,
  source: UpstreamSource,
  follower: UpstreamFollower,
  clock: Clock,
  accepting: () => boolean,
): NodeHealth {
  const describe = (problem: UpstreamProblem): string => {
    const age = follower.dataAgeMs(clock.now().getTime());
    const held =
      age === undefined
        ? 'serving configurations from snapshot copies on disk'
        : `serving configurations last heard from the upstream ${Math.round(age / 1000)} s ago`;
    const what =
      problem.kind === 'revoked' || problem.kind === 'keyRefused'
        ? `relay key refused by the upstream ${upstreamUrl}`
        : problem.kind === 'incompatible'
          ? `upstream ${upstreamUrl} does not speak the relay protocol`
          : `upstream ${upstreamUrl} unreachable`;
    return `${what} since ${new Date(problem.sinceMs).toISOString()} (${problem.detail}); ${held}; retrying`;
  };
  return {
    degradedReasons() {
      const reasons: string[] = [];
      const problem = follower.problem();
      if (problem) reasons.push(describe(problem));
      else if (source.restoredCount() > 0)
        reasons.push(
          `serving ${source.restoredCount()} environment(s) from snapshot copies on disk`,
        );
      // Not once the upstream was heard from: it may cover no environment at all.
      if (!source.hasConfigurations() && follower.dataAgeMs(clock.now().getTime()) === undefined)
        reasons.push('no configuration received yet');
      return Promise.resolve(reasons);
    },
    readiness() {
      if (!accepting())
        return Promise.resolve({ statusCode: 503, body: { status: 'shutting down' } });
      if (!source.hasConfigurations() && !follower.following())
        return Promise.resolve({
          statusCode: 503,
          body: { status: `no configuration yet: waiting for the upstream ${upstreamUrl}` },
        });
      const problem = follower.problem();
      return Promise.resolve(
        problem
          ? { statusCode: 200, body: { status: 'degraded', reason: describe(problem) } }
          : { statusCode: 200, body: { status: 'ready' } },
      );
    },
  };
}
