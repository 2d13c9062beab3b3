import type { Kysely } from 'kysely';
import { v7 as uuid } from 'uuid';
import { hashPassword } from '../../auth/passwords.js';
import { endSessions } from '../../auth/sessions.js';
import { issueToken } from '../../auth/tokens.js';
import type { Plan, Schema } from '../../db/schema.js';

/** What `vexil bootstrap` prints: the first credential of a fresh install. */
export interface BootstrapResult {
  /** The new personal access token; null when the user was the Owner already and none was asked for. */
  token: string | null;
  /** Whether the user was the org's Owner before this run. */
  alreadyOwner: boolean;
  org: { id: string; slug: string };
  user: { id: string; email: string };
  /**
   * When this run created the organization: the slugs of the instance's other organizations
   * (empty on a fresh instance); null when the organization existed already.
   */
  otherOrgs: string[] | null;
}

/**
 * Creates the organization (if absent, with `plan`), the user (if absent), makes the user the
 * org's Owner and issues them a new personal access token — for a user who was the Owner
 * already, only when `token` asks for one; with `password`, also sets the user's password for
 * browser sign-in, which ends their sessions. Idempotent unless a token is issued.
 * @throws ApiError `validation_failed` when the password is too short or too easy to guess.
 */
export async function bootstrap(
  db: Kysely<Schema>,
  input: {
    slug: string;
    email: string;
    name?: string;
    password?: string;
    plan: Plan;
    /** Issue a token even when the user is the Owner already. */
    token?: boolean;
    now: Date;
  },
): Promise<BootstrapResult> {
  const now = input.now.toISOString();
  const passwordHash =
    input.password === undefined
      ? undefined
      : await hashPassword(input.password, '--password-stdin', [input.email, input.name]);
  return db.transaction().execute(async (trx) => {
    let org = await trx
      .selectFrom('organizations')
      .select(['id', 'slug'])
      .where('slug', '=', input.slug)
      .executeTakeFirst();
    let otherOrgs: string[] | null = null;
    if (!org) {
      const others = await trx.selectFrom('organizations').select('slug').orderBy('slug').execute();
      otherOrgs = others.map((other) => other.slug);
      org = { id: uuid(), slug: input.slug };
      await trx
        .insertInto('organizations')
        .values({
          ...org,
          name: input.slug,
          plan: input.plan,
          sso_required: 0,
          sso_connection_id: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
    const email = input.email.toLowerCase();
    let user = await trx
      .selectFrom('users')
      .select(['id', 'email'])
      .where('email', '=', email)
      .executeTakeFirst();
    if (!user) {
      user = { id: uuid(), email };
      await trx
        .insertInto('users')
        .values({ ...user, name: input.name ?? null, email_verified: 0, created_at: now })
        .execute();
    }
    if (passwordHash !== undefined) {
      await trx
        .updateTable('users')
        .set({ password_hash: passwordHash })
        .where('id', '=', user.id)
        .execute();
      await endSessions(trx, user.id, input.now);
    }
    const membership = await trx
      .selectFrom('memberships')
      .select('role')
      .where('organization_id', '=', org.id)
      .where('user_id', '=', user.id)
      .executeTakeFirst();
    if (!membership) {
      await trx
        .insertInto('memberships')
        .values({ organization_id: org.id, user_id: user.id, role: 'Owner', created_at: now })
        .execute();
    } else if (membership.role !== 'Owner') {
      await trx
        .updateTable('memberships')
        .set({ role: 'Owner' })
        .where('organization_id', '=', org.id)
        .where('user_id', '=', user.id)
        .execute();
    }
    const alreadyOwner = membership?.role === 'Owner';
    if (alreadyOwner && input.token !== true)
      return { token: null, alreadyOwner, org, user, otherOrgs };
    const { token } = await issueToken(trx, {
      kind: 'personal',
      userId: user.id,
      name: 'bootstrap',
      expiresAt: null,
      now,
    });
    return { token, alreadyOwner, org, user, otherOrgs };
  });
}
