import { identifyCaller } from '../auth/credentials.js';
import { registerConsole } from '../console/serve.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { LiveFeed } from '../events/live-feed.js';
import type { App } from '../http/app-instance.js';
import { managementErrorHandler } from '../http/envelope.js';
import { databaseUnavailable } from '../errors.js';
import { registerIdempotency } from '../api/idempotency.js';
import { rejectNulCharacters } from '../http/nul-guard.js';
import type { ManagementRateLimiter } from '../http/rate-limit.js';
import { forbidStoring } from '../http/response-headers.js';
import { answerUnmatchedRequests } from '../http/unmatched-routes.js';
import { registerManagementApi } from './management-api.js';
import { registerMcpApi } from '../mcp/routes.js';
import type { Services } from '../services.js';
import { registerFirstRunRoutes } from '../sign-in/first-run.js';
import { registerPasswordResetRoutes } from '../sign-in/password-reset.js';
import { registerSignInRoutes } from '../sign-in/routes.js';
import { registerSsoRoutes } from '../sign-in/sso.js';

/** What the management role needs from the node around it. */
export interface ManagementRoleOptions {
  services: Services;
  snapshots: SnapshotStore;
  liveFeed: LiveFeed;
  limiter: ManagementRateLimiter;
  /** Whether migrations have run: until then the management API answers 503. */
  databasePrepared: () => boolean;
}

/**
 * The management role: the management API (`/api/v1`), browser sign-in (`/auth`), the MCP tool
 * server (`/mcp`) and the web console (design records 011, 022, 023).
 */
export async function registerManagementRole(
  app: App,
  options: ManagementRoleOptions,
): Promise<void> {
  const { services, snapshots, liveFeed, limiter } = options;
  const { config, clock } = services;
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
          if (!options.databasePrepared()) throw databaseUnavailable();
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
