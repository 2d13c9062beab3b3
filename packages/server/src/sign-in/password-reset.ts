import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import { checkPasswordsEnabled, hashPassword } from '../auth/passwords.js';
import { generateSecret, hashSecret } from '../auth/secrets.js';
import { endSessions } from '../auth/sessions.js';
import type { App } from '../http/app-instance.js';
import { invalidField } from '../errors.js';
import type { Services } from '../services.js';

/**
 * Resetting a forgotten password by e-mail under `/auth` (design record 034).
 *
 * `POST /auth/password-reset` answers 202 whether or not the address belongs to anyone, and
 * e-mails a link only when it does and `VEXIL_SMTP_URL` is set (off the request path). The link
 * holds a random token, stored as its hash, that works once, for `VEXIL_PASSWORD_RESET_LIFETIME`;
 * a newer link replaces older ones. `POST /auth/password-reset/complete` sets the new password
 * and ends every session of the person.
 */
export function registerPasswordResetRoutes(app: App, services: Services): void {
  app.post(
    '/password-reset',
    {
      schema: {
        tags: ['sign-in'],
        body: Type.Object(
          { email: Type.String({ minLength: 1, maxLength: 320 }) },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      checkPasswordsEnabled(services.config);
      const email = request.body.email.toLowerCase();
      await services.attempts.take('reset', email, request.ip);
      const { mailer } = services;
      if (!mailer) {
        // Nobody but the person may see the link: without SMTP there is no way to hand it on.
        request.log.warn('password reset not sent: VEXIL_SMTP_URL is not set');
        return reply.status(202).send();
      }
      const user = await services.db
        .selectFrom('users')
        .select('id')
        .where('email', '=', email)
        .executeTakeFirst();
      if (!user) return reply.status(202).send();
      const token = generateSecret('vxl_pwr');
      const now = services.clock.now();
      const expiresAt = new Date(now.getTime() + services.config.signIn.passwordResetLifetimeMs);
      const id = uuid();
      await services.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('password_resets').where('user_id', '=', user.id).execute();
        await trx
          .insertInto('password_resets')
          .values({
            id,
            user_id: user.id,
            token_hash: hashSecret(token),
            created_at: now.toISOString(),
            expires_at: expiresAt.toISOString(),
            used_at: null,
          })
          .execute();
      });
      const link = `${services.config.publicUrl}/reset-password#token=${token}`;
      mailer.send({
        about: `password reset ${id}`,
        to: email,
        subject: 'Reset your Vexil password',
        text: [
          `Someone, hopefully you, asked to reset the password of ${email} on Vexil.`,
          '',
          `Choose a new password: ${link}`,
          '',
          `The link works once and expires at ${expiresAt.toISOString()}. If you did not ask, ignore this e-mail: your password stays as it is.`,
        ].join('\n'),
      });
      return reply.status(202).send();
    },
  );

  app.post(
    '/password-reset/complete',
    {
      schema: {
        tags: ['sign-in'],
        body: Type.Object(
          {
            token: Type.String({ minLength: 1, maxLength: 200 }),
            newPassword: Type.String({ maxLength: 1024 }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      checkPasswordsEnabled(services.config);
      const tokenHash = hashSecret(request.body.token);
      const now = services.clock.now().toISOString();
      const unusable = () =>
        invalidField('token', 'is unknown, used already or expired; ask for a new link');
      const reset = await services.db
        .selectFrom('password_resets')
        .innerJoin('users', 'users.id', 'password_resets.user_id')
        .select(['users.id', 'users.email', 'users.name'])
        .where('token_hash', '=', tokenHash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (!reset) throw unusable();
      // Checked before the link is used up, so that a refused password does not cost the link.
      const passwordHash = await hashPassword(request.body.newPassword, 'newPassword', [
        reset.email,
        reset.name,
      ]);
      await services.db.transaction().execute(async (trx) => {
        // Taken, not read: of two uses at once, one finds it used.
        const taken = await trx
          .updateTable('password_resets')
          .set({ used_at: now })
          .where('token_hash', '=', tokenHash)
          .where('used_at', 'is', null)
          .returning('id')
          .executeTakeFirst();
        if (!taken) throw unusable();
        // Whoever opened the link controls the mailbox: the address is verified.
        await trx
          .updateTable('users')
          .set({ password_hash: passwordHash, email_verified: 1 })
          .where('id', '=', reset.id)
          .execute();
        await endSessions(trx, reset.id, new Date(now));
      });
      await services.attempts.forgive('password', reset.email);
      return reply.status(204).send();
    },
  );
}
