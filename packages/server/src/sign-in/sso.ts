import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import {
  beginSignIn,
  clientSecretBinding,
  failureReason,
  finishSignIn,
  type AssertedIdentity,
} from '../auth/oidc.js';
import { hashSecret } from '../auth/secrets.js';
import { authenticateSession, SESSION_COOKIE, startSession } from '../auth/sessions.js';
import { mutate, type Mutation } from '../db/mutate.js';
import type { SsoConnectionsTable } from '../db/schema.js';
import type { App } from '../http/app-instance.js';
import { ApiError, type ErrorCode, type ErrorDetail } from '../errors.js';
import { isUuid } from '../api/access.js';
import type { Services } from '../services.js';

/** How long a started OpenID Connect sign-in may take at the provider (ms). */
const SSO_SIGN_IN_WINDOW_MS = 10 * 60_000;

/**
 * The cookie binding a started sign-in to the browser that started it: it holds the `state`,
 * and the callback refuses a `state` this browser did not start (login CSRF; design record 032).
 */
const SSO_STATE_COOKIE = 'vexil_sso_state';
const CALLBACK_PATH = '/auth/sso/callback';

/** SSO sign-in starts per client IP per minute: ten times `VEXIL_SIGN_IN_RATE_LIMIT`. */
const STARTS_PER_IP = 10;

/**
 * Why a single sign-on was refused, in the words of the console's sign-in page, which a browser
 * is sent to as `/sign-in?error=<reason>` when the callback fails (design record 024).
 */
export type SsoRefusalReason =
  /** The callback's state is missing, unknown, used already or too old. */
  | 'sso_expired'
  /** The callback's state was not started in this browser (or its cookie expired). */
  | 'sso_other_browser'
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
  /** The identity provider has not said that it verified the e-mail address. */
  | 'sso_email_unverified'
  /** Not a member, and the connection does not add people. */
  | 'sso_not_member'
  /** The address belongs to an account this connection is not linked to (design record 032). */
  | 'sso_account_exists'
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

/** Whether the browser's state cookie holds the callback's `state` (compared in constant time). */
function startedHere(request: FastifyRequest, state: string): boolean {
  const cookie = request.cookies[SSO_STATE_COOKIE];
  return (
    cookie !== undefined &&
    timingSafeEqual(Buffer.from(hashSecret(cookie)), Buffer.from(hashSecret(state)))
  );
}

/**
 * Single sign-on through an organization's OpenID Connect connection (people-and-sign-in.md,
 * Sign-in; design records 022 and 032): `GET /auth/sso/{org}` starts it, `GET
 * /auth/sso/callback` finishes it. An identity the connection asserts counts in the
 * connection's organization only: the session it starts carries the connection, and an
 * existing account is reached only through a link (connection, `sub`) that its person made.
 */
export function registerSsoRoutes(app: App, services: Services): void {
  const { config } = services;
  const callbackUrl = `${config.publicUrl}${CALLBACK_PATH}`;
  const secure = config.publicUrl.startsWith('https:');
  const starts = new RateLimiterMemory({
    points: config.signIn.attempts.points * STARTS_PER_IP,
    duration: 60,
  });

  app.get(
    '/sso/:org',
    { schema: { tags: ['sign-in'], params: Type.Object({ org: Type.String() }) } },
    async (request, reply) => {
      // Every start counts, whatever its outcome: each one may write a pending sign-in.
      await starts.consume(request.ip).catch((rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        throw new ApiError('rate_limited', `Too many sign-ins started. Retry in ${retryAfter} s.`, {
          retryAfter,
        });
      });
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
      const pending = await beginSignIn(await discover(connection), callbackUrl);
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
      void reply.setCookie(SSO_STATE_COOKIE, pending.state, {
        httpOnly: true,
        // Lax: sent when the identity provider redirects the browser back (a top-level GET).
        sameSite: 'lax',
        secure,
        path: CALLBACK_PATH,
        maxAge: SSO_SIGN_IN_WINDOW_MS / 1000,
      });
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
      void reply.clearCookie(SSO_STATE_COOKIE, { path: CALLBACK_PATH });
      try {
        const { state, error, error_description: description } = request.query;
        if (!state)
          throw new SsoRefusal(
            'sso_expired',
            'sso_failed',
            'The callback carries no state; start again.',
          );
        // Before the pending sign-in is taken: another browser cannot use up this one's.
        if (!startedHere(request, state))
          throw new SsoRefusal(
            'sso_other_browser',
            'sso_failed',
            'This sign-in was not started in this browser (or took too long); start it again here.',
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
            new URL(request.url, config.publicUrl),
            { state, nonce: pending.nonce, codeVerifier: pending.code_verifier },
          );
        } catch (failure) {
          throw new SsoRefusal(
            'sso_answer_refused',
            'sso_failed',
            `The identity provider's answer was refused: ${failureReason(failure)}.`,
          );
        }
        // Refusals name no address: they are logged (design record 032).
        const domains = JSON.parse(connection.allowed_domains) as string[];
        const domain = identity.email.slice(identity.email.lastIndexOf('@') + 1);
        if (domains.length > 0 && !domains.includes(domain))
          throw new SsoRefusal(
            'sso_domain_not_allowed',
            'sso_failed',
            `The address's domain (${domain}) is not an allowed domain of this connection (${domains.join(', ')}).`,
            { status: 403 },
          );
        if (!identity.emailVerified)
          throw new SsoRefusal(
            'sso_email_unverified',
            'sso_failed',
            'The identity provider has not said that it verified the address (email_verified).',
            { status: 403 },
          );
        await signInThrough(connection, identity, request, reply, now);
        return await reply.redirect(`${config.publicUrl}/`, 302);
      } catch (failure) {
        // A browser lands here from the identity provider: it is sent to the console's sign-in
        // page, which says why; a client that asked for JSON gets the error envelope.
        if (prefersJson(request)) throw failure;
        const reason = failure instanceof SsoRefusal ? failure.reason : 'sso_failed';
        if (failure instanceof ApiError)
          request.log.info({ reason, err: failure }, 'SSO sign-in refused');
        else request.log.error({ err: failure }, 'SSO sign-in failed');
        return reply.redirect(`${config.publicUrl}/sign-in?error=${reason}`, 302);
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
      return await services.identityProviders.configuration(connection, secret);
    } catch (failure) {
      throw new SsoRefusal(
        'sso_provider_unreachable',
        'sso_failed',
        `The identity provider at ${connection.issuer} could not be reached: ${failureReason(failure)}.`,
        { status: 502 },
      );
    }
  }

  /**
   * The user this browser is signed in as by a session that came through no connection (a
   * password or invitation sign-in): the proof that lets an existing account be linked.
   */
  async function signedInOtherwise(request: FastifyRequest, now: Date): Promise<string | null> {
    const secret = request.cookies[SESSION_COOKIE];
    if (!secret) return null;
    const caller = await authenticateSession(services.db, config, secret, now).catch(() => null);
    return caller && caller.ssoConnectionId === null ? caller.id : null;
  }

  /**
   * Finds the account the identity signs in as, links or creates it, adds the membership when
   * the connection allows it, and starts the session, in one transaction (design record 032).
   */
  async function signInThrough(
    connection: SsoConnectionsTable,
    identity: AssertedIdentity,
    request: FastifyRequest,
    reply: FastifyReply,
    now: Date,
  ): Promise<void> {
    const provenUserId = await signedInOtherwise(request, now);
    const linked = await services.db
      .selectFrom('sso_identities')
      .innerJoin('users', 'users.id', 'sso_identities.user_id')
      .select(['users.id', 'users.email', 'users.name'])
      .where('sso_identities.connection_id', '=', connection.id)
      .where('sso_identities.subject', '=', identity.subject)
      .executeTakeFirst();
    const existing =
      linked ??
      (await services.db
        .selectFrom('users')
        .select(['id', 'email', 'name'])
        .where('email', '=', identity.email)
        .executeTakeFirst());
    const userId = existing?.id ?? uuid();
    const email = existing?.email ?? identity.email;
    await mutate(
      services.db,
      {
        organizationId: connection.organization_id,
        actor: { userId, email, name: existing?.name ?? identity.name },
        now,
        events: services.events,
      },
      async (m) => {
        const isMember = async () =>
          (await m.trx
            .selectFrom('memberships')
            .select('role')
            .where('organization_id', '=', connection.organization_id)
            .where('user_id', '=', userId)
            .executeTakeFirst()) !== undefined;
        if (!existing) {
          if (connection.auto_create_users !== 1) throw notMember();
          await m.trx
            .insertInto('users')
            .values({
              id: userId,
              email,
              name: identity.name,
              email_verified: 1,
              created_at: m.now,
              password_hash: null,
              last_seen_at: m.now,
            })
            .execute();
        } else if (!linked) {
          const proven = provenUserId === userId && (await isMember());
          if (!proven && !(await onlyThisOrganizationReaches(m, connection, userId)))
            throw new SsoRefusal(
              'sso_account_exists',
              'sso_failed',
              'An account with this address exists and is not linked to this connection. ' +
                'A member of the organization links it by signing in another way (e.g. with a password) and then through this connection in the same browser.',
              { status: 403 },
            );
        }
        if (!linked)
          await m.trx
            .insertInto('sso_identities')
            .values({
              connection_id: connection.id,
              subject: identity.subject,
              user_id: userId,
              created_at: m.now,
            })
            .onConflict((conflict) => conflict.doNothing())
            .execute();
        if (!(await isMember())) {
          if (connection.auto_create_users !== 1) throw notMember();
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
            description: `${email} joined as ${connection.default_role} through single sign-on`,
          });
        }
        await m.trx
          .updateTable('users')
          .set({ last_seen_at: m.now })
          .where('id', '=', userId)
          .execute();
        await startSession(m.trx, config, reply, {
          userId,
          ssoConnectionId: connection.id,
          request,
          now,
        });
      },
    );
  }
}

function notMember(): SsoRefusal {
  return new SsoRefusal(
    'sso_not_member',
    'sso_failed',
    'Not a member of this organization; ask an Admin for an invitation.',
    { status: 403 },
  );
}

/**
 * Whether an account has no way in but the connection's organization: no password, no link to
 * any connection, and memberships in that organization only. Such an account is the
 * organization's own (one that single sign-on created before links were kept), and its
 * identity provider may claim it (design record 032).
 */
async function onlyThisOrganizationReaches(
  m: Mutation,
  connection: SsoConnectionsTable,
  userId: string,
): Promise<boolean> {
  const user = await m.trx
    .selectFrom('users')
    .select('password_hash')
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  if (user.password_hash !== null) return false;
  const link = await m.trx
    .selectFrom('sso_identities')
    .select('subject')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (link) return false;
  const organizations = await m.trx
    .selectFrom('memberships')
    .select('organization_id')
    .where('user_id', '=', userId)
    .execute();
  return (
    organizations.length > 0 &&
    organizations.every((row) => row.organization_id === connection.organization_id)
  );
}
