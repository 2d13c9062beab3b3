import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { OrganizationsTable, Plan, Role } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes } from '../../api/scope.js';

export const PLANS: readonly Plan[] = ['Solo', 'Team', 'Pro', 'Business', 'Enterprise'];

const OrganizationItem = Type.Object({
  id: Type.String({ format: 'uuid' }),
  slug: Type.String(),
  name: Type.String(),
  plan: Type.Enum(PLANS),
  ssoRequired: Type.Boolean(),
  ssoConnectionId: Type.Union([Type.String(), Type.Null()]),
});
const OrganizationResponse = Type.Intersect([
  OrganizationItem,
  Type.Object({ _actions: ActionsSchema }),
]);

function organizationItem(row: Selectable<OrganizationsTable>) {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    plan: row.plan,
    ssoRequired: row.sso_required === 1,
    ssoConnectionId: row.sso_connection_id,
  };
}

function organizationActions(role: Role) {
  return actionsFor(role, {
    update: { role: 'Owner' },
    createProject: { role: 'Admin' },
    manageMembers: { role: 'Admin' },
    manageWebhooks: { role: 'Admin' },
    readAuditLog: { role: 'Admin' },
    manageServiceTokens: { role: 'Admin' },
    manageRelayKeys: { role: 'Admin' },
  });
}

/** Organizations (spec: Organization; design record 004 for update and SSO settings). */
export function registerOrgRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/orgs',
    'authenticated',
    {
      schema: {
        tags: ['orgs'],
        querystring: PageQuery,
        response: { 200: pagedSchema(OrganizationItem) },
      },
    },
    async ({ caller }, request) => {
      const query =
        caller.type === 'service_token'
          ? services.db
              .selectFrom('organizations')
              .selectAll()
              .where('id', '=', caller.organizationId)
          : services.db
              .selectFrom('organizations')
              .selectAll()
              .where('id', 'in', (eb) =>
                eb
                  .selectFrom('memberships')
                  .select('organization_id')
                  .where('user_id', '=', caller.id),
              )
              // A credential that came through an SSO connection sees its org only (record 032).
              .$if(caller.ssoOrganizationId !== null, (qb) =>
                qb.where('id', '=', caller.ssoOrganizationId),
              );
      const { rows, nextCursor } = await paginate(query, request.query);
      return { items: rows.map(organizationItem), next_cursor: nextCursor, _actions: {} };
    },
  );

  route.get(
    '/orgs/:org',
    'Viewer',
    {
      schema: {
        tags: ['orgs'],
        params: Type.Object({ org: Type.String() }),
        response: { 200: OrganizationResponse },
      },
    },
    (scope) => {
      return { ...organizationItem(scope.org), _actions: organizationActions(scope.role) };
    },
  );

  route.patch(
    '/orgs/:org',
    'Owner',
    {
      wholeOrganization: true,
      schema: {
        tags: ['orgs'],
        params: Type.Object({ org: Type.String() }),
        body: Type.Object(
          {
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            plan: Type.Optional(Type.Enum(PLANS)),
            ssoRequired: Type.Optional(Type.Boolean()),
            ssoConnectionId: Type.Optional(
              Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: OrganizationResponse },
      },
    },
    async (scope, request) => {
      const before = organizationItem(scope.org);
      const after = { ...before, ...request.body };
      if (after.ssoRequired && !after.ssoConnectionId) {
        throw invalidField('ssoConnectionId', 'is required while ssoRequired is true');
      }
      if (after.ssoConnectionId && after.ssoConnectionId !== before.ssoConnectionId) {
        const connection = await services.db
          .selectFrom('sso_connections')
          .select('id')
          .where('organization_id', '=', scope.org.id)
          .where('id', '=', after.ssoConnectionId)
          .executeTakeFirst();
        if (!connection)
          throw invalidField('ssoConnectionId', "is not one of the organization's SSO connections");
      }
      const row = await mutateAs(services, scope, async (m) => {
        const updated = await m.trx
          .updateTable('organizations')
          .set({
            name: after.name,
            plan: after.plan,
            sso_required: after.ssoRequired ? 1 : 0,
            sso_connection_id: after.ssoConnectionId,
            updated_at: m.now,
          })
          .where('id', '=', scope.org.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        await m.emit({
          type: 'organization.updated',
          entity: { type: 'organization', id: scope.org.id, key: updated.slug },
          changes: diffProperties(before, organizationItem(updated)),
          description: `Organization "${updated.slug}" updated`,
        });
        return updated;
      });
      return { ...organizationItem(row), _actions: organizationActions(scope.role) };
    },
  );
}
