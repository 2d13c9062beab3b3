import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import { hashPassword } from '../auth/passwords.js';
import { hashSecret } from '../auth/secrets.js';
import { startSession } from '../auth/sessions.js';
import type { Schema } from '../db/schema.js';
import { ApiError, invalidField } from '../errors.js';
import type { App } from '../http/app-instance.js';
import { KeySchema, NameSchema } from '../api/fields.js';
import type { Services } from '../services.js';

/**
 * The first run in the browser (design record 040). While an instance has no organization, each
 * node that starts prints a one-time setup code; whoever can read the server's output can then
 * create the first organization and its Owner at `/`, as Jenkins and Grafana do it. Setting up
 * deletes every code, and once an organization exists the setup is closed for good.
 */

/** Crockford's base32: no I, L, O or U, so that a code read off a terminal is typed right. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** Three groups of four characters: 60 bits, and attempts are rate limited besides. */
const GROUPS = 3;
const GROUP_LENGTH = 4;
/** Wrong setup codes one client IP may send per window. */
const ATTEMPTS = 10;
const ATTEMPT_WINDOW_SECONDS = 15 * 60;

/** A code as typed: case, spaces and dashes do not matter. */
function normalise(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, '');
}

/** Whether the instance still waits for its first organization. */
async function needsSetup(db: Kysely<Schema>): Promise<boolean> {
  const org = await db.selectFrom('organizations').select('id').limit(1).executeTakeFirst();
  return org === undefined;
}

/**
 * When the instance has no organization yet, stores a new one-time setup code and returns it
 * (`XXXX-XXXX-XXXX`) for the caller to print; otherwise `undefined`. Each node that starts
 * before the setup prints a code of its own, and any of them works.
 */
export async function openFirstRunSetup(
  db: Kysely<Schema>,
  now: Date,
): Promise<string | undefined> {
  if (!(await needsSetup(db))) return undefined;
  const characters = Array.from({ length: GROUPS * GROUP_LENGTH }, () =>
    ALPHABET.charAt(randomInt(ALPHABET.length)),
  ).join('');
  const groups = Array.from({ length: GROUPS }, (_, group) =>
    characters.slice(group * GROUP_LENGTH, (group + 1) * GROUP_LENGTH),
  );
  await db
    .insertInto('setup_codes')
    .values({ code_hash: hashSecret(characters), created_at: now.toISOString() })
    .execute();
  return groups.join('-');
}

const SetupBody = Type.Object(
  {
    setupCode: Type.String({ minLength: 1, maxLength: 64 }),
    orgSlug: KeySchema,
    orgName: NameSchema,
    email: Type.String({ format: 'email', maxLength: 320 }),
    name: NameSchema,
    password: Type.String({ maxLength: 1024 }),
  },
  { additionalProperties: false },
);

/**
 * `GET /auth/setup` (`{ required }`: whether the instance waits for its first organization) and
 * `POST /auth/setup`, which takes a setup code printed at start and creates the organization,
 * its Owner with a password, and a browser session for them (201 `{ org: { id, slug } }`).
 * Refusals: 409 `conflict` once an organization exists; 400 `validation_failed` on `setupCode`
 * for a wrong code; 429 after {@link ATTEMPTS} wrong codes from one address.
 */
export function registerFirstRunRoutes(app: App, services: Services): void {
  const wrongCodes = new RateLimiterMemory({
    points: ATTEMPTS,
    duration: ATTEMPT_WINDOW_SECONDS,
  });

  app.get(
    '/setup',
    {
      schema: {
        tags: ['sign-in'],
        response: { 200: Type.Object({ required: Type.Boolean() }) },
      },
    },
    async () => ({ required: await needsSetup(services.db) }),
  );

  app.post(
    '/setup',
    {
      schema: {
        tags: ['sign-in'],
        body: SetupBody,
        response: {
          201: Type.Object({ org: Type.Object({ id: Type.String(), slug: Type.String() }) }),
        },
      },
    },
    async (request, reply) => {
      const spent = await wrongCodes.get(request.ip);
      if (spent && spent.consumedPoints >= ATTEMPTS) {
        const retryAfter = Math.max(1, Math.ceil(spent.msBeforeNext / 1000));
        throw new ApiError(
          'rate_limited',
          `Too many wrong setup codes. Retry in ${retryAfter} s.`,
          {
            retryAfter,
          },
        );
      }
      const body = request.body;
      const passwordHash = await hashPassword(body.password, 'password', [
        body.email,
        body.name,
        body.orgName,
      ]);
      const now = services.clock.now();
      const org = { id: uuid(), slug: body.orgSlug };
      const outcome = await services.db.transaction().execute(async (trx) => {
        if (!(await needsSetup(trx))) return 'set up already';
        // Deleting every code makes one setup win a race: a second one finds nothing left.
        const deleted = await trx
          .deleteFrom('setup_codes')
          .where('code_hash', '=', hashSecret(normalise(body.setupCode)))
          .executeTakeFirst();
        if (deleted.numDeletedRows === 0n) return 'wrong code';
        await trx.deleteFrom('setup_codes').execute();
        const at = now.toISOString();
        const userId = uuid();
        await trx
          .insertInto('organizations')
          .values({
            ...org,
            name: body.orgName,
            plan: 'Enterprise',
            sso_required: 0,
            sso_connection_id: null,
            created_at: at,
            updated_at: at,
          })
          .execute();
        await trx
          .insertInto('users')
          .values({
            id: userId,
            email: body.email.toLowerCase(),
            name: body.name,
            email_verified: 0,
            password_hash: passwordHash,
            created_at: at,
            last_seen_at: at,
          })
          .execute();
        await trx
          .insertInto('memberships')
          .values({ organization_id: org.id, user_id: userId, role: 'Owner', created_at: at })
          .execute();
        await startSession(trx, services.config, reply, {
          userId,
          ssoConnectionId: null,
          request,
          now,
        });
        return 'created';
      });
      if (outcome === 'set up already')
        throw new ApiError('conflict', 'This instance is set up already: sign in instead.');
      if (outcome === 'wrong code') {
        await wrongCodes.penalty(request.ip, 1);
        throw invalidField('setupCode', 'is not a setup code this instance printed at start');
      }
      return reply.status(201).send({ org });
    },
  );
}
