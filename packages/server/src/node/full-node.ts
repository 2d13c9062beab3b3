import type { InjectOptions, Response as InjectedResponse } from 'light-my-request';
import { createAttemptCounter } from '../auth/attempts.js';
import { IdentityProviders } from '../auth/oidc.js';
import { secretsKey } from '../auth/secrets-key.js';
import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import { migrate, openDatabase, type Database } from '../db/database.js';
import { DatabaseStartup } from '../db/startup.js';
import { LiveFeed } from '../events/live-feed.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import { EventHub } from '../events/hub.js';
import type { App } from '../http/app-instance.js';
import { errorReferencePage } from '../http/envelope.js';
import { createManagementRateLimiter } from '../http/rate-limit.js';
import { Mailer } from '../mail/mailer.js';
import { documentJsonSchema, DOCUMENT_SCHEMA_PATH } from '../writes/document.js';
import { databaseSource } from './database-source.js';
import { registerEvaluationRole } from './evaluation-role.js';
import { NodeLife } from './node-life.js';
import { answerUnknownRoutes, createHttpApp, registerOpenApi } from './http-app.js';
import { registerManagementRole } from './management-role.js';
import { workerRole } from './worker-role.js';
import { registerOpsRoutes, type OpsState } from '../ops/routes.js';
import type { Services } from '../services.js';
import type { DueWorkRunner } from '../schedules/due-work.js';
import { SigningSecretVault } from '../webhooks/secrets-at-rest.js';
import { fanOutTo } from '../webhooks/fan-out.js';
import type { DeliveryWorker } from '../webhooks/worker.js';
import { DatabaseUsageStore, UsageAggregator } from '../usage/aggregator.js';
import { DatabaseExposureStore } from '../usage/exposure-store.js';
import { ExposureRecorder } from '../usage/exposures.js';
import { announceToRelayFeeds } from '../relay-feed/feed-signals.js';
import { registerRelayApi } from '../relay-feed/routes.js';

/** What one `vexil serve` process runs (design records 010, 044): by default everything. */
export type ServiceRole = 'management' | 'evaluation' | 'worker';
export const SERVICE_ROLES: readonly ServiceRole[] = ['management', 'evaluation', 'worker'];

/** A running composition of the service: the HTTP app, its services, and how to stop them. */
export interface Vexil {
  app: App;
  services: Services;
  snapshots: SnapshotStore;
  /** The webhook delivery worker; tests drive it with `runOnce()`. */
  webhookWorker: DeliveryWorker;
  /** Scheduled work (design record 041); tests drive it with `runOnce()`. */
  dueWork: DueWorkRunner;
  /**
   * Sends a request through the node's request listener without a socket (light-my-request), as
   * a client's request arrives: the lean lane first, then Fastify (design record 030). Fastify's
   * own `app.inject` would skip the lane.
   */
  inject(options: InjectOptions): Promise<InjectedResponse>;
  close(): Promise<void>;
}

/**
 * The composition root of a node with a database, used by the CLI and by the tests (design
 * record 044): the node is its roles — management, evaluation, worker — around one database,
 * its services and one HTTP app. A relay (`relay/relay-node.ts`) is the evaluation role alone,
 * following an upstream instead of a database.
 */
export async function createVexil(
  config: Config,
  options: {
    clock?: Clock;
    database?: Database;
    logger?: boolean;
    /** Where log lines go instead of standard output (tests capture them). */
    logStream?: NodeJS.WritableStream;
    startWorkers?: boolean;
    roles?: readonly ServiceRole[];
    /**
     * Whether this process is a worker of `vexil serve --workers` (design record 029): on
     * SQLite, which has no LISTEN/NOTIFY, its change notices go through the primary, and its
     * `/metrics` answers for the whole node.
     */
    clusterWorker?: boolean;
  } = {},
): Promise<Vexil> {
  const roles = new Set(options.roles ?? SERVICE_ROLES);
  const clusterWorker = options.clusterWorker === true;
  const database = options.database ?? openDatabase(config.databaseUrl);
  const { app, compileBody } = createHttpApp(config, options);

  // The services every role is given.
  const signingSecrets = new SigningSecretVault(
    secretsKey(config, database.dialect),
    config.previousSecretsKey,
  );
  const usage = new UsageAggregator(
    new DatabaseUsageStore(database.db),
    (error) =>
      app.log.error(
        { err: error },
        'usage counts not written or pruned; unwritten counts kept for the next flush',
      ),
    new ExposureRecorder(new DatabaseExposureStore(database.db)),
  );
  // The event seam (design record 018): what mutations write reaches its consumers from here.
  const events = new EventHub();
  const source = databaseSource(database, config, app.log, clusterWorker);
  const { bus, snapshots } = source;
  const onDeliveriesQueued = () => bus.deliveriesQueued();
  events.onWrittenTogether(fanOutTo(onDeliveriesQueued));
  events.onCommitted(({ environmentIds }) => bus.configChanged(environmentIds));
  events.onWritten(
    announceToRelayFeeds({
      environmentAccessChanged: (environmentId) => bus.environmentAccessChanged(environmentId),
      relayKeyRevoked: (relayKeyId) => bus.relayKeyRevoked(relayKeyId),
    }),
  );
  // The console's live feed (design record 026): changes committed here and on other nodes.
  const liveFeed = new LiveFeed();
  events.onWritten(liveFeed.onWritten);
  liveFeed.relayTo((change) => bus.liveChange(change));
  bus.onLiveChange((change) => liveFeed.publish(change));
  const services: Services = {
    db: database.db,
    dialect: database.dialect,
    config,
    clock: options.clock ?? systemClock,
    events,
    onDeliveriesQueued,
    onSdkKeyRevoked: (hash) => bus.keyRevoked(hash),
    usage,
    signingSecrets,
    identityProviders: new IdentityProviders(config.signIn.allowPrivateIssuers),
    mailer: config.smtpUrl
      ? new Mailer(config.smtpUrl, config.smtpFrom, (failure, error) =>
          app.log[failure.willRetry ? 'warn' : 'error'](
            { ...failure, err: error },
            failure.willRetry ? 'e-mail not sent; will retry' : 'e-mail not sent; giving up',
          ),
        )
      : null,
    attempts: createAttemptCounter(config.signIn.attempts, database, config.redisUrl),
  };
  // Migrations and sealing are not a condition of serving evaluations (design record 019).
  const startup = new DatabaseStartup(async () => {
    await migrate(database);
    await signingSecrets.sealStoredSecrets(database.db);
  }, app.log);
  const rateLimits = await createManagementRateLimiter(config.rateLimit, config.redisUrl, app.log);

  // Operations routes first: they time every route registered after them.
  const life = new NodeLife(app);
  const ops: OpsState = {
    get accepting() {
      return life.accepting;
    },
    databasePrepared: () => startup.ready,
    evaluates: roles.has('evaluation'),
    perNodeRateLimits: rateLimits.perNodeFallback,
    clusterWorker,
    relayFeeds: () => 0,
  };
  const requestDurations = registerOpsRoutes(app, services, snapshots, ops);
  await registerOpenApi(app);
  // The flags-as-code document schema, where exported documents' `$schema` points (design record 027).
  app.get(DOCUMENT_SCHEMA_PATH, { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/schema+json').send(documentJsonSchema()),
  );
  app.get('/docs/errors', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(errorReferencePage()),
  );

  // The roles. The node's request listener is the evaluation role's lean lane when it has that
  // role, which hands everything else to Fastify's own listener.
  let listener = life.fastifyListener;
  if (roles.has('management')) {
    await registerManagementRole(app, {
      services,
      snapshots,
      liveFeed,
      limiter: rateLimits.limiter,
      databasePrepared: () => startup.ready,
    });
  }
  if (roles.has('evaluation')) {
    listener = await registerEvaluationRole(app, {
      services,
      source,
      compileBody,
      durations: requestDurations,
      accepting: () => life.accepting,
      fallback: life.fastifyListener,
      // The upstream side of the relay protocol (design record 045).
      extraRoutes: (evaluation) => {
        ops.relayFeeds = registerRelayApi(evaluation, services, snapshots, bus);
      },
    });
  }
  answerUnknownRoutes(app);
  const worker = workerRole(services, bus, app.log);

  await startup.start(() => {
    // Snapshots restored from copies while the database was away are read afresh.
    snapshots.invalidateAll();
    // Each process flushes its own counts (the upserts add); pruning is a background job, run by
    // the processes that run the webhook worker (design record 029).
    usage.start(config.usageFlushIntervalMs, roles.has('worker') ? config.usageRetentionMs : null);
    if (options.startWorkers !== false && roles.has('worker')) worker.start();
  });
  await bus.start();
  await life.serve(listener);

  return {
    app,
    services,
    snapshots,
    webhookWorker: worker.webhookWorker,
    dueWork: worker.dueWork,
    inject: (injected) => life.inject(injected),
    async close() {
      startup.stop();
      await life.close(
        // The worker records its attempts in flight.
        () => worker.stop(),
        () => bus.stop(),
        // After the last request, before the database closes: the final counts are written.
        () => usage.close(),
        () => rateLimits.close(),
        () => services.attempts.close(),
        () => services.mailer?.close(),
        () => services.identityProviders.close(),
        () => database.close(),
      );
    },
  };
}
