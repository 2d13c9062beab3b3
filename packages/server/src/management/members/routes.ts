import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ROLES } from '../../auth/roles.js';
import type { Kysely, Transaction } from 'kysely';
import type { Dialect } from '../../db/dialect.js';
import type { Role, Schema } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError } from '../../errors.js';
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
function memberQuery(db: Kysely<Schema> | Transaction<Schema>, dialect: Dialect, scope: OrgAccess) {
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
    .where('memberships.organization_id', '=', scope.org.id)
    .where(sharesProjectsInSql(dialect, scope, 'memberships.project_ids'));
}

const projectIdsOf = (row: { project_ids: string | null }) =>
  row.project_ids ? (JSON.parse(row.project_ids) as string[]) : null;

function memberBody(scope: OrgAccess, row: MemberRow) {
  const ownerOnly = row.role === 'Owner' && scope.role !== 'Owner';
  const own = scope.caller.id === row.id;
  const beyond = !reaches(scope, projectIdsOf(row));
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
    projectIds: visibleProjects(scope, projectIdsOf(row)),
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    _actions: actionsFor(scope.role, {
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
  scope: OrgAccess,
  userId: string,
) {
  const row = await memberQuery(db, dialect, scope)
    .where('memberships.user_id', '=', userId)
    .executeTakeFirst();
  if (!row)
    throw new ApiError('not_found', `Member "${userId}" was not found.`, {
      nextActions: [{ method: 'GET', path: `/api/v1/orgs/${scope.org.slug}/members` }],
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
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        memberQuery(services.db, services.dialect, scope),
        request.query,
        {
          idColumn: 'users.id',
        },
      );
      return {
        items: rows.map((row) => memberBody(scope, row)),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, { invite: { role: 'Admin' } }),
      };
    },
  );

  route.get(
    '/orgs/:org/members/:userId',
    'Viewer',
    { schema: { tags: ['members'], params: MemberParams, response: { 200: MemberSchema } } },
    async (scope, request) =>
      memberBody(
        scope,
        await findMember(services.db, services.dialect, scope, request.params.userId),
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
    async (scope, request) => {
      const { userId } = request.params;
      const { role, projectIds } = request.body;
      checkNotOwnAccess(scope, userId);
      if (projectIds !== undefined) checkGrant(scope, { projectIds });
      if (projectIds) await checkProjectIds(services, scope, projectIds);
      await mutateAs(services, scope, async (m) => {
        const before = await findMember(m.trx, services.dialect, scope, userId);
        const after = {
          role: role ?? before.role,
          projectIds: projectIds !== undefined ? projectIds : projectIdsOf(before),
        };
        checkOwnerChange(scope.role, before.role, after.role);
        checkWithinReach(
          scope,
          { role: before.role, projectIds: projectIdsOf(before) },
          'This member',
        );
        checkGrant(scope, after);
        if (before.role === 'Owner' && after.role !== 'Owner')
          await keepAnOwner(m.trx, services.dialect, scope.org.id, userId);
        await m.trx
          .updateTable('memberships')
          .set({
            role: after.role,
            project_ids: after.projectIds ? JSON.stringify(after.projectIds) : null,
          })
          .where('organization_id', '=', scope.org.id)
          .where('user_id', '=', userId)
          .execute();
        await m.emit({
          type: 'member.updated',
          entity: { type: 'member', id: userId, key: null },
          changes: diffProperties({ role: before.role, projectIds: projectIdsOf(before) }, after),
          description: `Member ${before.email} updated`,
        });
      });
      return memberBody(scope, await findMember(services.db, services.dialect, scope, userId));
    },
  );

  route.delete(
    '/orgs/:org/members/:userId',
    'Admin',
    { schema: { tags: ['members'], params: MemberParams } },
    async (scope, request, reply) => {
      const { userId } = request.params;
      await mutateAs(services, scope, async (m) => {
        const member = await findMember(m.trx, services.dialect, scope, userId);
        checkOwnerChange(scope.role, member.role, null);
        checkWithinReach(
          scope,
          { role: member.role, projectIds: projectIdsOf(member) },
          'This member',
        );
        if (member.role === 'Owner')
          await keepAnOwner(m.trx, services.dialect, scope.org.id, userId);
        await m.trx
          .deleteFrom('memberships')
          .where('organization_id', '=', scope.org.id)
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
