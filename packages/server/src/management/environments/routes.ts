import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import type { Mutation } from '../../db/mutate.js';
import type { EnvironmentsTable, ProjectsTable, Role } from '../../db/schema.js';
import { conflictOn } from '../../db/unique.js';
import { diffProperties } from '../../events/types.js';
import type { Services } from '../../services.js';
import { removeFromSubscriptionFilters } from '../../webhooks/filters.js';
import {
  isUuid,
  mutateAs,
  notFound,
  requireOrg,
  requireProject,
  type OrgAccess,
} from '../access.js';
import { ActionsSchema, actionsFor } from '../actions.js';
import { ColorSchema, KeySchema, NameSchema, Uuid } from '../fields.js';
import { initialConfiguration } from '../flags/configuration.js';
import { PageQuery, paginate, pagedSchema } from '../pagination.js';

const EnvironmentItem = Type.Object({
  id: Uuid,
  key: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
  color: Type.Union([Type.String(), Type.Null()]),
  sortOrder: Type.Integer(),
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
  return { id: row.id, key: row.key, name: row.name, color: row.color, sortOrder: row.sort_order };
}

function environmentActions(role: Role) {
  return actionsFor(role, {
    update: { role: 'Member' },
    delete: { role: 'Admin' },
    createSdkKey: { role: 'Member' },
  });
}

/**
 * Resolves `{env}` (key or id) inside a project.
 * @throws ApiError 404 with near keys in `did_you_mean`.
 */
export async function requireEnvironment(
  services: Services,
  access: OrgAccess,
  project: ProjectsTable,
  envRef: string,
): Promise<Selectable<EnvironmentsTable>> {
  const environment = await services.db
    .selectFrom('environments')
    .selectAll()
    .where('project_id', '=', project.id)
    .where(isUuid(envRef) ? 'id' : 'key', '=', envRef)
    .executeTakeFirst();
  if (environment) return environment;
  const keys = await services.db
    .selectFrom('environments')
    .select('key')
    .where('project_id', '=', project.id)
    .execute();
  throw notFound(
    'Environment',
    envRef,
    keys.map((row) => row.key),
    { method: 'GET', path: `/api/v1/orgs/${access.org.slug}/projects/${project.key}/environments` },
  );
}

/**
 * Inserts an environment, gives every flag of the project its initial (disabled) configuration
 * there, and emits `environment.created`.
 */
export async function insertEnvironment(
  m: Mutation,
  projectId: string,
  input: { key: string; name: string | null; color: string | null; sortOrder: number },
): Promise<EnvironmentsTable> {
  const environment: EnvironmentsTable = {
    id: uuid(),
    project_id: projectId,
    key: input.key,
    name: input.name,
    color: input.color,
    sort_order: input.sortOrder,
    version: 1,
    created_at: m.now,
    updated_at: m.now,
  };
  await m.trx
    .insertInto('environments')
    .values(environment)
    .execute()
    .catch(conflictOn('key', input.key, 'environment'));
  const variations = await m.trx
    .selectFrom('variations')
    .innerJoin('flags', 'flags.id', 'variations.flag_id')
    .select(['variations.flag_id', 'variations.id'])
    .where('flags.project_id', '=', projectId)
    .orderBy('variations.flag_id')
    .orderBy('variations.sort_order')
    .execute();
  const byFlag = new Map<string, string[]>();
  for (const variation of variations) {
    const list = byFlag.get(variation.flag_id) ?? [];
    list.push(variation.id);
    byFlag.set(variation.flag_id, list);
  }
  const rows = [...byFlag].map(([flagId, variationIds]) =>
    initialConfiguration(flagId, environment.id, variationIds, m.now),
  );
  if (rows.length > 0) await m.trx.insertInto('flag_environments').values(rows).execute();
  await m.emit({
    type: 'environment.created',
    projectId,
    environmentId: environment.id,
    entity: { type: 'environment', id: environment.id },
    description: `Environment "${environment.key}" created`,
  });
  return environment;
}

/** Environments (spec: Environment; update and delete: design record 001). */
export function registerEnvironmentRoutes(app: App, services: Services): void {
  app.post(
    '/orgs/:org/projects/:project/environments',
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
          },
          { additionalProperties: false },
        ),
        response: { 201: EnvironmentResponse },
      },
    },
    async (request, reply) => {
      const access = await requireOrg(services, request, request.params.org, 'Member');
      const project = await requireProject(services, access, request.params.project);
      const body = request.body;
      const environment = await mutateAs(services, access, (m) =>
        insertEnvironment(m, project.id, {
          key: body.key,
          name: body.name ?? null,
          color: body.color ?? null,
          sortOrder: body.sortOrder ?? 0,
        }),
      );
      return reply
        .status(201)
        .send({ ...environmentItem(environment), _actions: environmentActions(access.role) });
    },
  );

  app.get(
    '/orgs/:org/projects/:project/environments',
    {
      schema: {
        tags: ['environments'],
        params: ProjectParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(EnvironmentItem) },
      },
    },
    async (request) => {
      const access = await requireOrg(services, request, request.params.org);
      const project = await requireProject(services, access, request.params.project);
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

  app.get(
    '/orgs/:org/projects/:project/environments/:env',
    {
      schema: {
        tags: ['environments'],
        params: EnvironmentParams,
        response: { 200: EnvironmentResponse },
      },
    },
    async (request) => {
      const access = await requireOrg(services, request, request.params.org);
      const project = await requireProject(services, access, request.params.project);
      const environment = await requireEnvironment(services, access, project, request.params.env);
      return { ...environmentItem(environment), _actions: environmentActions(access.role) };
    },
  );

  app.patch(
    '/orgs/:org/projects/:project/environments/:env',
    {
      schema: {
        tags: ['environments'],
        params: EnvironmentParams,
        body: Type.Object(
          {
            name: Type.Optional(Type.Union([NameSchema, Type.Null()])),
            color: Type.Optional(ColorSchema),
            sortOrder: Type.Optional(Type.Integer({ minimum: -2147483648, maximum: 2147483647 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: EnvironmentResponse },
      },
    },
    async (request) => {
      const access = await requireOrg(services, request, request.params.org, 'Member');
      const project = await requireProject(services, access, request.params.project);
      const environment = await requireEnvironment(services, access, project, request.params.env);
      const { name, color, sortOrder } = request.body;
      const updated = await mutateAs(services, access, async (m) => {
        const row = await m.trx
          .updateTable('environments')
          .set({
            ...(name !== undefined ? { name } : {}),
            ...(color !== undefined ? { color } : {}),
            ...(sortOrder !== undefined ? { sort_order: sortOrder } : {}),
            updated_at: m.now,
          })
          .where('id', '=', environment.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        await m.emit({
          type: 'environment.updated',
          projectId: project.id,
          environmentId: environment.id,
          entity: { type: 'environment', id: environment.id },
          changes: diffProperties(environmentItem(environment), environmentItem(row)),
          description: `Environment "${environment.key}" updated`,
        });
        return row;
      });
      return { ...environmentItem(updated), _actions: environmentActions(access.role) };
    },
  );

  app.delete(
    '/orgs/:org/projects/:project/environments/:env',
    { schema: { tags: ['environments'], params: EnvironmentParams } },
    async (request, reply) => {
      const access = await requireOrg(services, request, request.params.org, 'Admin');
      const project = await requireProject(services, access, request.params.project);
      const environment = await requireEnvironment(services, access, project, request.params.env);
      await mutateAs(services, access, async (m) => {
        await m.emit({
          type: 'environment.deleted',
          projectId: project.id,
          environmentId: environment.id,
          entity: { type: 'environment', id: environment.id },
          description: `Environment "${environment.key}" deleted`,
        });
        await removeFromSubscriptionFilters(m, 'environment_ids', environment.id);
        await m.trx.deleteFrom('environments').where('id', '=', environment.id).execute();
        m.touchEnvironments([environment.id]);
      });
      return reply.status(204).send();
    },
  );
}
