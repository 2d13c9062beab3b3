import fastifyCookie from '@fastify/cookie';
import fastifySwagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Caller } from './auth/caller.js';
import { identifyCaller } from './auth/credentials.js';
import { secretsKey } from './auth/secrets-key.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { migrate, openDatabase, type Database } from './db/database.js';
import { ChangeFeed } from './evaluation/change-feed.js';
import { allowBrowserCalls } from './evaluation/cors.js';
import { registerEvaluationApi } from './evaluation/routes.js';
import { registerOfrepApi } from './evaluation/ofrep.js';
import { EvaluationQuietLogController } from './evaluation/request-logging.js';
import { SdkKeyResolver } from './evaluation/sdk-keys.js';
import { SnapshotStore } from './evaluation/snapshots.js';
import { errorReferencePage, managementErrorHandler } from './http/envelope.js';
import { ApiError } from './http/errors.js';
import { frameworkErrorHandler } from './http/framework-errors.js';
import { registerIdempotency } from './http/idempotency.js';
import { loggerOptions } from './http/logging.js';
import { rejectNulCharacters } from './http/nul-guard.js';
import { createManagementRateLimiter } from './http/rate-limit.js';
import { InvitationMailer } from './mail/invitation-mailer.js';
import { registerManagementApi } from './management/routes.js';
import { registerMcpApi } from './mcp/routes.js';
import { registerOpsRoutes, type OpsState } from './ops/routes.js';
import { trackUnusedConnections } from './ops/unused-connections.js';
import type { Services } from './services.js';
import { registerSignInRoutes } from './sign-in/routes.js';
import { SigningSecretVault } from './webhooks/secrets-at-rest.js';
import { DeliveryWorker } from './webhooks/worker.js';
import { UsageAggregator } from './usage/aggregator.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

// ajv-formats is CommonJS with a default export; under NodeNext it arrives wrapped.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export type App = FastifyInstance<
  Server,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

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
  close(): Promise<void>;
}

const JSON_TYPES = /^(text\/json|application\/[\w.+-]+\+json)\s*(;.*)?$/i;

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
  } = {},
): Promise<Vexil> {
  const database = options.database ?? openDatabase(config.databaseUrl);
  await migrate(database);
  const signingSecrets = new SigningSecretVault(
    secretsKey(config, database.dialect),
    config.previousSecretsKey,
  );
  await signingSecrets.sealStoredSecrets(database.db);
  const clock = options.clock ?? systemClock;
  const snapshots = new SnapshotStore(database.db);
  const sdkKeys = new SdkKeyResolver(database.db);
  const usage = new UsageAggregator(database.db, (error) =>
    app.log.error(
      { err: error },
      'usage counts not written or pruned; unwritten counts kept for the next flush',
    ),
  );
  const services: Services = {
    db: database.db,
    dialect: database.dialect,
    config,
    clock,
    onConfigChange: (ids) => changeFeed.configChanged(ids),
    onDeliveriesQueued: () => changeFeed.deliveriesQueued(),
    onSdkKeyRevoked: (hash) => changeFeed.keyRevoked(hash),
    usage,
    signingSecrets,
    mailer: config.smtpUrl
      ? new InvitationMailer(config.smtpUrl, config.smtpFrom, (failure, error) =>
          app.log[failure.willRetry ? 'warn' : 'error'](
            { ...failure, err: error },
            failure.willRetry
              ? 'invitation e-mail not sent; will retry'
              : 'invitation e-mail not sent; giving up (the inviter has the link)',
          ),
        )
      : null,
  };

  // Bodies are validated strictly (no coercion: a null `enabled` must not become false);
  // query strings and path parameters are strings on the wire and are coerced.
  const bodyAjv = addFormats(
    new Ajv({ allErrors: true, coerceTypes: false, useDefaults: true, strict: false }),
  );
  const queryAjv = addFormats(
    new Ajv({ allErrors: true, coerceTypes: true, useDefaults: true, strict: false }),
  );

  const app = Fastify({
    logger: options.logger === false ? false : loggerOptions(config.logLevel, options.logStream),
    logController: new EvaluationQuietLogController(),
    bodyLimit: 1024 * 1024,
    frameworkErrors: frameworkErrorHandler(config.publicUrl),
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : queryAjv).compile(schema),
  );
  app.addContentTypeParser(
    JSON_TYPES,
    { parseAs: 'string' },
    app.getDefaultJsonParser('error', 'error'),
  );
  app.decorateRequest('caller', null);
  const changeFeed = new ChangeFeed(
    database.db,
    database.dialect === 'postgres' ? config.databaseUrl : undefined,
    snapshots,
    sdkKeys,
    app.log,
    config.snapshotCheckIntervalMs,
  );
  const roles = new Set(options.roles ?? SERVICE_ROLES);
  const ops: OpsState = { accepting: true };
  const closeUnusedConnections = trackUnusedConnections(app.server);
  registerOpsRoutes(app, services, snapshots, ops);

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
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/docs/errors', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(errorReferencePage()),
  );

  const { limiter, close: closeLimiter } = await createManagementRateLimiter(
    config.rateLimit,
    config.redisUrl,
  );
  if (roles.has('management')) {
    await app.register(
      async (management) => {
        management.setErrorHandler(managementErrorHandler(config.publicUrl));
        // Management bodies are JSON only (spec: Conventions): text/plain is a 415, not a string.
        management.removeContentTypeParser('text/plain');
        management.setNotFoundHandler(async (request) => {
          throw new ApiError(
            'not_found',
            `No route ${request.method} ${request.url.split('?')[0]}.`,
          );
        });
        management.addHook('onRequest', async (request, reply) => {
          const now = clock.now();
          let failure: unknown = null;
          try {
            request.caller = await identifyCaller(services, request, now);
          } catch (error) {
            failure = error;
          }
          // Unauthenticated requests are counted per client IP, so credential guessing is bounded.
          const key = request.caller ? `token:${request.caller.tokenId}` : `ip:${request.ip}`;
          await limiter.consume(key, reply, now.getTime());
          if (failure) throw failure;
        });
        management.addHook('preValidation', rejectNulCharacters);
        registerIdempotency(management, services);
        await registerManagementApi(management, services);
      },
      { prefix: '/api/v1' },
    );
    // Browser sign-in (design record 022): same error envelope as the management API.
    await app.register(
      async (signIn) => {
        signIn.setErrorHandler(managementErrorHandler(config.publicUrl));
        // JSON only, as the management API: a cross-site form cannot post a sign-in.
        signIn.removeContentTypeParser('text/plain');
        signIn.addHook('preValidation', rejectNulCharacters);
        registerSignInRoutes(signIn, services);
      },
      { prefix: '/auth' },
    );
    // The AI-agent tool server: its tools call the management API in-process (design record 011).
    await app.register(async (mcp) => registerMcpApi(mcp, { services, snapshots, limiter }), {
      prefix: '/mcp',
    });
  }

  if (roles.has('evaluation')) {
    await app.register(
      async (evaluation) => {
        await allowBrowserCalls(evaluation);
        await registerEvaluationApi(evaluation, services, snapshots, sdkKeys, changeFeed);
      },
      { prefix: '/v1' },
    );
    await app.register(
      async (ofrep) => {
        await allowBrowserCalls(ofrep);
        await registerOfrepApi(ofrep, services, snapshots, sdkKeys);
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

  usage.start(config.usageFlushIntervalMs, config.usageRetentionMs);
  const webhookWorker = new DeliveryWorker(services, app.log);
  changeFeed.onDeliveriesQueued(() => webhookWorker.wake());
  if (options.startWorkers !== false && roles.has('worker')) webhookWorker.start();
  await changeFeed.start();

  return {
    app,
    services,
    snapshots,
    webhookWorker,
    async close() {
      // Readiness fails first so load balancers stop routing here; then the listener stops
      // accepting and in-flight requests finish; the worker records its attempts in flight.
      ops.accepting = false;
      const closing = app.close();
      closeUnusedConnections();
      await closing;
      await webhookWorker.stop();
      await changeFeed.stop();
      // After the last request, before the database closes: the final counts are written.
      await usage.close();
      await closeLimiter();
      await services.mailer?.close();
      await database.close();
    },
  };
}
