import { v7 as uuid } from 'uuid';
import { mutateAs, notFound } from '../../api/access.js';
import { actionsFor } from '../../api/actions.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import type { ProjectScope } from '../../api/scope.js';
import { scopedRoutes } from '../../api/scope.js';
import { conflictOn } from '../../db/unique.js';
import type { Role } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { invalidField } from '../../errors.js';
import type { App } from '../../http/app-instance.js';
import type { Services } from '../../services.js';
import { metricItem, metricUsers, type MetricRow } from './queries.js';
import {
  DEFAULT_WINDOW_HOURS,
  MetricInput,
  MetricItem,
  MetricParams,
  MetricPatch,
  MetricResponse,
  ProjectParams,
} from './schemas.js';

function metricActions(role: Role) {
  return actionsFor(role, { update: { role: 'Member' }, delete: { role: 'Member' } });
}

/** `sum` and `mean` read a number from each event: they need the property holding it. */
function checkValueProperty(kind: MetricRow['kind'], valueProperty: string | null): void {
  if ((kind === 'sum' || kind === 'mean') && valueProperty === null)
    throw invalidField(
      'valueProperty',
      `is required for a "${kind}" metric: the event metadata member holding the number`,
    );
}

/** The project's metric `ref` (key or id). @throws ApiError 404 with near keys. */
async function requireMetric(
  services: Services,
  scope: ProjectScope,
  ref: string,
): Promise<MetricRow> {
  const rows = await services.db
    .selectFrom('metrics')
    .selectAll()
    .where('project_id', '=', scope.project.id)
    .execute();
  const metric = rows.find((row) => row.key === ref || row.id === ref);
  if (metric) return metric;
  throw notFound(
    'Metric',
    ref,
    rows.map((row) => row.key),
    { method: 'GET', path: `/api/v1/orgs/${scope.org.slug}/projects/${scope.project.key}/metrics` },
  );
}

/** A project's metric catalogue (contract `experiments.md`, section 1; design record 064). */
export function registerMetricRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  const project = (scope: ProjectScope) => ({ id: scope.project.id, key: scope.project.key });

  route.get(
    '/orgs/:org/projects/:project/metrics',
    'Viewer',
    {
      schema: {
        tags: ['metrics'],
        params: ProjectParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(MetricItem) },
      },
    },
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        services.db.selectFrom('metrics').selectAll().where('project_id', '=', scope.project.id),
        request.query,
        { sortColumn: 'key', sortValue: (row) => row.key },
      );
      return {
        items: rows.map(metricItem),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, { create: { role: 'Member' } }),
      };
    },
  );

  route.post(
    '/orgs/:org/projects/:project/metrics',
    'Member',
    {
      schema: {
        tags: ['metrics'],
        params: ProjectParams,
        body: MetricInput,
        response: { 201: MetricResponse },
      },
    },
    async (scope, request, reply) => {
      const body = request.body;
      const valueProperty = body.valueProperty ?? null;
      checkValueProperty(body.kind, valueProperty);
      const metric = await mutateAs(services, scope, async (m) => {
        const row: MetricRow = {
          id: uuid(),
          project_id: scope.project.id,
          key: body.key,
          name: body.name,
          description: body.description ?? null,
          event_key: body.eventKey,
          kind: body.kind,
          value_property: valueProperty,
          direction: body.direction,
          window_hours: body.windowHours ?? DEFAULT_WINDOW_HOURS,
          created_at: m.now,
          updated_at: m.now,
        };
        await m.trx
          .insertInto('metrics')
          .values(row)
          .execute()
          .catch(conflictOn('key', body.key, 'metric'));
        await m.emit({
          type: 'metric.created',
          project: project(scope),
          entity: { type: 'metric', id: row.id, key: row.key },
          description: `Metric "${row.key}" created (${row.kind} of "${row.event_key}")`,
        });
        return row;
      });
      return reply.status(201).send({ ...metricItem(metric), _actions: metricActions(scope.role) });
    },
  );

  route.get(
    '/orgs/:org/projects/:project/metrics/:metric',
    'Viewer',
    { schema: { tags: ['metrics'], params: MetricParams, response: { 200: MetricResponse } } },
    async (scope, request) => ({
      ...metricItem(await requireMetric(services, scope, request.params.metric)),
      _actions: metricActions(scope.role),
    }),
  );

  route.patch(
    '/orgs/:org/projects/:project/metrics/:metric',
    'Member',
    {
      schema: {
        tags: ['metrics'],
        params: MetricParams,
        body: MetricPatch,
        response: { 200: MetricResponse },
      },
    },
    async (scope, request) => {
      const before = await requireMetric(services, scope, request.params.metric);
      const body = request.body;
      const after: MetricRow = {
        ...before,
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.eventKey !== undefined ? { event_key: body.eventKey } : {}),
        ...(body.kind !== undefined ? { kind: body.kind } : {}),
        ...(body.valueProperty !== undefined ? { value_property: body.valueProperty } : {}),
        ...(body.direction !== undefined ? { direction: body.direction } : {}),
        ...(body.windowHours !== undefined ? { window_hours: body.windowHours } : {}),
      };
      checkValueProperty(after.kind, after.value_property);
      const changes = diffProperties(metricItem(before), metricItem(after)).filter(
        (change) => change.property !== 'UpdatedAt',
      );
      if (changes.length === 0)
        return { ...metricItem(before), _actions: metricActions(scope.role) };
      const updated = await mutateAs(services, scope, async (m) => {
        const row = { ...after, updated_at: m.now };
        await m.trx.updateTable('metrics').set(row).where('id', '=', before.id).execute();
        await m.emit({
          type: 'metric.updated',
          project: project(scope),
          entity: { type: 'metric', id: row.id, key: row.key },
          changes,
          description: `Metric "${row.key}" updated`,
        });
        return row;
      });
      return { ...metricItem(updated), _actions: metricActions(scope.role) };
    },
  );

  route.delete(
    '/orgs/:org/projects/:project/metrics/:metric',
    'Member',
    { schema: { tags: ['metrics'], params: MetricParams } },
    async (scope, request, reply) => {
      const metric = await requireMetric(services, scope, request.params.metric);
      await mutateAs(services, scope, async (m) => {
        const users = await metricUsers(m.trx, metric);
        if (users.length > 0)
          throw invalidField(
            'metric',
            `is used by ${users.join(', ')}; stop or change what uses it first`,
          );
        await m.emit({
          type: 'metric.deleted',
          project: project(scope),
          entity: { type: 'metric', id: metric.id, key: metric.key },
          description: `Metric "${metric.key}" deleted`,
        });
        await m.trx.deleteFrom('metrics').where('id', '=', metric.id).execute();
      });
      return reply.status(204).send();
    },
  );
}
