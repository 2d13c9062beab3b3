import type { Kysely, Selectable } from 'kysely';
import { Type, type Static } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type {
  ProjectsTable,
  Role,
  Schema,
  SegmentsTable,
  StoredCondition,
} from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import type { Services } from '../../services.js';
import { isUuid, mutateAs, notFound, type OrgAccess } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import {
  DescriptionSchema,
  KeySchema,
  NameSchema,
  NullableString,
  Timestamp,
  Uuid,
} from '../../api/fields.js';
import { deleteUnlessReferenced } from '../../api/deletion.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import {
  ConditionInputSchema,
  ConditionResponse,
  FieldProblems,
  LOGICAL_OPERATORS,
  normalizeConditions,
} from './conditions.js';
import { insertSegment, updateSegment } from './segment-queries.js';
import { scopedRoutes } from '../../api/scope.js';
import { keyOrNameContains, SearchText } from '../../api/search.js';

const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });
const SegmentParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  segment: Type.String(),
});

const segmentFields = {
  name: Type.Optional(Type.Union([NameSchema, Type.Null()])),
  description: Type.Optional(DescriptionSchema),
  conditions: Type.Optional(Type.Array(ConditionInputSchema, { maxItems: 100 })),
  conditionLogic: Type.Optional(Type.Enum(LOGICAL_OPERATORS)),
};

/** User segment (spec: User segment, plus `conditionLogic`). */
const SegmentItem = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: NullableString,
  description: NullableString,
  conditions: Type.Array(ConditionResponse),
  conditionLogic: Type.Enum(LOGICAL_OPERATORS),
  revision: Type.Integer({
    description:
      'The revision of the segment, +1 on every change: the `baseRevision` of a `segment` change request (design record 042).',
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
const SegmentResponse = Type.Intersect([SegmentItem, Type.Object({ _actions: ActionsSchema })]);

/** The rules that refer to a segment (design record 025). */
const SegmentUsage = Type.Object({
  items: Type.Array(
    Type.Object({
      ruleId: Uuid,
      /** The rule's place in its flag's rules in that environment, from 1 ("Rule 2"). */
      rulePosition: Type.Integer({ minimum: 1 }),
      ruleDescription: NullableString,
      flagKey: Type.String(),
      flagName: NullableString,
      environmentKey: Type.String(),
      environmentName: NullableString,
    }),
  ),
});

type SegmentRow = Selectable<SegmentsTable>;

function segmentItem(row: SegmentRow) {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    description: row.description,
    conditions: JSON.parse(row.conditions) as StoredCondition[],
    conditionLogic: row.condition_logic,
    revision: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** What a segment change can alter, as event `changes` report it (timestamps left out). */
function definition(row: SegmentRow) {
  const { key, name, description, conditions, conditionLogic } = segmentItem(row);
  return { key, name, description, conditions, conditionLogic };
}

function segmentActions(role: Role) {
  return actionsFor(role, { update: { role: 'Member' }, delete: { role: 'Member' } });
}

/**
 * Validates and normalises segment conditions (same rules as a targeting rule's conditions).
 * @throws ApiError 400 `validation_failed` naming each invalid member, e.g. `conditions.0.operator`.
 */
function checkConditions(
  conditions: Static<typeof ConditionInputSchema>[],
  keepIds: ReadonlySet<string>,
): StoredCondition[] {
  const problems = new FieldProblems();
  const normalized = normalizeConditions(conditions, 'conditions', problems, keepIds);
  problems.throwIfAny();
  return normalized;
}

/** The rules that target the segment, with their flag and environment keys. */
function segmentUsers(db: Kysely<Schema>, segmentId: string) {
  return db
    .selectFrom('rules')
    .innerJoin('flags', 'flags.id', 'rules.flag_id')
    .innerJoin('environments', 'environments.id', 'rules.environment_id')
    .select((eb) => [
      'rules.id',
      'rules.description as ruleDescription',
      eb
        .selectFrom('rules as earlier')
        .select((count) => count.fn.countAll<number>().as('n'))
        .whereRef('earlier.flag_id', '=', 'rules.flag_id')
        .whereRef('earlier.environment_id', '=', 'rules.environment_id')
        .whereRef('earlier.priority', '<=', 'rules.priority')
        .as('rulePosition'),
      'flags.key as flagKey',
      'flags.name as flagName',
      'environments.key as environmentKey',
      'environments.name as environmentName',
    ])
    .where('rules.segment_id', '=', segmentId)
    .orderBy('flags.key')
    .orderBy('environments.key')
    .execute();
}

/**
 * Resolves `{segment}` (key or id) inside the project.
 * @throws ApiError 404 with near keys in `did_you_mean`.
 */
async function requireSegment(
  services: Services,
  access: OrgAccess,
  project: ProjectsTable,
  ref: string,
): Promise<SegmentRow> {
  const segment = await services.db
    .selectFrom('segments')
    .selectAll()
    .where('project_id', '=', project.id)
    .where(isUuid(ref) ? 'id' : 'key', '=', ref)
    .executeTakeFirst();
  if (segment) return segment;
  const keys = await services.db
    .selectFrom('segments')
    .select('key')
    .where('project_id', '=', project.id)
    .execute();
  throw notFound(
    'Segment',
    ref,
    keys.map((row) => row.key),
    { method: 'GET', path: `/api/v1/orgs/${access.org.slug}/projects/${project.key}/segments` },
  );
}

/** User segments of a project (spec: User segment, endpoint rule 10; design record 007). */
export function registerSegmentRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  const segmentsPath = '/orgs/:org/projects/:project/segments';

  route.post(
    segmentsPath,
    'Member',
    {
      schema: {
        tags: ['segments'],
        params: ProjectParams,
        body: Type.Object({ key: KeySchema, ...segmentFields }, { additionalProperties: false }),
        response: { 201: SegmentResponse },
      },
    },
    async ({ project, ...access }, request, reply) => {
      const body = request.body;
      const conditions = checkConditions(body.conditions ?? [], new Set());
      const row = await mutateAs(services, access, (m) =>
        insertSegment(m, project, {
          key: body.key,
          name: body.name ?? null,
          description: body.description ?? null,
          conditions: JSON.stringify(conditions),
          condition_logic: body.conditionLogic ?? 'And',
        }),
      );
      return reply.status(201).send({ ...segmentItem(row), _actions: segmentActions(access.role) });
    },
  );

  route.get(
    segmentsPath,
    'Viewer',
    {
      schema: {
        tags: ['segments'],
        params: ProjectParams,
        querystring: Type.Intersect([PageQuery, Type.Object({ q: Type.Optional(SearchText) })]),
        response: { 200: pagedSchema(SegmentItem) },
      },
    },
    async ({ project, ...access }, request) => {
      let query = services.db
        .selectFrom('segments')
        .selectAll()
        .where('project_id', '=', project.id);
      if (request.query.q) query = query.where(keyOrNameContains(request.query.q));
      const { rows, nextCursor } = await paginate(query, request.query, {
        sortColumn: 'key',
        sortValue: (row) => row.key,
      });
      return {
        items: rows.map(segmentItem),
        next_cursor: nextCursor,
        _actions: actionsFor(access.role, { create: { role: 'Member' } }),
      };
    },
  );

  route.get(
    `${segmentsPath}/:segment`,
    'Viewer',
    { schema: { tags: ['segments'], params: SegmentParams, response: { 200: SegmentResponse } } },
    async ({ project, ...access }, request) => {
      const segment = await requireSegment(services, access, project, request.params.segment);
      return { ...segmentItem(segment), _actions: segmentActions(access.role) };
    },
  );

  route.get(
    `${segmentsPath}/:segment/usage`,
    'Viewer',
    {
      schema: {
        tags: ['segments'],
        summary: 'The targeting rules that refer to the segment, by flag and environment',
        params: SegmentParams,
        response: { 200: SegmentUsage },
      },
    },
    async ({ project, ...access }, request) => {
      const segment = await requireSegment(services, access, project, request.params.segment);
      const users = await segmentUsers(services.db, segment.id);
      return {
        items: users.map((user) => ({
          ruleId: user.id,
          rulePosition: Number(user.rulePosition),
          ruleDescription: user.ruleDescription,
          flagKey: user.flagKey,
          flagName: user.flagName,
          environmentKey: user.environmentKey,
          environmentName: user.environmentName,
        })),
      };
    },
  );

  route.patch(
    `${segmentsPath}/:segment`,
    'Member',
    {
      schema: {
        tags: ['segments'],
        params: SegmentParams,
        body: Type.Object(
          { key: Type.Optional(KeySchema), ...segmentFields },
          { additionalProperties: false },
        ),
        response: { 200: SegmentResponse },
      },
    },
    async ({ project, ...access }, request) => {
      const segment = await requireSegment(services, access, project, request.params.segment);
      const body = request.body;
      const conditions =
        body.conditions !== undefined
          ? checkConditions(
              body.conditions,
              new Set(segmentItem(segment).conditions.map((c) => c.id)),
            )
          : undefined;
      const row = await mutateAs(services, access, async (m) => {
        const updated = await updateSegment(m, segment, {
          ...(body.key !== undefined ? { key: body.key } : {}),
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(conditions !== undefined ? { conditions: JSON.stringify(conditions) } : {}),
          ...(body.conditionLogic !== undefined ? { condition_logic: body.conditionLogic } : {}),
        });
        await m.emit({
          type: 'segment.updated',
          project,
          entity: { type: 'segment', id: segment.id, key: updated.key },
          changes: diffProperties(definition(segment), definition(updated)),
          description: `Segment "${updated.key}" updated`,
        });
        return updated;
      });
      return { ...segmentItem(row), _actions: segmentActions(access.role) };
    },
  );

  route.delete(
    `${segmentsPath}/:segment`,
    'Member',
    { schema: { tags: ['segments'], params: SegmentParams } },
    async ({ project, ...access }, request, reply) => {
      const segment = await requireSegment(services, access, project, request.params.segment);
      await mutateAs(services, access, (m) =>
        deleteUnlessReferenced(
          m,
          { kind: 'segment', id: segment.id, key: segment.key, project },
          async () => {
            const users = await segmentUsers(m.trx, segment.id);
            if (users.length === 0) return null;
            const list = users
              .map((u) => `flag "${u.flagKey}" in "${u.environmentKey}" (rule ${u.id})`)
              .join(', ');
            return `Segment "${segment.key}" is used by ${users.length} rule(s): ${list}. Remove or change those rules first.`;
          },
        ),
      );
      return reply.status(204).send();
    },
  );
}
