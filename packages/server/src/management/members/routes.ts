import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ROLES } from '../../auth/roles.js';
import type { Kysely, Transaction } from 'kysely';
import type { Dialect } from '../../db/dialect.js';
import type { Role, Schema } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError } from '../../http/errors.js';
import type { Services } from '../../services.js';
import { checkProjectIds, mutateAs, type OrgAccess } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import {
  checkGrant,
  checkNotOwnAccess,
  checkWithinReach,
  reaches,
  sharesProjectsInSql,
  visibleProjects,
} from '../../api/reach.js';
import { scopedRoutes } from '../../api/scope.js';
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

/** The members the caller sees: with an allowlist, those who share one of its projects. */
function memberQuery(
  db: Kysely<Schema> | Transaction<Schema>,
  dialect: Dialect,
  access: OrgAccess,
) {
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
    .where('memberships.organization_id', '=', access.org.id)
    .where(sharesProjectsInSql(dialect, access, 'memberships.project_ids'));
}

const projectIdsOf = (row: { project_ids: string | null }) =>
  row.project_ids ? (JSON.parse(row.project_ids) as string[]) : null;

function memberBody(access: OrgAccess, row: MemberRow) {
  const ownerOnly = row.role === 'Owner' && access.role !== 'Owner';
  const own = access.caller.id === row.id;
  const beyond = !reaches(access, projectIdsOf(row));
  const blockedBy = (verb: string) =>
    ownerOnly
      ? `only an Owner ${verb}s an Owner`
      : beyond
        ? "this member's access reaches beyond yours"
        : null;
  return {
    userId: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    projectIds: visibleProjects(access, projectIdsOf(row)),
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    _actions: actionsFor(access.role, {
      update: {
        role: 'Admin',
        blockedBy: own ? 'nobody changes their own role or allowlist' : blockedBy('change'),
      },
      delete: { role: 'Admin', blockedBy: blockedBy('remove') },
    }),
  };
}

async function findMember(
  db: Kysely<Schema> | Transaction<Schema>,
  dialect: Dialect,
  access: OrgAccess,
  userId: string,
) {
  const row = await memberQuery(db, dialect, access)
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
        memberQuery(services.db, services.dialect, access),
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
      memberBody(
        access,
        await findMember(services.db, services.dialect, access, request.params.userId),
      ),
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
      const { role, projectIds } = request.body;
      checkNotOwnAccess(access, userId);
      if (projectIds !== undefined) checkGrant(access, { projectIds });
      if (projectIds) await checkProjectIds(services, access, projectIds);
      await mutateAs(services, access, async (m) => {
        const before = await findMember(m.trx, services.dialect, access, userId);
        const after = {
          role: role ?? before.role,
          projectIds: projectIds !== undefined ? projectIds : projectIdsOf(before),
        };
        checkOwnerChange(access.role, before.role, after.role);
        checkWithinReach(
          access,
          { role: before.role, projectIds: projectIdsOf(before) },
          'This member',
        );
        checkGrant(access, after);
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
        await m.emit({
          type: 'member.updated',
          entity: { type: 'member', id: userId, key: null },
          changes: diffProperties({ role: before.role, projectIds: projectIdsOf(before) }, after),
          description: `Member ${before.email} updated`,
        });
      });
      return memberBody(access, await findMember(services.db, services.dialect, access, userId));
    },
  );

  route.delete(
    '/orgs/:org/members/:userId',
    'Admin',
    { schema: { tags: ['members'], params: MemberParams } },
    async (access, request, reply) => {
      const { userId } = request.params;
      await mutateAs(services, access, async (m) => {
        const member = await findMember(m.trx, services.dialect, access, userId);
        checkOwnerChange(access.role, member.role, null);
        checkWithinReach(
          access,
          { role: member.role, projectIds: projectIdsOf(member) },
          'This member',
        );
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
