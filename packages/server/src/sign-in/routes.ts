import Negotiator from 'negotiator';
import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../http/app-instance.js';
import {
  beginSignIn,
  clientSecretBinding,
  finishSignIn,
  providerConfiguration,
} from '../auth/oidc.js';
import { checkPasswordsEnabled, passwordMatches } from '../auth/passwords.js';
import { hashSecret } from '../auth/secrets.js';
import { checkCsrf, clearSessionCookies, SESSION_COOKIE, startSession } from '../auth/sessions.js';
import { mutate } from '../db/mutate.js';
import type { SsoConnectionsTable } from '../db/schema.js';
import { ApiError, type ErrorCode, type ErrorDetail } from '../http/errors.js';
import { isUuid } from '../management/access.js';
import type { Services } from '../services.js';

/** How long a started OpenID Connect sign-in may take at the provider (ms). */
const SSO_SIGN_IN_WINDOW_MS = 10 * 60_000;

/**
 * Why a single sign-on was refused, in the words of the console's sign-in page, which a browser
 * is sent to as `/sign-in?error=<reason>` when the callback fails (design record 024).
 */
export type SsoRefusalReason =
  /** The callback's state is missing, unknown, used already or too old. */
  | 'sso_expired'
  /** The identity provider answered with an error (e.g. the person cancelled). */
  | 'sso_provider_error'
  /** The identity provider's answer failed a check (token, nonce, issuer…). */
  | 'sso_answer_refused'
  /** The identity provider could not be reached. */
  | 'sso_provider_unreachable'
  /** The connection is disabled. */
  | 'sso_disabled'
  /** The e-mail address is outside the connection's allowed domains. */
  | 'sso_domain_not_allowed'
  /** The identity provider has not verified the e-mail address. */
  | 'sso_email_unverified'
  /** Not a member, and the connection does not add people. */
  | 'sso_not_member'
  /** Anything else (logged). */
  | 'sso_failed';

/** An API error that also names its {@link SsoRefusalReason}, for a browser's redirect. */
class SsoRefusal extends ApiError {
  constructor(
    readonly reason: SsoRefusalReason,
    code: ErrorCode,
    message: string,
    detail?: ErrorDetail,
  ) {
    super(code, message, detail);
  }
}

/**
 * Whether a request prefers a JSON answer to a page: an API client that sends
 * `Accept: application/json`, rather than a browser following the identity provider's redirect.
 */
function prefersJson(request: { raw: ConstructorParameters<typeof Negotiator>[0] }): boolean {
  return (
    new Negotiator(request.raw).mediaType(['text/html', 'application/json']) === 'application/json'
  );
}

/**
 * Browser sign-in under `/auth` (people-and-sign-in.md, Sign-in; design record 022): password,
 * OpenID Connect through an organization's connection, and sign-out.
 */
export function registerSignInRoutes(app: App, services: Services): void {
  const callbackUrl = `${services.config.publicUrl}/auth/sso/callback`;

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

  app.get(
    '/sso/:org',
    { schema: { tags: ['sign-in'], params: Type.Object({ org: Type.String() }) } },
    async (request, reply) => {
      const { org: ref } = request.params;
      const connection = await services.db
        .selectFrom('organizations')
        .innerJoin('sso_connections', 'sso_connections.id', 'organizations.sso_connection_id')
        .selectAll('sso_connections')
        .where(isUuid(ref) ? 'organizations.id' : 'organizations.slug', '=', ref)
        .executeTakeFirst();
      if (!connection)
        throw new ApiError('not_found', `Organization "${ref}" has no single sign-on connection.`);
      checkEnabled(connection);
      const configuration = await discover(connection);
      const pending = await beginSignIn(configuration, callbackUrl);
      const now = services.clock.now();
      await services.db
        .deleteFrom('sso_sign_ins')
        .where('expires_at', '<=', now.toISOString())
        .execute();
      await services.db
        .insertInto('sso_sign_ins')
        .values({
          state_hash: hashSecret(pending.state),
          connection_id: connection.id,
          code_verifier: pending.codeVerifier,
          nonce: pending.nonce,
          expires_at: new Date(now.getTime() + SSO_SIGN_IN_WINDOW_MS).toISOString(),
        })
        .execute();
      return reply.redirect(pending.authorizationUrl.href, 302);
    },
  );

  app.get(
    '/sso/callback',
    {
      schema: {
        tags: ['sign-in'],
        querystring: Type.Object({
          state: Type.Optional(Type.String({ maxLength: 500 })),
          code: Type.Optional(Type.String({ maxLength: 4000 })),
          error: Type.Optional(Type.String({ maxLength: 500 })),
          error_description: Type.Optional(Type.String({ maxLength: 2000 })),
        }),
      },
    },
    async (request, reply) => {
      try {
        const { state, error, error_description: description } = request.query;
        if (!state)
          throw new SsoRefusal(
            'sso_expired',
            'sso_failed',
            'The callback carries no state; start again.',
          );
        // Taken, not read: a state (and the code that came with it) works once.
        const pending = await services.db
          .deleteFrom('sso_sign_ins')
          .where('state_hash', '=', hashSecret(state))
          .returningAll()
          .executeTakeFirst();
        const now = services.clock.now();
        if (!pending || new Date(pending.expires_at) <= now)
          throw new SsoRefusal(
            'sso_expired',
            'sso_failed',
            'This sign-in is unknown, was already used or took too long; start again.',
          );
        if (error)
          throw new SsoRefusal(
            'sso_provider_error',
            'sso_failed',
            `The identity provider refused the sign-in: ${error}${description ? ` (${description})` : ''}.`,
          );
        const connection = await services.db
          .selectFrom('sso_connections')
          .selectAll()
          .where('id', '=', pending.connection_id)
          .executeTakeFirstOrThrow();
        checkEnabled(connection);
        let identity;
        try {
          identity = await finishSignIn(
            await discover(connection),
            new URL(request.url, services.config.publicUrl),
            { state, nonce: pending.nonce, codeVerifier: pending.code_verifier },
          );
        } catch (failure) {
          throw new SsoRefusal(
            'sso_answer_refused',
            'sso_failed',
            `The identity provider's answer was refused: ${failure instanceof Error ? failure.message : String(failure)}.`,
          );
        }
        const domains = JSON.parse(connection.allowed_domains) as string[];
        const domain = identity.email.slice(identity.email.lastIndexOf('@') + 1);
        if (domains.length > 0 && !domains.includes(domain))
          throw new SsoRefusal(
            'sso_domain_not_allowed',
            'sso_failed',
            `${identity.email} is not in an allowed domain of this connection (${domains.join(', ')}).`,
            { status: 403 },
          );
        if (identity.emailVerified === false)
          throw new SsoRefusal(
            'sso_email_unverified',
            'sso_failed',
            `The identity provider has not verified ${identity.email}.`,
            { status: 403 },
          );
        await signInThrough(connection, identity, request, reply, now);
        return await reply.redirect(`${services.config.publicUrl}/`, 302);
      } catch (failure) {
        // A browser lands here from the identity provider: it is sent to the console's sign-in
        // page, which says why; a client that asked for JSON gets the error envelope.
        if (prefersJson(request)) throw failure;
        const reason = failure instanceof SsoRefusal ? failure.reason : 'sso_failed';
        if (failure instanceof ApiError)
          request.log.info({ reason, err: failure }, 'SSO sign-in refused');
        else request.log.error({ err: failure }, 'SSO sign-in failed');
        return reply.redirect(`${services.config.publicUrl}/sign-in?error=${reason}`, 302);
      }
    },
  );

  function checkEnabled(connection: SsoConnectionsTable): void {
    if (connection.enabled !== 1)
      throw new SsoRefusal(
        'sso_disabled',
        'sign_in_disabled',
        `The SSO connection "${connection.name}" is disabled.`,
      );
  }

  async function discover(connection: SsoConnectionsTable) {
    const secret = services.signingSecrets.open(
      clientSecretBinding(connection.id),
      connection.client_secret,
    );
    try {
      return await providerConfiguration(connection, secret);
    } catch (failure) {
      throw new SsoRefusal(
        'sso_provider_unreachable',
        'sso_failed',
        `The identity provider at ${connection.issuer} could not be reached: ${failure instanceof Error ? failure.message : String(failure)}.`,
        { status: 502 },
      );
    }
  }

  /** Finds or creates the user and membership, and starts the session, in one transaction. */
  async function signInThrough(
    connection: SsoConnectionsTable,
    identity: { email: string; name: string | null },
    request: Parameters<typeof startSession>[3]['request'],
    reply: Parameters<typeof startSession>[2],
    now: Date,
  ): Promise<void> {
    const existing = await services.db
      .selectFrom('users')
      .select(['id', 'name'])
      .where('email', '=', identity.email)
      .executeTakeFirst();
    const userId = existing?.id ?? uuid();
    const actor = { userId, email: identity.email, name: existing?.name ?? identity.name };
    await mutate(
      services.db,
      {
        organizationId: connection.organization_id,
        actor,
        now,
        events: services.events,
      },
      async (m) => {
        const member = existing
          ? await m.trx
              .selectFrom('memberships')
              .select('role')
              .where('organization_id', '=', connection.organization_id)
              .where('user_id', '=', userId)
              .executeTakeFirst()
          : undefined;
        if (!member) {
          if (connection.auto_create_users !== 1)
            throw new SsoRefusal(
              'sso_not_member',
              'sso_failed',
              `${identity.email} is not a member of this organization; ask an Admin for an invitation.`,
              { status: 403 },
            );
          if (!existing)
            await m.trx
              .insertInto('users')
              .values({
                id: userId,
                email: identity.email,
                name: identity.name,
                email_verified: 1,
                created_at: m.now,
                password_hash: null,
                last_seen_at: m.now,
              })
              .execute();
          await m.trx
            .insertInto('memberships')
            .values({
              organization_id: connection.organization_id,
              user_id: userId,
              role: connection.default_role,
              project_ids: null,
              created_at: m.now,
            })
            .execute();
          await m.emit({
            type: 'member.created',
            entity: { type: 'member', id: userId, key: null },
            description: `${identity.email} joined as ${connection.default_role} through single sign-on`,
          });
        }
        await m.trx
          .updateTable('users')
          .set({ last_seen_at: m.now })
          .where('id', '=', userId)
          .execute();
        await startSession(m.trx, services.config, reply, {
          userId,
          ssoConnectionId: connection.id,
          request,
          now,
        });
      },
    );
  }
}
