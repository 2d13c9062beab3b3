import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ROLES } from '../../auth/roles.js';
import type { Kysely, Transaction } from 'kysely';
import type { Role, Schema } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError } from '../../http/errors.js';
import type { Services } from '../../services.js';
import { checkProjectIds, mutateAs, type OrgAccess } from '../access.js';
import { ActionsSchema, actionsFor } from '../actions.js';
import { PageQuery, paginate, pagedSchema } from '../pagination.js';
import { scopedRoutes } from '../scope.js';
import { checkOwnerChange, keepAnOwner } from './owners.js';

const MemberSchema = Type.Object({
  userId: Type.String({ format: 'uuid' }),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Type.Enum(ROLES),
  projectIds: Type.Union([Type.Array(Type.String()), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  lastSeenAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  _actions: ActionsSchema,
});

const MemberParams = Type.Object({ org: Type.String(), userId: Type.String() });

interface MemberRow {
  id: string;
  email: string;
  name: string | null;
  role: Role;
  project_ids: string | null;
  created_at: string;
  last_seen_at: string | null;
}

function memberQuery(db: Kysely<Schema> | Transaction<Schema>, organizationId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .select([
      'users.id as id',
      'users.email',
      'users.name',
      'memberships.role',
      'memberships.project_ids',
      'memberships.created_at',
      'users.last_seen_at',
    ])
    .where('memberships.organization_id', '=', organizationId);
}

function memberBody(access: OrgAccess, row: MemberRow) {
  const ownerOnly = row.role === 'Owner' && access.role !== 'Owner';
  return {
    userId: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    projectIds: row.project_ids ? (JSON.parse(row.project_ids) as string[]) : null,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    _actions: actionsFor(access.role, {
      update: { role: 'Admin', blockedBy: ownerOnly ? 'only an Owner changes an Owner' : null },
      delete: { role: 'Admin', blockedBy: ownerOnly ? 'only an Owner removes an Owner' : null },
    }),
  };
}

async function findMember(
  db: Kysely<Schema> | Transaction<Schema>,
  access: OrgAccess,
  userId: string,
) {
  const row = await memberQuery(db, access.org.id)
    .where('memberships.user_id', '=', userId)
    .executeTakeFirst();
  if (!row)
    throw new ApiError('not_found', `Member "${userId}" was not found.`, {
      nextActions: [{ method: 'GET', path: `/api/v1/orgs/${access.org.slug}/members` }],
    });
  return row;
}

/** Members of an organization (people-and-sign-in.md, People; design record 022). */
export function registerMemberRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/orgs/:org/members',
    'Viewer',
    {
      schema: {
        tags: ['members'],
        params: Type.Object({ org: Type.String() }),
        querystring: PageQuery,
        response: { 200: pagedSchema(MemberSchema) },
      },
    },
    async (access, request) => {
      const { rows, nextCursor } = await paginate(
        memberQuery(services.db, access.org.id),
        request.query,
        {
          idColumn: 'users.id',
        },
      );
      return {
        items: rows.map((row) => memberBody(access, row)),
        next_cursor: nextCursor,
        _actions: actionsFor(access.role, { invite: { role: 'Admin' } }),
      };
    },
  );

  route.get(
    '/orgs/:org/members/:userId',
    'Viewer',
    { schema: { tags: ['members'], params: MemberParams, response: { 200: MemberSchema } } },
    async (access, request) =>
      memberBody(access, await findMember(services.db, access, request.params.userId)),
  );

  route.patch(
    '/orgs/:org/members/:userId',
    'Admin',
    {
      schema: {
        tags: ['members'],
        params: MemberParams,
        body: Type.Object(
          {
            role: Type.Optional(Type.Enum(ROLES)),
            projectIds: Type.Optional(
              Type.Union([
                Type.Array(Type.String(), { minItems: 1, uniqueItems: true }),
                Type.Null(),
              ]),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: MemberSchema },
      },
    },
    async (access, request) => {
      const { userId } = request.params;
      const { role } = request.body;
      if (request.body.projectIds) await checkProjectIds(services, access, request.body.projectIds);
      await mutateAs(services, access, async (m) => {
        const before = await findMember(m.trx, access, userId);
        const after = {
          role: role ?? before.role,
          projectIds:
            request.body.projectIds !== undefined
              ? request.body.projectIds
              : before.project_ids
                ? (JSON.parse(before.project_ids) as string[])
                : null,
        };
        checkOwnerChange(access.role, before.role, after.role);
        if (before.role === 'Owner' && after.role !== 'Owner')
          await keepAnOwner(m.trx, services.dialect, access.org.id, userId);
        await m.trx
          .updateTable('memberships')
          .set({
            role: after.role,
            project_ids: after.projectIds ? JSON.stringify(after.projectIds) : null,
          })
          .where('organization_id', '=', access.org.id)
          .where('user_id', '=', userId)
          .execute();
        const changes = diffProperties(
          {
            role: before.role,
            projectIds: before.project_ids ? (JSON.parse(before.project_ids) as string[]) : null,
          },
          after,
        );
        if (changes.length > 0)
          await m.emit({
            type: 'member.updated',
            entity: { type: 'member', id: userId, key: null },
            changes,
            description: `Member ${before.email} updated`,
          });
      });
      return memberBody(access, await findMember(services.db, access, userId));
    },
  );

  route.delete(
    '/orgs/:org/members/:userId',
    'Admin',
    { schema: { tags: ['members'], params: MemberParams } },
    async (access, request, reply) => {
      const { userId } = request.params;
      await mutateAs(services, access, async (m) => {
        const member = await findMember(m.trx, access, userId);
        checkOwnerChange(access.role, member.role, null);
        if (member.role === 'Owner')
          await keepAnOwner(m.trx, services.dialect, access.org.id, userId);
        await m.trx
          .deleteFrom('memberships')
          .where('organization_id', '=', access.org.id)
          .where('user_id', '=', userId)
          .execute();
        await m.emit({
          type: 'member.deleted',
          entity: { type: 'member', id: userId, key: null },
          description: `Member ${member.email} (${member.role}) removed`,
        });
      });
      return reply.status(204).send();
    },
  );
}
