import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import { hashPassword } from '../../auth/passwords.js';
import { ROLES } from '../../auth/roles.js';
import { generateSecret, hashSecret } from '../../auth/secrets.js';
import { startSession } from '../../auth/sessions.js';
import { mutate } from '../../db/mutate.js';
import type { InvitationsTable, Role } from '../../db/schema.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { actorOf, checkProjectIds, mutateAs } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { checkOwnerChange } from '../members/owners.js';
import { checkGrant, reachesInSql } from '../../api/reach.js';
import { scopedRoutes } from '../../api/scope.js';
import { registerInvitationPreviewRoute } from './preview.js';

const InvitationSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  email: Type.String(),
  role: Type.Enum(ROLES),
  projectIds: Type.Union([Type.Array(Type.String()), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time' }),
  _actions: ActionsSchema,
});

const OrgParams = Type.Object({ org: Type.String() });

function invitationBody(role: Role, row: InvitationsTable) {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    projectIds: row.project_ids ? (JSON.parse(row.project_ids) as string[]) : null,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    _actions: actionsFor(role, { delete: { role: 'Admin' } }),
  };
}

/** Where the console accepts an invitation; the secret rides in the fragment, never sent to a server log. */
function acceptUrl(services: Services, token: string): string {
  return `${services.config.publicUrl}/invitations/accept#token=${token}`;
}

/**
 * Invitations (people-and-sign-in.md, People; design record 022): created by Admins, accepted
 * once through a link bound to the invited address, revocable, expiring.
 */
export function registerInvitationRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  registerInvitationPreviewRoute(app, services);
  route.post(
    '/orgs/:org/invitations',
    'Admin',
    {
      schema: {
        tags: ['members'],
        params: OrgParams,
        body: Type.Object(
          {
            email: Type.String({ format: 'email', maxLength: 320 }),
            role: Type.Enum(ROLES),
            projectIds: Type.Optional(
              Type.Union([
                Type.Array(Type.String(), { minItems: 1, uniqueItems: true }),
                Type.Null(),
              ]),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Intersect([
            InvitationSchema,
            // `emailed`: whether this server sends invitation e-mail (VEXIL_SMTP_URL); when not,
            // the inviter hands the link on.
            Type.Object({ acceptUrl: Type.String(), emailed: Type.Boolean() }),
          ]),
        },
      },
    },
    async (scope, request, reply) => {
      const { role } = request.body;
      const email = request.body.email.toLowerCase();
      checkOwnerChange(scope.role, null, role);
      const projectIds = request.body.projectIds ?? null;
      checkGrant(scope, { role, projectIds });
      if (projectIds) await checkProjectIds(services, scope, projectIds);
      const token = generateSecret('vxl_inv');
      const now = services.clock.now();
      const row = await mutateAs(services, scope, async (m) => {
        const member = await m.trx
          .selectFrom('memberships')
          .innerJoin('users', 'users.id', 'memberships.user_id')
          .select('users.id')
          .where('memberships.organization_id', '=', scope.org.id)
          .where('users.email', '=', email)
          .executeTakeFirst();
        if (member)
          throw new ApiError('conflict', `${email} is already a member.`, {
            fields: { email: ['already a member'] },
          });
        const invitation: InvitationsTable = {
          id: uuid(),
          organization_id: scope.org.id,
          email,
          role,
          project_ids: projectIds ? JSON.stringify(projectIds) : null,
          token_hash: hashSecret(token),
          invited_by: scope.caller.id,
          created_at: m.now,
          expires_at: new Date(
            now.getTime() + services.config.signIn.invitationLifetimeMs,
          ).toISOString(),
          accepted_at: null,
          revoked_at: null,
        };
        await m.trx.insertInto('invitations').values(invitation).execute();
        await m.emit({
          type: 'invitation.created',
          entity: { type: 'invitation', id: invitation.id, key: null },
          description: `${email} invited as ${role}`,
        });
        return invitation;
      });
      const url = acceptUrl(services, token);
      const inviter = scope.caller.name ?? (scope.caller.type === 'user' ? scope.caller.email : '');
      services.mailer?.send({
        about: `invitation ${row.id}`,
        to: email,
        subject: `You are invited to ${scope.org.name} on Vexil`,
        text: [
          `${inviter} invited you to the organization ${scope.org.name} on Vexil, as ${role}.`,
          '',
          `Accept the invitation: ${url}`,
          '',
          `The link works once and expires at ${row.expires_at}.`,
        ].join('\n'),
      });
      return reply.status(201).send({
        ...invitationBody(scope.role, row),
        acceptUrl: url,
        emailed: services.mailer !== null,
      });
    },
  );

  route.get(
    '/orgs/:org/invitations',
    'Admin',
    {
      schema: {
        tags: ['members'],
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(InvitationSchema) },
      },
    },
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('invitations')
          .selectAll()
          .where('organization_id', '=', scope.org.id)
          .where('accepted_at', 'is', null)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', services.clock.now().toISOString())
          .where(reachesInSql(services.dialect, scope, 'project_ids')),
        request.query,
      );
      return {
        items: rows.map((row) => invitationBody(scope.role, row)),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, { create: { role: 'Admin' } }),
      };
    },
  );

  route.delete(
    '/orgs/:org/invitations/:id',
    'Admin',
    {
      schema: { tags: ['members'], params: Type.Object({ org: Type.String(), id: Type.String() }) },
    },
    async (scope, request, reply) => {
      await mutateAs(services, scope, async (m) => {
        const row = await m.trx
          .updateTable('invitations')
          .set({ revoked_at: m.now })
          .where('id', '=', request.params.id)
          .where('organization_id', '=', scope.org.id)
          .where('accepted_at', 'is', null)
          .where('revoked_at', 'is', null)
          .where(reachesInSql(services.dialect, scope, 'project_ids'))
          .returning(['id', 'email'])
          .executeTakeFirst();
        if (!row)
          throw new ApiError('not_found', `Invitation "${request.params.id}" was not found.`, {
            nextActions: [{ method: 'GET', path: `/api/v1/orgs/${scope.org.slug}/invitations` }],
          });
        await m.emit({
          type: 'invitation.deleted',
          entity: { type: 'invitation', id: row.id, key: null },
          description: `Invitation of ${row.email} revoked`,
        });
      });
      return reply.status(204).send();
    },
  );

  app.post(
    '/invitations/accept',
    {
      config: { public: true },
      schema: {
        tags: ['members'],
        body: Type.Object(
          {
            token: Type.String({ minLength: 1, maxLength: 200 }),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            password: Type.Optional(Type.String({ maxLength: 1024 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            organization: Type.Object({
              id: Type.String({ format: 'uuid' }),
              slug: Type.String(),
              name: Type.String(),
            }),
            userId: Type.String({ format: 'uuid' }),
            role: Type.Enum(ROLES),
          }),
        },
      },
    },
    async (request, reply) => {
      const caller = request.caller;
      if (caller?.type === 'service_token')
        throw new ApiError('forbidden', 'A service token cannot accept an invitation.');
      const now = services.clock.now();
      const invitation = await services.db
        .selectFrom('invitations')
        .innerJoin('organizations', 'organizations.id', 'invitations.organization_id')
        .selectAll('invitations')
        .select(['organizations.slug', 'organizations.name as organization_name'])
        .where('invitations.token_hash', '=', hashSecret(request.body.token))
        .executeTakeFirst();
      if (!invitation) throw new ApiError('not_found', 'This invitation link is not valid.');
      if (invitation.accepted_at)
        throw new ApiError('invitation_used', 'This invitation has already been accepted.');
      if (invitation.revoked_at)
        throw new ApiError('invitation_revoked', 'This invitation was revoked.');
      if (new Date(invitation.expires_at) <= now)
        throw new ApiError(
          'invitation_expired',
          `This invitation expired at ${invitation.expires_at}.`,
        );
      // Signed in through another organization's SSO: that identity counts there only (record 032).
      if (caller?.ssoOrganizationId && caller.ssoOrganizationId !== invitation.organization_id)
        throw new ApiError(
          'forbidden',
          'You are signed in through single sign-on, which counts in its own organization only; sign in another way to accept this invitation.',
        );
      if (caller && caller.email.toLowerCase() !== invitation.email)
        throw new ApiError(
          'forbidden',
          `This invitation is for ${invitation.email}; you are signed in as ${caller.email}.`,
        );
      let passwordHash: string | null = null;
      if (!caller) {
        if (request.body.name === undefined) throw invalidField('name', 'is required to sign up');
        if (request.body.password === undefined)
          throw invalidField('password', 'is required to sign up');
        passwordHash = await hashPassword(request.body.password, 'password', [
          invitation.email,
          request.body.name,
        ]);
      }
      const userId = caller?.id ?? uuid();
      const actor = caller
        ? actorOf(caller)
        : { userId, email: invitation.email, name: request.body.name ?? null };
      await mutate(
        services.db,
        {
          organizationId: invitation.organization_id,
          actor,
          now,
          events: services.events,
        },
        async (m) => {
          // The guarded update makes acceptance single-use even when two requests race.
          const claimed = await m.trx
            .updateTable('invitations')
            .set({ accepted_at: m.now })
            .where('id', '=', invitation.id)
            .where('accepted_at', 'is', null)
            .where('revoked_at', 'is', null)
            .returning('id')
            .executeTakeFirst();
          if (!claimed)
            throw new ApiError('invitation_used', 'This invitation has already been accepted.');
          if (!caller) {
            const existing = await m.trx
              .selectFrom('users')
              .select('id')
              .where('email', '=', invitation.email)
              .executeTakeFirst();
            if (existing)
              throw new ApiError(
                'conflict',
                `An account for ${invitation.email} exists: sign in, then accept the invitation.`,
              );
            await m.trx
              .insertInto('users')
              .values({
                id: userId,
                email: invitation.email,
                name: request.body.name ?? null,
                email_verified: 0,
                created_at: m.now,
                password_hash: passwordHash,
                last_seen_at: m.now,
              })
              .execute();
          }
          const member = await m.trx
            .selectFrom('memberships')
            .select('role')
            .where('organization_id', '=', invitation.organization_id)
            .where('user_id', '=', userId)
            .executeTakeFirst();
          if (member)
            throw new ApiError('conflict', `You are already a member of ${invitation.slug}.`);
          await m.trx
            .insertInto('memberships')
            .values({
              organization_id: invitation.organization_id,
              user_id: userId,
              role: invitation.role,
              project_ids: invitation.project_ids,
              created_at: m.now,
            })
            .execute();
          await m.emit({
            type: 'invitation.accepted',
            entity: { type: 'invitation', id: invitation.id, key: null },
            description: `Invitation of ${invitation.email} accepted`,
          });
          await m.emit({
            type: 'member.created',
            entity: { type: 'member', id: userId, key: null },
            description: `${invitation.email} joined as ${invitation.role}`,
          });
          if (!caller)
            await startSession(m.trx, services.config, reply, {
              userId,
              ssoConnectionId: null,
              request,
              now,
            });
        },
      );
      return {
        organization: {
          id: invitation.organization_id,
          slug: invitation.slug,
          name: invitation.organization_name,
        },
        userId,
        role: invitation.role,
      };
    },
  );
}
