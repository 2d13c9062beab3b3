import { sql, type RawBuilder } from 'kysely';
import { Type, type Static } from 'typebox';
import type { App } from '../http/app-instance.js';
import type { Dialect } from '../db/database.js';
import type { WebhookEventsTable } from '../db/schema.js';
import { AUDIT_ONLY_EVENT_TYPES, EVENT_TYPES, type EventPayload } from '../events/types.js';
import { invalidField } from '../errors.js';
import type { Services } from '../services.js';

import { MAX_PAGE_SIZE, PageQuery, paginate, pagedSchema } from '../api/pagination.js';
import type { OrgAccess } from '../api/access.js';
import { mayReadInSql } from '../api/reach.js';
import { withKeys } from './readable.js';
import { scopedRoutes } from '../api/scope.js';

const EntityRefSchema = Type.Object({ type: Type.String(), id: Type.String() });

const AuditEventSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  type: Type.String(),
  occurredAt: Type.String({ format: 'date-time' }),
  actor: Type.Object({
    userId: Type.String(),
    email: Type.Union([Type.String(), Type.Null()]),
    name: Type.Union([Type.String(), Type.Null()]),
  }),
  entity: EntityRefSchema,
  child: Type.Optional(EntityRefSchema),
  children: Type.Optional(Type.Array(EntityRefSchema)),
  changes: Type.Array(
    Type.Object({
      property: Type.String(),
      from: Type.Union([Type.String(), Type.Null()]),
      to: Type.Union([Type.String(), Type.Null()]),
      fromKey: Type.Optional(
        Type.String({
          description: 'The key of the variation, flag, segment or environment `from` names by id.',
        }),
      ),
      toKey: Type.Optional(
        Type.String({
          description: 'The key of the variation, flag, segment or environment `to` names by id.',
        }),
      ),
    }),
  ),
  description: Type.String(),
  projectId: Type.Union([Type.String(), Type.Null()]),
  environmentId: Type.Union([Type.String(), Type.Null()]),
  changeRequest: Type.Optional(
    Type.Object(
      { id: Type.String({ format: 'uuid' }), number: Type.Integer() },
      { description: 'The change request that applied this change (design record 042).' },
    ),
  ),
  bypassedChangeRequest: Type.Optional(
    Type.Literal(true, {
      description: 'An emergency off that went past the environment’s change-request policy.',
    }),
  ),
});

const Id = Type.Optional(Type.String({ format: 'uuid' }));
const Instant = Type.Optional(Type.String({ format: 'date-time' }));

const AuditLogQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  projectId: Id,
  environmentId: Id,
  entityId: Id,
  actorId: Id,
  from: Instant,
  to: Instant,
});

/**
 * The event types a `type` filter names: the exact type, or every type under a prefix that
 * ends in a dot (`flag.` covers `flag.toggled` and `flag.rule.created`).
 * @throws ApiError `validation_failed` on `type` when it names no event type.
 */
function typesMatching(filter: string): string[] {
  const types = [...EVENT_TYPES, ...AUDIT_ONLY_EVENT_TYPES].filter((type) =>
    filter.endsWith('.') ? type.startsWith(filter) : type === filter,
  );
  if (types.length === 0)
    throw invalidField(
      'type',
      'names no event type; give an exact type (flag.toggled) or a prefix ending in a dot (flag.)',
    );
  return types;
}

/** A string member of the stored payload JSON (`path` such as `['entity', 'id']`). */
function payloadMember(dialect: Dialect, path: readonly string[]): RawBuilder<string | null> {
  return dialect === 'postgres'
    ? sql<string | null>`(payload::json #>> ${`{${path.join(',')}}`}::text[])`
    : sql<string | null>`json_extract(payload, ${`$.${path.join('.')}`})`;
}

/** An ISO-8601 instant in the stored form (UTC with milliseconds), so text comparison works on SQLite. */
function storedInstant(value: string): string {
  return new Date(value).toISOString();
}

function auditItem(row: WebhookEventsTable) {
  const payload = JSON.parse(row.payload) as EventPayload;
  return {
    id: row.id,
    type: payload.type,
    occurredAt: payload.occurredAt,
    actor: payload.actor,
    entity: payload.entity,
    ...(payload.child ? { child: payload.child } : {}),
    ...(payload.children ? { children: payload.children } : {}),
    changes: payload.changes,
    description: payload.description,
    projectId: payload.projectId,
    environmentId: payload.environmentId,
    ...(payload.changeRequest ? { changeRequest: payload.changeRequest } : {}),
    ...(payload.bypassedChangeRequest ? { bypassedChangeRequest: true as const } : {}),
  };
}

/** The filters of an audit-log read (all optional), as the query string gives them. */
type AuditFilters = Omit<Static<typeof AuditLogQuery>, 'limit' | 'cursor'>;

/**
 * One page of the organization's recorded changes matching `filters`, most recent first, with
 * the keys of the ids their changes hold. Webhook test events are left out.
 */
async function readAuditLog(
  services: Services,
  scope: OrgAccess,
  filters: AuditFilters,
  page: { limit?: number | undefined; cursor?: string | undefined },
) {
  const { type, projectId, environmentId, entityId, actorId, from, to } = filters;
  if (from && to && storedInstant(from) > storedInstant(to))
    throw invalidField('to', 'must not be before from');
  const member = (path: readonly string[]) => payloadMember(services.dialect, path);
  let query = services.db
    .selectFrom('webhook_events')
    .selectAll()
    .where('organization_id', '=', scope.org.id)
    .where(mayReadInSql(scope, 'project_id'))
    // The synthetic event of `POST /webhooks/{id}/test` is the only `flag.toggled` without a
    // project (webhooks/delivery-routes.ts): it stays out of the audit log.
    .where((eb) => eb.or([eb('type', '!=', 'flag.toggled'), eb('project_id', 'is not', null)]));
  if (type) query = query.where('type', 'in', typesMatching(type));
  if (projectId) query = query.where('project_id', '=', projectId);
  if (environmentId) query = query.where('environment_id', '=', environmentId);
  if (from) query = query.where('occurred_at', '>=', storedInstant(from));
  if (to) query = query.where('occurred_at', '<', storedInstant(to));
  if (actorId) query = query.where(member(['actor', 'userId']), '=', actorId);
  if (entityId)
    query = query.where((eb) =>
      eb.or([
        eb(member(['entity', 'id']), '=', entityId),
        eb(member(['child', 'id']), '=', entityId),
      ]),
    );
  const { rows, nextCursor } = await paginate(query, page, {
    sortColumn: 'occurred_at',
    sortValue: (row) => row.occurred_at,
    direction: 'desc',
  });
  return {
    items: await withKeys(services, scope.org.id, rows.map(auditItem)),
    next_cursor: nextCursor,
    _actions: {},
  };
}

/**
 * `GET /orgs/{org}/audit-log` (Admin): every recorded change of the organization, most recent
 * first, read from the event outbox that each mutation writes in its own transaction (design
 * record 004, Audit log). Webhook test events are left out; a caller with a project allowlist
 * reads only the events of its projects (design record 033). `GET …/flags/{flag}/history`
 * (Viewer) is one flag's part of it, for whoever can see the flag (design record 038).
 */
export function registerAuditLogRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/orgs/:org/audit-log',
    'Admin',
    {
      schema: {
        tags: ['audit-log'],
        params: Type.Object({ org: Type.String() }),
        querystring: AuditLogQuery,
        response: { 200: pagedSchema(AuditEventSchema) },
      },
    },
    (scope, request) => readAuditLog(services, scope, request.query, request.query),
  );
  route.get(
    '/orgs/:org/projects/:project/flags/:flag/history',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: Type.Object({ org: Type.String(), project: Type.String(), flag: Type.String() }),
        querystring: PageQuery,
        response: { 200: pagedSchema(AuditEventSchema) },
      },
    },
    (scope, request) =>
      readAuditLog(
        services,
        scope,
        { projectId: scope.project.id, entityId: scope.flag.id },
        request.query,
      ),
  );
}
