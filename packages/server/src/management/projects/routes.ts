import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import type { ProjectsTable, Role } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { removeFromSubscriptionFilters } from '../../webhooks/filters.js';
import { mutateAs, projectInScope } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import { insertEnvironment } from '../environments/queries.js';
import {
  ColorSchema,
  DescriptionSchema,
  KeySchema,
  NameSchema,
  Timestamp,
  Uuid,
} from '../../api/fields.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes } from '../../api/scope.js';
import { insertProject } from './queries.js';

const ProjectItem = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
const ProjectResponse = Type.Intersect([ProjectItem, Type.Object({ _actions: ActionsSchema })]);
const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });

function projectItem(row: Selectable<ProjectsTable>) {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    description: row.description,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function projectActions(role: Role) {
  return actionsFor(role, {
    update: { role: 'Admin' },
    delete: { role: 'Admin' },
    createEnvironment: { role: 'Member' },
    createFlag: { role: 'Member' },
  });
}

/** The environments a project gets when its create request names none. */
const DEFAULT_ENVIRONMENTS: { key: string; name: string; color: string; critical?: boolean }[] = [
  { key: 'development', name: 'Development', color: '#3b82f6' },
  { key: 'production', name: 'Production', color: '#ef4444' },
];

/** An environment named `production` at project creation is critical unless told otherwise (design record 025). */
const CRITICAL_BY_DEFAULT = 'production';

/** Projects (not shown in the spec; design record 001). */
export function registerProjectRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/projects',
    'Admin',
    {
      wholeOrganization: true,
      schema: {
        tags: ['projects'],
        params: Type.Object({ org: Type.String() }),
        body: Type.Object(
          {
            key: KeySchema,
            name: NameSchema,
            description: Type.Optional(DescriptionSchema),
            environments: Type.Optional(
              Type.Array(
                Type.Object(
                  {
                    key: KeySchema,
                    name: Type.Optional(Type.Union([NameSchema, Type.Null()])),
                    color: Type.Optional(ColorSchema),
                    critical: Type.Optional(Type.Boolean()),
                  },
                  { additionalProperties: false },
                ),
                { minItems: 1, maxItems: 50 },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: ProjectResponse },
      },
    },
    async (scope, request, reply) => {
      const body = request.body;
      const environments = body.environments ?? DEFAULT_ENVIRONMENTS;
      const seen = new Set<string>();
      for (const [index, environment] of environments.entries()) {
        if (seen.has(environment.key)) {
          throw invalidField(`environments.${index}.key`, `duplicate key "${environment.key}"`);
        }
        seen.add(environment.key);
      }
      const row = await mutateAs(services, scope, async (m) => {
        const project: ProjectsTable = {
          id: uuid(),
          organization_id: scope.org.id,
          key: body.key,
          name: body.name,
          description: body.description ?? null,
          change_request_count: 0,
          created_at: m.now,
          updated_at: m.now,
        };
        await insertProject(m, project);
        for (const [index, environment] of environments.entries()) {
          await insertEnvironment(m, project, {
            key: environment.key,
            name: environment.name ?? null,
            color: environment.color ?? null,
            sortOrder: index,
            critical: environment.critical ?? environment.key === CRITICAL_BY_DEFAULT,
          });
        }
        return project;
      });
      return reply.status(201).send({ ...projectItem(row), _actions: projectActions(scope.role) });
    },
  );

  route.get(
    '/orgs/:org/projects',
    'Viewer',
    {
      schema: {
        tags: ['projects'],
        params: Type.Object({ org: Type.String() }),
        querystring: PageQuery,
        response: { 200: pagedSchema(ProjectItem) },
      },
    },
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        services.db.selectFrom('projects').selectAll().where('organization_id', '=', scope.org.id),
        request.query,
      );
      return {
        items: rows.filter((row) => projectInScope(scope, row.id)).map(projectItem),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, { create: { role: 'Admin' } }),
      };
    },
  );

  route.get(
    '/orgs/:org/projects/:project',
    'Viewer',
    { schema: { tags: ['projects'], params: ProjectParams, response: { 200: ProjectResponse } } },
    ({ project, ...scope }) => {
      return { ...projectItem(project), _actions: projectActions(scope.role) };
    },
  );

  route.patch(
    '/orgs/:org/projects/:project',
    'Admin',
    {
      schema: {
        tags: ['projects'],
        params: ProjectParams,
        body: Type.Object(
          { name: Type.Optional(NameSchema), description: Type.Optional(DescriptionSchema) },
          { additionalProperties: false },
        ),
        response: { 200: ProjectResponse },
      },
    },
    async ({ project, ...scope }, request) => {
      const row = await mutateAs(services, scope, async (m) => {
        const updated = await m.trx
          .updateTable('projects')
          .set({ ...request.body, updated_at: m.now })
          .where('id', '=', project.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        await m.emit({
          type: 'project.updated',
          project,
          entity: { type: 'project', id: project.id, key: project.key },
          changes: diffProperties(
            { name: project.name, description: project.description },
            { name: updated.name, description: updated.description },
          ),
          description: `Project "${project.key}" updated`,
        });
        return updated;
      });
      return { ...projectItem(row), _actions: projectActions(scope.role) };
    },
  );

  route.delete(
    '/orgs/:org/projects/:project',
    'Admin',
    { schema: { tags: ['projects'], params: ProjectParams } },
    async ({ project, ...scope }, _request, reply) => {
      await mutateAs(services, scope, async (m) => {
        // The event goes out first so that subscriptions this deletion disables still get it.
        await m.emit({
          type: 'project.deleted',
          project,
          entity: { type: 'project', id: project.id, key: project.key },
          description: `Project "${project.key}" deleted`,
        });
        await removeFromSubscriptionFilters(m, 'project_ids', project.id);
        // Its environments go with it, so they leave environment filters too.
        const environments = await m.trx
          .selectFrom('environments')
          .select('id')
          .where('project_id', '=', project.id)
          .execute();
        for (const environment of environments)
          await removeFromSubscriptionFilters(m, 'environment_ids', environment.id);
        await m.trx.deleteFrom('projects').where('id', '=', project.id).execute();
      });
      return reply.status(204).send();
    },
  );
}
