import type { FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { authenticate, type Caller } from './caller.js';
import { authenticateSession, checkCsrf, SESSION_COOKIE } from './sessions.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route also answers callers without any credential (then `request.caller` is null). */
    public?: boolean;
  }
}

/**
 * The caller of a management request: the bearer token when `Authorization` is sent, else the
 * session cookie (with its CSRF check), else nobody on a public route.
 * @throws ApiError `unauthorized` (401) for a missing or invalid credential, `csrf_rejected`
 *   (403) for a cross-site change signed in by cookie.
 */
export async function identifyCaller(
  services: Services,
  request: FastifyRequest,
  now: Date,
): Promise<Caller | null> {
  const secret = request.cookies[SESSION_COOKIE];
  if (request.headers.authorization !== undefined || !secret) {
    if (request.headers.authorization === undefined && request.routeOptions.config.public)
      return null;
    return authenticate(services.db, request.headers.authorization, now);
  }
  const caller = await authenticateSession(services.db, services.config, secret, now);
  checkCsrf(request, services.config, secret);
  return caller;
}
