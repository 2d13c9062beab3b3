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
    return noteUse(
      services,
      await authenticate(services.db, request.headers.authorization, now),
      now,
    );
  }
  const caller = await authenticateSession(services.db, services.config, secret, now);
  checkCsrf(request, services.config, secret);
  return noteUse(services, caller, now);
}

/**
 * Notes the caller's request for the tokens' `lastUsedAt` and the people's `lastSeenAt`,
 * written with the next usage flush rather than per request (design record 048). A session's
 * own last use is kept by the session, which needs it for the idle limit.
 * @returns the caller, unchanged
 */
export function noteUse(services: Pick<Services, 'usage'>, caller: Caller, now: Date): Caller {
  const atMs = now.getTime();
  if (caller.type === 'service_token' || caller.via === 'token')
    services.usage.recordTokenUse(caller.tokenId, atMs);
  if (caller.type === 'user') services.usage.recordUserSeen(caller.id, atMs);
  return caller;
}
