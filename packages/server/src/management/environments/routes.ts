import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { EnvironmentsTable, Role } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import type { Services } from '../../services.js';
import { removeFromSubscriptionFilters } from '../../webhooks/filters.js';
import { hasRole } from '../../auth/roles.js';
import { ApiError } from '../../errors.js';
import { mutateAs } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import { ColorSchema, KeySchema, NameSchema, Uuid } from '../../api/fields.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes } from '../../api/scope.js';
import { insertEnvironment, updateEnvironment } from './queries.js';

const EnvironmentItem = Type.Object({
  id: Uuid,
  key: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
  color: Type.Union([Type.String(), Type.Null()]),
  sortOrder: Type.Integer(),
  critical: Type.Boolean({
    description: 'Changes here ask for confirmation in the console (design record 025).',
  }),
  changeRequests: Type.Object(
    {
      required: Type.Boolean({
        description:
          'Direct writes to what this environment serves are refused (409 change_request_required).',
      }),
      approvals: Type.Integer({ minimum: 1, maximum: 5 }),
      emergencyOff: Type.Boolean({
        description: 'A Member may turn a flag off here directly despite `required`.',
      }),
    },
    { description: 'The change-request policy (design record 042).' },
  ),
});
const EnvironmentResponse = Type.Intersect([
  EnvironmentItem,
  Type.Object({ _actions: ActionsSchema }),
]);
const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });
const EnvironmentParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  env: Type.String(),
});

function environmentItem(row: Selectable<EnvironmentsTable>) {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    color: row.color,
    sortOrder: row.sort_order,
    critical: row.critical === 1,
    changeRequests: {
      required: row.change_requests_required === 1,
      approvals: row.change_request_approvals,
      emergencyOff: row.change_request_emergency_off === 1,
    },
  };
}

/** What PATCH may set of an environment's change-request policy; only an Admin sets it. */
const ChangeRequestPolicyPatch = Type.Object(
  {
    required: Type.Optional(Type.Boolean()),
    approvals: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
    emergencyOff: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

function environmentActions(role: Role) {
  return actionsFor(role, {
    update: { role: 'Member' },
    delete: { role: 'Admin' },
    createSdkKey: { role: 'Member' },
  });
}

/** Environments (spec: Environment; update and delete: design record 001). */
export function registerEnvironmentRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/projects/:project/environments',
    'Member',
    {
      schema: {
        tags: ['environments'],
        params: ProjectParams,
        body: Type.Object(
          {
            key: KeySchema,
            name: Type.Optional(Type.Union([NameSchema, Type.Null()])),
            color: Type.Optional(ColorSchema),
            sortOrder: Type.Optional(Type.Integer({ minimum: -2147483648, maximum: 2147483647 })),
            critical: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 201: EnvironmentResponse },
      },
    },
    async ({ project, ...access }, request, reply) => {
      const body = request.body;
      const environment = await mutateAs(services, access, (m) =>
        insertEnvironment(m, project, {
          key: body.key,
          name: body.name ?? null,
          color: body.color ?? null,
          sortOrder: body.sortOrder ?? 0,
          critical: body.critical ?? false,
        }),
      );
      return reply
        .status(201)
        .send({ ...environmentItem(environment), _actions: environmentActions(access.role) });
    },
  );

  route.get(
    '/orgs/:org/projects/:project/environments',
    'Viewer',
    {
      schema: {
        tags: ['environments'],
        params: ProjectParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(EnvironmentItem) },
      },
    },
    async ({ project, ...access }, request) => {
      const { rows, nextCursor } = await paginate(
        services.db.selectFrom('environments').selectAll().where('project_id', '=', project.id),
        request.query,
        { sortColumn: 'sort_order', sortValue: (row) => row.sort_order },
      );
      return {
        items: rows.map(environmentItem),
        next_cursor: nextCursor,
        _actions: actionsFor(access.role, { create: { role: 'Member' } }),
      };
    },
  );

  route.get(
    '/orgs/:org/projects/:project/environments/:env',
    'Viewer',
    {
      schema: {
        tags: ['environments'],
        params: EnvironmentParams,
        response: { 200: EnvironmentResponse },
      },
    },
    ({ environment, ...access }) => {
      return { ...environmentItem(environment), _actions: environmentActions(access.role) };
    },
  );

  route.patch(
    '/orgs/:org/projects/:project/environments/:env',
    'Member',
    {
      schema: {
        tags: ['environments'],
        params: EnvironmentParams,
        body: Type.Object(
          {
            name: Type.Optional(Type.Union([NameSchema, Type.Null()])),
            color: Type.Optional(ColorSchema),
            sortOrder: Type.Optional(Type.Integer({ minimum: -2147483648, maximum: 2147483647 })),
            critical: Type.Optional(Type.Boolean()),
            changeRequests: Type.Optional(ChangeRequestPolicyPatch),
          },
          { additionalProperties: false },
        ),
        response: { 200: EnvironmentResponse },
      },
    },
    async ({ project, environment, ...access }, request) => {
      const { name, color, sortOrder, critical, changeRequests: policy } = request.body;
      if (policy && !hasRole(access.role, 'Admin'))
        throw new ApiError(
          'forbidden',
          'Only an Admin sets the change-request policy of an environment.',
        );
      const updated = await mutateAs(services, access, async (m) => {
        const row = await updateEnvironment(m, environment.id, {
          ...(name !== undefined ? { name } : {}),
          ...(color !== undefined ? { color } : {}),
          ...(sortOrder !== undefined ? { sort_order: sortOrder } : {}),
          ...(critical !== undefined ? { critical: critical ? 1 : 0 } : {}),
          ...(policy?.required !== undefined
            ? { change_requests_required: policy.required ? 1 : 0 }
            : {}),
          ...(policy?.approvals !== undefined
            ? { change_request_approvals: policy.approvals }
            : {}),
          ...(policy?.emergencyOff !== undefined
            ? { change_request_emergency_off: policy.emergencyOff ? 1 : 0 }
            : {}),
        });
        await m.emit({
          type: 'environment.updated',
          project,
          environment,
          entity: { type: 'environment', id: environment.id, key: environment.key },
          changes: diffProperties(environmentItem(environment), environmentItem(row)),
          description: `Environment "${environment.key}" updated`,
        });
        return row;
      });
      return { ...environmentItem(updated), _actions: environmentActions(access.role) };
    },
  );

  route.delete(
    '/orgs/:org/projects/:project/environments/:env',
    'Admin',
    { schema: { tags: ['environments'], params: EnvironmentParams } },
    async ({ project, environment, ...access }, _request, reply) => {
      await mutateAs(services, access, async (m) => {
        await m.emit({
          type: 'environment.deleted',
          project,
          environment,
          entity: { type: 'environment', id: environment.id, key: environment.key },
          description: `Environment "${environment.key}" deleted`,
        });
        await removeFromSubscriptionFilters(m, 'environment_ids', environment.id);
        await m.trx.deleteFrom('environments').where('id', '=', environment.id).execute();
        await m.touchEnvironments([environment.id], 'describes');
      });
      return reply.status(204).send();
    },
  );
}
