import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerCredential } from '../auth/caller.js';
import { SESSION_COOKIE } from '../auth/sessions.js';
import { deriveKey, seal, unseal } from '../auth/sealing.js';
import { isUniqueViolation } from '../db/unique.js';
import type { Services } from '../services.js';
import { ApiError, invalidField } from '../errors.js';

/** How long a completed request's response is replayed (design record 004). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * A key whose first request started this long ago and never finished (the process died
 * mid-request) is considered abandoned and may run again, rather than answering 409 for a day.
 */
export const ABANDONED_AFTER_MS = 60 * 1000;
export const MAX_KEY_LENGTH = 255;

const HEADER = 'idempotency-key';

/** The row a request owns while it runs; its response is stored on send. */
interface Claim {
  callerId: string;
  route: string;
  key: string;
  /** Seals the stored response; derived from the caller's credential, which is never stored. */
  sealingKey: Buffer;
}

/** What a stored response is bound to: a sealed body copied to another row does not open. */
function rowIdentity(claim: Claim): string {
  return JSON.stringify([claim.callerId, claim.route, claim.key]);
}

const claims = new WeakMap<FastifyRequest, Claim>();

/**
 * Whether the route creates a resource: a POST whose schema answers 201 or 202. Only these
 * honour `Idempotency-Key`; on other routes the header is ignored.
 */
function createsResource(request: FastifyRequest): boolean {
  if (request.method !== 'POST') return false;
  const responses = request.routeOptions.schema?.response as Record<string, unknown> | undefined;
  return responses !== undefined && ('201' in responses || '202' in responses);
}

/** The request's identity for "same body": query and body, hashed. */
function requestHash(request: FastifyRequest): string {
  return createHash('sha256')
    .update(JSON.stringify([request.query ?? null, request.body ?? null]))
    .digest('hex');
}

/**
 * `Idempotency-Key` for the management API's create calls (spec: Conventions; design record
 * 004). Register once on the management plugin, after authentication:
 *
 * - the first request with a key claims it (a row with a null status; the primary key
 *   `(caller_id, route, key)` decides between concurrent requests) and runs;
 * - a 2xx response is stored, and a retry within 24 h with the same body replays its status
 *   and body with `idempotent-replayed: true`, without running the handler again. The body is
 *   sealed with a key derived from the caller's credential (design record 015): it may hold a
 *   created token or secret, and the database alone must not yield it;
 * - a 4xx/5xx response releases the key, so a corrected retry can run;
 * - the same key with a different body is 422 `idempotency_key_reused`; while the first
 *   request still runs, a second is 409 `idempotency_key_in_use`; a key over 255 characters
 *   is 400 `validation_failed`.
 */
export function registerIdempotency(app: FastifyInstance, services: Services): void {
  app.addHook('preHandler', async (request, reply) => {
    const header = request.headers[HEADER];
    const credential =
      request.caller?.type === 'user' && request.caller.via === 'session'
        ? request.cookies[SESSION_COOKIE]
        : bearerCredential(request.headers.authorization);
    if (header === undefined || !request.caller || !credential || !createsResource(request)) return;
    const key = Array.isArray(header) ? header.join(',') : header;
    if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
      throw invalidField('Idempotency-Key', `must be 1 to ${MAX_KEY_LENGTH} characters`);
    }
    const claim: Claim = {
      callerId: request.caller.tokenId,
      route: `POST ${request.url.split('?')[0]}`,
      key,
      sealingKey: deriveKey(credential, 'idempotent-responses'),
    };
    const hash = requestHash(request);
    const now = services.clock.now();
    await releaseStale(services, claim.callerId, now);
    try {
      await services.db
        .insertInto('idempotency_keys')
        .values({
          caller_id: claim.callerId,
          route: claim.route,
          key,
          request_hash: hash,
          response_status: null,
          response_body: null,
          created_at: now.toISOString(),
        })
        .execute();
      claims.set(request, claim);
      return;
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
    }
    return replay(services, claim, hash, reply);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = claims.get(request);
    if (!claim) return payload;
    claims.delete(request);
    const match = { caller_id: claim.callerId, route: claim.route, key: claim.key };
    if (reply.statusCode >= 200 && reply.statusCode < 300) {
      const body = typeof payload === 'string' || Buffer.isBuffer(payload) ? String(payload) : null;
      await services.db
        .updateTable('idempotency_keys')
        .set({
          response_status: reply.statusCode,
          response_body: body === null ? null : seal(claim.sealingKey, body, rowIdentity(claim)),
        })
        .where((eb) => eb.and(match))
        .execute();
    } else {
      await services.db
        .deleteFrom('idempotency_keys')
        .where((eb) => eb.and(match))
        .execute();
    }
    return payload;
  });
}

/** Forgets the caller's expired keys and abandoned claims, so the table stays bounded. */
async function releaseStale(services: Services, callerId: string, now: Date): Promise<void> {
  const expired = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS).toISOString();
  const abandoned = new Date(now.getTime() - ABANDONED_AFTER_MS).toISOString();
  await services.db
    .deleteFrom('idempotency_keys')
    .where('caller_id', '=', callerId)
    .where((eb) =>
      eb.or([
        eb('created_at', '<=', expired),
        eb.and([eb('response_status', 'is', null), eb('created_at', '<=', abandoned)]),
      ]),
    )
    .execute();
}

/** Answers a request whose key is already claimed: replay, or 409/422. */
async function replay(
  services: Services,
  claim: Claim,
  hash: string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const row = await services.db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('caller_id', '=', claim.callerId)
    .where('route', '=', claim.route)
    .where('key', '=', claim.key)
    .executeTakeFirst();
  if (!row) {
    // The first request failed and released the key between our insert and this read.
    throw new ApiError('idempotency_key_in_use', 'The Idempotency-Key was just released; retry.');
  }
  if (row.request_hash !== hash) {
    throw new ApiError(
      'idempotency_key_reused',
      'This Idempotency-Key was used with a different request body.',
    );
  }
  if (row.response_status === null) {
    throw new ApiError(
      'idempotency_key_in_use',
      'A request with this Idempotency-Key is still running; retry shortly.',
    );
  }
  return reply
    .status(row.response_status)
    .header('idempotent-replayed', 'true')
    .type('application/json; charset=utf-8')
    .send(
      row.response_body === null
        ? undefined
        : unseal(claim.sealingKey, row.response_body, rowIdentity(claim)),
    );
}
