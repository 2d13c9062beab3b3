import { Type } from 'typebox';
import { checkPasswordsEnabled, hashPassword, passwordMatches } from '../../auth/passwords.js';
import { endSessions } from '../../auth/sessions.js';
import type { App } from '../../http/app-instance.js';
import { invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { scopedRoutes } from '../../api/scope.js';

/**
 * `POST /api/v1/me/password`: a person changes their own password (design record 034). The
 * current one is checked, and counted as a sign-in attempt is; the new one must be strong
 * enough. Their other sessions end; the one that made the change (if any) stays.
 */
export function registerMyPasswordRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/me/password',
    'user',
    {
      schema: {
        tags: ['me'],
        body: Type.Object(
          {
            currentPassword: Type.String({ maxLength: 1024 }),
            newPassword: Type.String({ maxLength: 1024 }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async ({ caller }, request, reply) => {
      checkPasswordsEnabled(services.config);
      const email = caller.email.toLowerCase();
      await services.attempts.take('password', email, request.ip);
      const user = await services.db
        .selectFrom('users')
        .select('password_hash')
        .where('id', '=', caller.id)
        .executeTakeFirstOrThrow();
      if (!(await passwordMatches(request.body.currentPassword, user.password_hash)))
        throw invalidField(
          'currentPassword',
          user.password_hash === null
            ? 'you have no password yet; set one with "Forgot password?" on the sign-in page'
            : 'is not your current password',
        );
      await services.attempts.forgive('password', email);
      const passwordHash = await hashPassword(request.body.newPassword, 'newPassword', [
        caller.email,
        caller.name,
      ]);
      const now = services.clock.now();
      await services.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('users')
          .set({ password_hash: passwordHash })
          .where('id', '=', caller.id)
          .execute();
        await endSessions(trx, caller.id, now, caller.via === 'session' ? caller.tokenId : null);
      });
      return reply.status(204).send();
    },
  );
}
