import { Type } from 'typebox';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { App } from '../http/app-instance.js';
import { passwordMatches } from '../auth/passwords.js';
import { hashSecret } from '../auth/secrets.js';
import { checkCsrf, clearSessionCookies, SESSION_COOKIE, startSession } from '../auth/sessions.js';
import { ApiError } from '../http/errors.js';
import type { Services } from '../services.js';

/** A client IP may fail this many times the per-address allowance (many people share one NAT). */
const IP_ALLOWANCE = 10;

/**
 * Browser sign-in under `/auth` (people-and-sign-in.md, Sign-in; design record 022): password
 * and sign-out; single sign-on is in `sso.ts`.
 */
export function registerSignInRoutes(app: App, services: Services): void {
  const { attempts } = services.config.signIn;
  // Failed attempts only: per address, and per client IP with room for a shared office address.
  const failures = {
    email: new RateLimiterMemory({ points: attempts.points, duration: attempts.windowSeconds }),
    ip: new RateLimiterMemory({
      points: attempts.points * IP_ALLOWANCE,
      duration: attempts.windowSeconds,
    }),
  };

  /** @throws ApiError `rate_limited` (429) while the address or the IP has no attempts left. */
  async function checkAttemptsLeft(email: string, ip: string): Promise<void> {
    for (const [limiter, key, points] of [
      [failures.email, email, attempts.points],
      [failures.ip, ip, attempts.points * IP_ALLOWANCE],
    ] as const) {
      const spent = await limiter.get(key);
      if (spent && spent.consumedPoints >= points) {
        const retryAfter = Math.max(1, Math.ceil(spent.msBeforeNext / 1000));
        throw new ApiError('rate_limited', `Too many failed sign-ins. Retry in ${retryAfter} s.`, {
          retryAfter,
        });
      }
    }
  }

  async function countFailure(email: string, ip: string): Promise<void> {
    await Promise.all([failures.email.penalty(email, 1), failures.ip.penalty(ip, 1)]);
  }

  app.post(
    '/password',
    {
      schema: {
        tags: ['sign-in'],
        body: Type.Object(
          {
            email: Type.String({ minLength: 1, maxLength: 320 }),
            password: Type.String({ maxLength: 1024 }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      if (!services.config.signIn.passwordEnabled)
        throw new ApiError(
          'sign_in_disabled',
          'Password sign-in is switched off on this instance.',
        );
      const email = request.body.email.toLowerCase();
      await checkAttemptsLeft(email, request.ip);
      const user = await services.db
        .selectFrom('users')
        .select(['id', 'password_hash'])
        .where('email', '=', email)
        .executeTakeFirst();
      if (!(await passwordMatches(request.body.password, user?.password_hash ?? null)) || !user) {
        await countFailure(email, request.ip);
        throw new ApiError('unauthorized', 'The e-mail address or the password is wrong.');
      }
      const now = services.clock.now();
      await services.db.transaction().execute(async (trx) => {
        await startSession(trx, services.config, reply, {
          userId: user.id,
          ssoConnectionId: null,
          request,
          now,
        });
        await trx
          .updateTable('users')
          .set({ last_seen_at: now.toISOString() })
          .where('id', '=', user.id)
          .execute();
      });
      return reply.status(204).send();
    },
  );

  app.post('/logout', { schema: { tags: ['sign-in'] } }, async (request, reply) => {
    const secret = request.cookies[SESSION_COOKIE];
    if (secret) {
      checkCsrf(request, services.config, secret);
      await services.db
        .updateTable('sessions')
        .set({ revoked_at: services.clock.now().toISOString() })
        .where('secret_hash', '=', hashSecret(secret))
        .where('revoked_at', 'is', null)
        .execute();
    }
    clearSessionCookies(reply);
    return reply.status(204).send();
  });
}
