import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Config } from '../config.js';
import type { Schema, SessionsTable } from '../db/schema.js';
import { ApiError } from '../errors.js';
import type { UserCaller } from './caller.js';
import { generateSecret, hashSecret, secretMatches } from './secrets.js';

/**
 * Browser sessions (people-and-sign-in.md, Sign-in; design record 022). The cookie holds a random
 * secret; the database holds its SHA-256, so sessions can be listed and revoked. A second,
 * readable cookie carries the CSRF token, which is derived from the secret and so needs no row.
 */
export const SESSION_COOKIE = 'vexil_session';
export const CSRF_COOKIE = 'vexil_csrf';
export const CSRF_HEADER = 'x-csrf-token';

/** Writes are refused less than this long after the previous one (ms): no write per request. */
const LAST_SEEN_PRECISION_MS = 60_000;

/** The CSRF token of the session whose cookie holds `secret`. */
export function csrfToken(secret: string): string {
  return createHash('sha256').update(`vexil/csrf/${secret}`).digest('base64url');
}

/**
 * Starts a session for `userId` and sets its cookies on `reply`. `ssoConnectionId` marks a
 * session that came through an organization's identity provider.
 */
export async function startSession(
  db: Kysely<Schema> | Transaction<Schema>,
  config: Config,
  reply: FastifyReply,
  input: { userId: string; ssoConnectionId: string | null; request: FastifyRequest; now: Date },
): Promise<SessionsTable> {
  const secret = generateSecret('vxl_ses');
  const now = input.now.toISOString();
  const row: SessionsTable = {
    id: uuid(),
    secret_hash: hashSecret(secret),
    user_id: input.userId,
    sso_connection_id: input.ssoConnectionId,
    user_agent: input.request.headers['user-agent']?.slice(0, 500) ?? null,
    ip: input.request.ip,
    created_at: now,
    last_seen_at: now,
    expires_at: new Date(input.now.getTime() + config.signIn.sessionLifetimeMs).toISOString(),
    revoked_at: null,
  };
  await db.insertInto('sessions').values(row).execute();
  const secure = config.publicUrl.startsWith('https:');
  const maxAge = Math.floor(config.signIn.sessionLifetimeMs / 1000);
  void reply.setCookie(SESSION_COOKIE, secret, {
    httpOnly: true,
    sameSite: 'lax',
    secure,
    path: '/',
    maxAge,
  });
  void reply.setCookie(CSRF_COOKIE, csrfToken(secret), {
    httpOnly: false,
    sameSite: 'lax',
    secure,
    path: '/',
    maxAge,
  });
  return row;
}

/**
 * Ends `userId`'s open sessions, all but `keep` (the session that made the change): a new
 * password must shut out whoever knew the old one (issue 31, finding 6).
 */
export async function endSessions(
  db: Kysely<Schema> | Transaction<Schema>,
  userId: string,
  now: Date,
  keep: string | null = null,
): Promise<void> {
  let query = db
    .updateTable('sessions')
    .set({ revoked_at: now.toISOString() })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (keep !== null) query = query.where('id', '!=', keep);
  await query.execute();
}

/** Clears the session cookies on `reply`. */
export function clearSessionCookies(reply: FastifyReply): void {
  void reply.clearCookie(SESSION_COOKIE, { path: '/' });
  void reply.clearCookie(CSRF_COOKIE, { path: '/' });
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Checks that a state-changing request authenticated by the cookie comes from the console's own
 * origin: `Origin` must be the public URL's origin; without `Origin`, the `X-CSRF-Token` header
 * must carry the session's CSRF token (spec: Sign-in, CSRF).
 * @throws ApiError `csrf_rejected` (403).
 */
export function checkCsrf(request: FastifyRequest, config: Config, secret: string): void {
  if (!UNSAFE_METHODS.has(request.method)) return;
  const origin = request.headers.origin;
  if (origin !== undefined) {
    if (origin === new URL(config.publicUrl).origin) return;
    throw new ApiError(
      'csrf_rejected',
      `Requests signed in by cookie must come from ${new URL(config.publicUrl).origin}.`,
    );
  }
  const sent = request.headers[CSRF_HEADER];
  const expected = Buffer.from(csrfToken(secret));
  if (
    typeof sent === 'string' &&
    sent.length === expected.length &&
    timingSafeEqual(Buffer.from(sent), expected)
  )
    return;
  throw new ApiError(
    'csrf_rejected',
    `Send the ${CSRF_COOKIE} cookie's value in the X-CSRF-Token header, or an Origin header.`,
  );
}

/**
 * Resolves a session cookie to its user, and records that the session was used.
 * @throws ApiError `unauthorized` (401) when the session is unknown, revoked, idle too long or
 *   past its absolute lifetime.
 */
export async function authenticateSession(
  db: Kysely<Schema>,
  config: Config,
  secret: string,
  now: Date,
): Promise<UserCaller> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .leftJoin('sso_connections', 'sso_connections.id', 'sessions.sso_connection_id')
    .select([
      'sessions.id',
      'sessions.secret_hash',
      'sessions.sso_connection_id',
      'sessions.last_seen_at',
      'sessions.expires_at',
      'sessions.revoked_at',
      'users.id as user_id',
      'users.email',
      'users.name',
      'users.email_verified',
      'sso_connections.organization_id as sso_organization_id',
    ])
    .where('sessions.secret_hash', '=', hashSecret(secret))
    .executeTakeFirst();
  if (!row || !secretMatches(secret, row.secret_hash))
    throw new ApiError('unauthorized', 'The session is not valid; sign in again.');
  if (row.revoked_at) throw new ApiError('unauthorized', 'The session has ended; sign in again.');
  const lastSeen = new Date(row.last_seen_at).getTime();
  if (new Date(row.expires_at) <= now || lastSeen + config.signIn.sessionIdleMs <= now.getTime())
    throw new ApiError('unauthorized', 'The session has expired; sign in again.');
  if (now.getTime() - lastSeen >= LAST_SEEN_PRECISION_MS) {
    const at = now.toISOString();
    await db.updateTable('sessions').set({ last_seen_at: at }).where('id', '=', row.id).execute();
  }
  return {
    type: 'user',
    via: 'session',
    tokenId: row.id,
    id: row.user_id,
    email: row.email,
    name: row.name,
    emailVerified: row.email_verified === 1,
    ssoConnectionId: row.sso_connection_id,
    ssoOrganizationId: row.sso_organization_id,
  };
}
