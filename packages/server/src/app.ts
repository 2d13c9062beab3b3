import fastifyCookie from '@fastify/cookie';
import fastifySwagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { inject, type InjectOptions, type Response as InjectedResponse } from 'light-my-request';
import type { RequestListener } from 'node:http';
import { createAttemptCounter } from './auth/attempts.js';
import { identifyCaller } from './auth/credentials.js';
import { IdentityProviders } from './auth/oidc.js';
import { secretsKey } from './auth/secrets-key.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { migrate, openDatabase, type Database } from './db/database.js';
import { DatabaseStartup } from './db/startup.js';
import { NodeBus } from './bus/node-bus.js';
import { LiveFeed } from './events/live-feed.js';
import { clusterWorkerRelay } from './bus/worker-relay.js';
import { allowBrowserCalls } from './evaluation/cors.js';
import { leanLane } from './evaluation/lean-lane.js';
import {
  EVALUATION_PREFIX,
  evaluationAnswers,
  leanRoutes,
  registerEvaluationApi,
} from './evaluation/routes.js';
import { registerOfrepApi } from './evaluation/ofrep.js';
import { SdkAuthenticator } from './evaluation/sdk-authenticator.js';
import { SdkKeyResolver } from './evaluation/sdk-keys.js';
import { SnapshotCopies } from './evaluation/snapshot-copies.js';
import { SnapshotStore } from './evaluation/snapshots.js';
import { EventHub } from './events/hub.js';
import type { App } from './http/app-instance.js';
import { clientErrorHandler } from './http/client-errors.js';
import { errorReferencePage, managementErrorHandler } from './http/envelope.js';
import { databaseUnavailable } from './http/errors.js';
import { frameworkErrorHandler } from './http/framework-errors.js';
import { registerIdempotency } from './http/idempotency.js';
import { parseJsonBody } from './http/json-body.js';
import { loggerOptions, RequestLogController } from './http/logging.js';
import { BODY_LIMITS, limitedJsonParser, limitBodies } from './http/request-limits.js';
import { rejectNulCharacters } from './http/nul-guard.js';
import { createManagementRateLimiter } from './http/rate-limit.js';
import { schemaCompiler } from './http/schema-validator.js';
import { forbidSniffing, forbidStoring } from './http/response-headers.js';
import { answerUnmatchedRequests } from './http/unmatched-routes.js';
import { registerConsole } from './console/serve.js';
import { Mailer } from './mail/mailer.js';
import { documentJsonSchema, DOCUMENT_SCHEMA_PATH } from './management/flags-as-code/document.js';
import { registerManagementApi } from './management/routes.js';
import { registerMcpApi } from './mcp/routes.js';
import { registerOpsRoutes, type OpsState } from './ops/routes.js';
import { trackUnusedConnections } from './ops/unused-connections.js';
import type { Services } from './services.js';
import { registerFirstRunRoutes } from './sign-in/first-run.js';
import { registerPasswordResetRoutes } from './sign-in/password-reset.js';
import { registerSignInRoutes } from './sign-in/routes.js';
import { registerSsoRoutes } from './sign-in/sso.js';
import { DueWorkRunner } from './schedules/due-work.js';
import { scheduledChangeRequests } from './management/change-requests/due-work.js';
import { SigningSecretVault } from './webhooks/secrets-at-rest.js';
import { fanOutTo } from './webhooks/fan-out.js';
import { DeliveryWorker } from './webhooks/worker.js';
import { UsageAggregator } from './usage/aggregator.js';

/** What one `vexil serve` process runs (design record 010): by default everything. */
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

const JSON_TYPES = /^(text\/json|application\/json|application\/[\w.+-]+\+json)\s*(;.*)?$/i;

/**
 * The composition root, used by the CLI and by the tests: opens the database, applies
 * migrations, and wires the management API (`/api/v1`) and the evaluation API (`/v1`).
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
  const database = options.database ?? openDatabase(config.databaseUrl);
  const signingSecrets = new SigningSecretVault(
    secretsKey(config, database.dialect),
    config.previousSecretsKey,
  );
  const clock = options.clock ?? systemClock;
  const usage = new UsageAggregator(database.db, (error) =>
    app.log.error(
      { err: error },
      'usage counts not written or pruned; unwritten counts kept for the next flush',
    ),
  );
  // The event seam (design record 018): what mutations write reaches its consumers from here.
  const events = new EventHub();
  const onDeliveriesQueued = () => bus.deliveriesQueued();
  events.onWrittenTogether(fanOutTo(onDeliveriesQueued));
  events.onCommitted(({ environmentIds }) => bus.configChanged(environmentIds));
  // The console's live feed (design record 026): changes committed here and on other nodes.
  const liveFeed = new LiveFeed();
  events.onWritten(liveFeed.onWritten);
  const services: Services = {
    db: database.db,
    dialect: database.dialect,
    config,
    clock,
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

  // Bodies are validated strictly (no coercion: a null `enabled` must not become false);
  // query strings and path parameters are strings on the wire and are coerced.
  const compileBody = schemaCompiler({ coerceTypes: false, useDefaults: true });
  const compileQuery = schemaCompiler({ coerceTypes: true, useDefaults: true });

  const app = Fastify({
    logger: options.logger === false ? false : loggerOptions(config.logLevel, options.logStream),
    logController: new RequestLogController(),
    bodyLimit: BODY_LIMITS.management,
    frameworkErrors: frameworkErrorHandler(config.publicUrl),
    clientErrorHandler: clientErrorHandler(config.publicUrl),
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? compileBody : compileQuery)(schema),
  );
  // Every JSON body, `application/json` included, is checked against the JSON limits; our parser
  // says where a body that is not JSON goes wrong (line, column), where Fastify's only says that.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    JSON_TYPES,
    { parseAs: 'string' },
    limitedJsonParser((_request, body, done) => {
      try {
        done(null, parseJsonBody(body));
      } catch (error) {
        done(error as Error, undefined);
      }
    }),
  );
  app.decorateRequest('caller', null);
  forbidSniffing(app);
  const copies = config.snapshotCacheDir
    ? new SnapshotCopies(config.snapshotCacheDir, config.databaseUrl, app.log)
    : undefined;
  const snapshots = new SnapshotStore(database.db, { copies, log: app.log });
  const sdkKeys = new SdkKeyResolver(database.db, copies);
  // Migrations and sealing are not a condition of serving evaluations (design record 019).
  const startup = new DatabaseStartup(async () => {
    await migrate(database);
    await signingSecrets.sealStoredSecrets(database.db);
  }, app.log);
  const bus = new NodeBus(
    database.db,
    database.dialect === 'postgres' ? config.databaseUrl : undefined,
    snapshots,
    sdkKeys,
    app.log,
    config.snapshotCheckIntervalMs,
    database.dialect === 'sqlite' && options.clusterWorker === true
      ? clusterWorkerRelay()
      : undefined,
  );
  liveFeed.relayTo((change) => bus.liveChange(change));
  bus.onLiveChange((change) => liveFeed.publish(change));
  const roles = new Set(options.roles ?? SERVICE_ROLES);
  const rateLimits = await createManagementRateLimiter(config.rateLimit, config.redisUrl, app.log);
  const { limiter } = rateLimits;
  const ops: OpsState = {
    accepting: true,
    databasePrepared: () => startup.ready,
    evaluates: roles.has('evaluation'),
    perNodeRateLimits: rateLimits.perNodeFallback,
    clusterWorker: options.clusterWorker === true,
  };
  const closeUnusedConnections = trackUnusedConnections(app.server);
  const requestDurations = registerOpsRoutes(app, services, snapshots, ops);
  // The node's request listener is the lean lane's when this node evaluates (set below), which
  // hands everything else to Fastify's own listener.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- a plain function: removeListener needs it as registered
  const fastifyListener: RequestListener = app.routing;
  let listener = fastifyListener;

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Vexil',
        version: 'v1',
        description: 'Vexil feature flag service: management and evaluation APIs.',
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'Personal access token or service token',
          },
          sdkKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'SDK key' },
        },
      },
    },
  });

  await app.register(fastifyCookie);
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  // The flags-as-code document schema, where exported documents' `$schema` points (design record 027).
  app.get(DOCUMENT_SCHEMA_PATH, { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/schema+json').send(documentJsonSchema()),
  );
  app.get('/docs/errors', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(errorReferencePage()),
  );

  if (roles.has('management')) {
    await app.register(
      (management, _options, done) => {
        management.setErrorHandler(managementErrorHandler(config.publicUrl));
        forbidStoring(management);
        // Management bodies are JSON only (spec: Conventions): text/plain is a 415, not a string.
        management.removeContentTypeParser('text/plain');
        answerUnmatchedRequests(management);
        management.addHook('onRequest', async (request, reply) => {
          const now = clock.now();
          let failure: { error: unknown } | null = null;
          try {
            if (!startup.ready) throw databaseUnavailable();
            request.caller = await identifyCaller(services, request, now);
          } catch (error) {
            failure = { error };
          }
          // Unauthenticated requests are counted per client IP, so credential guessing is bounded.
          const key = request.caller ? `token:${request.caller.tokenId}` : `ip:${request.ip}`;
          await limiter.consume(key, reply, now.getTime());
          if (failure) throw failure.error;
        });
        management.addHook('preValidation', rejectNulCharacters);
        registerIdempotency(management, services);
        registerManagementApi(management, services, snapshots, liveFeed);
        done();
      },
      { prefix: '/api/v1' },
    );
    // Browser sign-in (design record 022): same error envelope as the management API.
    await app.register(
      (signIn, _options, done) => {
        signIn.setErrorHandler(managementErrorHandler(config.publicUrl));
        forbidStoring(signIn);
        // JSON only, as the management API: a cross-site form cannot post a sign-in.
        signIn.removeContentTypeParser('text/plain');
        signIn.addHook('preValidation', rejectNulCharacters);
        registerSignInRoutes(signIn, services);
        registerFirstRunRoutes(signIn, services);
        registerSsoRoutes(signIn, services);
        registerPasswordResetRoutes(signIn, services);
        done();
      },
      { prefix: '/auth' },
    );
    // The AI-agent tool server: its tools call the management API in-process (design record 011).
    await app.register(
      (mcp, _options, done) => {
        registerMcpApi(mcp, { services, snapshots, limiter });
        done();
      },
      { prefix: '/mcp' },
    );
    // The web console, a client of the management API (design record 023).
    await registerConsole(app);
  }

  if (roles.has('evaluation')) {
    const sdk = new SdkAuthenticator(sdkKeys, snapshots, clock, usage);
    const answers = evaluationAnswers(services, sdk);
    await app.register(
      async (evaluation) => {
        limitBodies(evaluation, BODY_LIMITS.evaluation);
        await allowBrowserCalls(evaluation);
        registerEvaluationApi(evaluation, services, snapshots, sdk, bus, answers);
      },
      { prefix: EVALUATION_PREFIX },
    );
    // The hot routes leave Fastify's request lifecycle (design record 030).
    listener = leanLane(
      leanRoutes(answers, compileBody, requestDurations),
      { bodyLimit: BODY_LIMITS.evaluation, accepting: () => ops.accepting, log: app.log },
      fastifyListener,
    );
    await app.register(
      async (ofrep) => {
        limitBodies(ofrep, BODY_LIMITS.evaluation);
        await allowBrowserCalls(ofrep);
        registerOfrepApi(ofrep, services, sdk);
      },
      { prefix: '/ofrep/v1' },
    );
  }

  app.setNotFoundHandler(async (request, reply) =>
    reply.status(404).send({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: `No route ${request.method} ${request.url.split('?')[0]}.`,
    }),
  );

  const webhookWorker = new DeliveryWorker(services, app.log);
  bus.onDeliveriesQueued(() => webhookWorker.wake());
  const dueWork = new DueWorkRunner(clock, app.log);
  dueWork.register(scheduledChangeRequests(services));
  await startup.start(() => {
    // Snapshots restored from copies while the database was away are read afresh.
    snapshots.invalidateAll();
    // Each process flushes its own counts (the upserts add); pruning is a background job, run by
    // the processes that run the webhook worker (design record 029).
    usage.start(config.usageFlushIntervalMs, roles.has('worker') ? config.usageRetentionMs : null);
    if (options.startWorkers !== false && roles.has('worker')) {
      webhookWorker.start();
      dueWork.start();
    }
  });
  await bus.start();
  await app.ready();
  app.server.removeListener('request', fastifyListener);
  app.server.on('request', listener);

  return {
    app,
    services,
    snapshots,
    webhookWorker,
    dueWork,
    inject: (injected) => inject(listener, injected),
    async close() {
      // Readiness fails first so load balancers stop routing here; then the listener stops
      // accepting and in-flight requests finish; the worker records its attempts in flight.
      ops.accepting = false;
      startup.stop();
      const closing = app.close();
      closeUnusedConnections();
      await closing;
      await webhookWorker.stop();
      await dueWork.stop();
      await bus.stop();
      // After the last request, before the database closes: the final counts are written.
      await usage.close();
      await rateLimits.close();
      services.attempts.close();
      await services.mailer?.close();
      await services.identityProviders.close();
      await database.close();
    },
  };
}
