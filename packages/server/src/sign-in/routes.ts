import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import { checkPasswordsEnabled, passwordMatches } from '../auth/passwords.js';
import { hashSecret } from '../auth/secrets.js';
import { checkCsrf, clearSessionCookies, SESSION_COOKIE, startSession } from '../auth/sessions.js';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';

/**
 * Browser sign-in under `/auth` (people-and-sign-in.md, Sign-in; design record 022): password
 * and sign-out; single sign-on is in `sso.ts`, password reset in `password-reset.ts`.
 */
export function registerSignInRoutes(app: App, services: Services): void {
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
      checkPasswordsEnabled(services.config);
      const email = request.body.email.toLowerCase();
      // Counted before the check, so that parallel guesses cannot pass the limit.
      await services.attempts.take('password', email, request.ip);
      const user = await services.db
        .selectFrom('users')
        .select(['id', 'password_hash'])
        .where('email', '=', email)
        .executeTakeFirst();
      if (!(await passwordMatches(request.body.password, user?.password_hash ?? null)) || !user)
        throw new ApiError('unauthorized', 'The e-mail address or the password is wrong.');
      await services.attempts.forgive('password', email);
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
