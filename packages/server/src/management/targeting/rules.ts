import type { FastifyRequest } from 'fastify';
import type { Selectable } from 'kysely';
import { Type, type Static } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import type { Mutation } from '../../db/mutate.js';
import type { Role, RulesTable, StoredConditionGroup } from '../../db/schema.js';
import { diffProperties, type EventType, type PropertyChange } from '../../events/types.js';
import { ApiError } from '../../http/errors.js';
import type { Services } from '../../services.js';
import { mutateAs, requireOrg, requireProject } from '../access.js';
import { ActionsSchema, actionsFor } from '../actions.js';
import { DescriptionSchema, NullableString, Uuid } from '../fields.js';
import { requireEnvironment } from '../environments/routes.js';
import { PageQuery, paginate, pagedSchema } from '../pagination.js';
import { requireFlag, type FlagRow } from '../flags/queries.js';
import {
  ConditionInputSchema,
  ConditionResponse,
  FieldProblems,
  normalizeConditions,
  type LogicalOperator,
} from './conditions.js';

const FlagEnvParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
});
const RuleParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
  rule: Type.String(),
});
type FlagEnvParams = Static<typeof FlagEnvParams>;

const ConditionGroupInput = Type.Object(
  {
    id: Type.Optional(Uuid),
    /** `And` or `Or`, matched case-insensitively; omitted or null means `And` (design record 007). */
    operator: Type.Optional(Type.Union([Type.String({ maxLength: 16 }), Type.Null()])),
    conditions: Type.Array(ConditionInputSchema, { maxItems: 100 }),
  },
  { additionalProperties: false },
);
type ConditionGroupInput = Static<typeof ConditionGroupInput>;

const ruleFields = {
  description: Type.Optional(DescriptionSchema),
  variationId: Uuid,
  rolloutPercentage: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()]),
  ),
  userSegmentId: Type.Optional(Type.Union([Uuid, Type.Null()])),
  conditionGroups: Type.Optional(
    Type.Union([Type.Array(ConditionGroupInput, { maxItems: 50 }), Type.Null()]),
  ),
};
/** Rule create and full replacement (spec: endpoint rule 5). */
const RuleBody = Type.Object(ruleFields, { additionalProperties: false });
/** Partial update: members left out keep their stored value. */
const RulePatchBody = Type.Object(
  { ...ruleFields, variationId: Type.Optional(Uuid) },
  { additionalProperties: false },
);
type RulePatchBody = Static<typeof RulePatchBody>;

const ConditionGroupResponse = Type.Object({
  id: Uuid,
  operator: Type.Enum(['And', 'Or']),
  conditions: Type.Array(ConditionResponse),
});
/** Targeting rule (spec: Targeting rule). */
const RuleItem = Type.Object({
  id: Uuid,
  priority: Type.Integer(),
  description: NullableString,
  variationId: Uuid,
  rolloutPercentage: Type.Union([Type.Integer(), Type.Null()]),
  userSegmentId: Type.Union([Uuid, Type.Null()]),
  conditionGroups: Type.Array(ConditionGroupResponse),
});
const RuleResponse = Type.Intersect([RuleItem, Type.Object({ _actions: ActionsSchema })]);

type RuleRow = Selectable<RulesTable>;

function ruleItem(row: RuleRow) {
  return {
    id: row.id,
    priority: row.priority,
    description: row.description,
    variationId: row.variation_id,
    rolloutPercentage: row.rollout_percentage,
    userSegmentId: row.segment_id,
    conditionGroups: JSON.parse(row.condition_groups) as StoredConditionGroup[],
  };
}

function ruleActions(role: Role, flag: FlagRow) {
  const blockedBy = flag.is_archived ? 'the flag is archived' : null;
  return actionsFor(role, {
    update: { role: 'Member', blockedBy },
    delete: { role: 'Member', blockedBy },
  });
}

function normalizeGroupOperator(
  operator: string | null | undefined,
  field: string,
  problems: FieldProblems,
): LogicalOperator {
  if (operator === undefined || operator === null) return 'And';
  const lower = operator.toLowerCase();
  if (lower === 'and') return 'And';
  if (lower === 'or') return 'Or';
  problems.add(field, `"${operator}" is not a group operator; expected And or Or`);
  return 'And';
}

/** Group and condition ids of a stored rule, so an update that sends them back keeps them. */
function storedIds(groups: readonly StoredConditionGroup[]): Set<string> {
  const ids = new Set<string>();
  for (const group of groups) {
    ids.add(group.id);
    for (const condition of group.conditions) ids.add(condition.id);
  }
  return ids;
}

/**
 * Validates condition groups and assigns the ids the server owns (spec: endpoint rule 5).
 * @throws ApiError 400 `validation_failed` naming every invalid member by path.
 */
function normalizeGroups(
  groups: readonly ConditionGroupInput[],
  keepIds: ReadonlySet<string>,
): StoredConditionGroup[] {
  const problems = new FieldProblems();
  const seen = new Set<string>();
  const normalized = groups.map((group, index) => {
    const path = `conditionGroups.${index}`;
    const id =
      group.id !== undefined && keepIds.has(group.id) && !seen.has(group.id) ? group.id : uuid();
    seen.add(id);
    return {
      id,
      operator: normalizeGroupOperator(group.operator, `${path}.operator`, problems),
      conditions: normalizeConditions(group.conditions, `${path}.conditions`, problems, keepIds),
    };
  });
  problems.throwIfAny();
  return normalized;
}

/** Registers the targeting rules of a flag in one environment (spec: Targeting rule, endpoint rules 5 and 6). */
export function registerRuleRoutes(app: App, services: Services): void {
  const rulesPath = '/orgs/:org/projects/:project/flags/:flag/environments/:env/rules';

  async function resolve(request: FastifyRequest, params: FlagEnvParams, minimum: Role) {
    const access = await requireOrg(services, request, params.org, minimum);
    const project = await requireProject(services, access, params.project);
    const flag = await requireFlag(services, access, project, params.flag);
    const environment = await requireEnvironment(services, access, project, params.env);
    if (minimum !== 'Viewer' && flag.is_archived)
      throw new ApiError('bad_request', `Flag "${flag.key}" is archived; restore it first.`);
    return { access, project, flag, environment };
  }

  async function requireRule(params: Static<typeof RuleParams>, flagId: string, envId: string) {
    const rule = await services.db
      .selectFrom('rules')
      .selectAll()
      .where('flag_id', '=', flagId)
      .where('environment_id', '=', envId)
      .where('id', '=', params.rule)
      .executeTakeFirst();
    if (rule) return rule;
    throw new ApiError('not_found', `Rule "${params.rule}" was not found.`, {
      nextActions: [
        {
          method: 'GET',
          path: `/api/v1/orgs/${params.org}/projects/${params.project}/flags/${params.flag}/environments/${params.env}/rules`,
        },
      ],
    });
  }

  /**
   * Checks what a rule points at: its variation must belong to the flag and its segment to the
   * project. @throws ApiError 400 `validation_failed` on `variationId` or `userSegmentId`.
   */
  async function checkReferences(
    flag: FlagRow,
    variationId: string,
    segmentId: string | null,
  ): Promise<void> {
    const problems = new FieldProblems();
    const variation = await services.db
      .selectFrom('variations')
      .select('id')
      .where('flag_id', '=', flag.id)
      .where('id', '=', variationId)
      .executeTakeFirst();
    if (!variation) problems.add('variationId', 'is not a variation of this flag');
    if (segmentId !== null) {
      const segment = await services.db
        .selectFrom('segments')
        .select('id')
        .where('project_id', '=', flag.project_id)
        .where('id', '=', segmentId)
        .executeTakeFirst();
      if (!segment) problems.add('userSegmentId', 'is not a segment of this project');
    }
    problems.throwIfAny();
  }

  /** Emits a rule change (the flag and environment were touched first: `m.touchFlag`). */
  async function recordChange(
    m: Mutation,
    type: Extract<EventType, `flag.rule.${string}`>,
    context: { projectId: string; environmentId: string; flagId: string; ruleId: string },
    description: string,
    changes?: PropertyChange[],
  ): Promise<void> {
    await m.emit({
      type,
      projectId: context.projectId,
      environmentId: context.environmentId,
      entity: { type: 'flag', id: context.flagId },
      child: { type: 'rule', id: context.ruleId },
      ...(changes ? { changes } : {}),
      description,
    });
  }

  async function readRule(id: string): Promise<RuleRow> {
    return services.db
      .selectFrom('rules')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  }

  app.post(
    rulesPath,
    {
      schema: {
        tags: ['targeting'],
        params: FlagEnvParams,
        body: RuleBody,
        response: { 201: RuleResponse },
      },
    },
    async (request, reply) => {
      const { access, project, flag, environment } = await resolve(
        request,
        request.params,
        'Member',
      );
      const body = request.body;
      const segmentId = body.userSegmentId ?? null;
      const groups = normalizeGroups(body.conditionGroups ?? [], new Set());
      await checkReferences(flag, body.variationId, segmentId);
      const id = await mutateAs(services, access, async (m) => {
        await m.touchFlag(flag, [environment.id]);
        const last = await m.trx
          .selectFrom('rules')
          .select((eb) => eb.fn.max('priority').as('max'))
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', environment.id)
          .executeTakeFirst();
        const row: RulesTable = {
          id: uuid(),
          flag_id: flag.id,
          environment_id: environment.id,
          priority: last?.max === null || last?.max === undefined ? 1 : Number(last.max) + 1,
          description: body.description ?? null,
          variation_id: body.variationId,
          rollout_percentage: body.rolloutPercentage ?? null,
          segment_id: segmentId,
          condition_groups: JSON.stringify(groups),
          created_at: m.now,
          updated_at: m.now,
        };
        await m.trx.insertInto('rules').values(row).execute();
        await recordChange(
          m,
          'flag.rule.created',
          { projectId: project.id, environmentId: environment.id, flagId: flag.id, ruleId: row.id },
          `Rule ${row.priority} added to flag "${flag.key}" in "${environment.key}"`,
        );
        return row.id;
      });
      // Re-read after persisting (spec: endpoint rule 5): priority and ids are the server's.
      const stored = await readRule(id);
      return reply
        .status(201)
        .send({ ...ruleItem(stored), _actions: ruleActions(access.role, flag) });
    },
  );

  app.get(
    rulesPath,
    {
      schema: {
        tags: ['targeting'],
        params: FlagEnvParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(RuleItem) },
      },
    },
    async (request) => {
      const { access, flag, environment } = await resolve(request, request.params, 'Viewer');
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('rules')
          .selectAll()
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', environment.id),
        request.query,
        { sortColumn: 'priority', sortValue: (row) => row.priority },
      );
      return {
        items: rows.map(ruleItem),
        next_cursor: nextCursor,
        _actions: actionsFor(access.role, {
          create: { role: 'Member', blockedBy: flag.is_archived ? 'the flag is archived' : null },
          reorder: { role: 'Member', blockedBy: flag.is_archived ? 'the flag is archived' : null },
        }),
      };
    },
  );

  app.get(
    `${rulesPath}/:rule`,
    { schema: { tags: ['targeting'], params: RuleParams, response: { 200: RuleResponse } } },
    async (request) => {
      const { access, flag, environment } = await resolve(request, request.params, 'Viewer');
      const rule = await requireRule(request.params, flag.id, environment.id);
      return { ...ruleItem(rule), _actions: ruleActions(access.role, flag) };
    },
  );

  async function updateRule(
    request: FastifyRequest,
    params: Static<typeof RuleParams>,
    body: RulePatchBody,
  ) {
    const { access, project, flag, environment } = await resolve(request, params, 'Member');
    const rule = await requireRule(params, flag.id, environment.id);
    const before = ruleItem(rule);
    const groups =
      body.conditionGroups !== undefined
        ? normalizeGroups(body.conditionGroups ?? [], storedIds(before.conditionGroups))
        : before.conditionGroups;
    const variationId = body.variationId ?? rule.variation_id;
    const segmentId = body.userSegmentId !== undefined ? body.userSegmentId : rule.segment_id;
    await checkReferences(flag, variationId, segmentId);
    await mutateAs(services, access, async (m) => {
      await m.touchFlag(flag, [environment.id]);
      const updated = await m.trx
        .updateTable('rules')
        .set({
          ...(body.description !== undefined ? { description: body.description } : {}),
          variation_id: variationId,
          ...(body.rolloutPercentage !== undefined
            ? { rollout_percentage: body.rolloutPercentage }
            : {}),
          segment_id: segmentId,
          condition_groups: JSON.stringify(groups),
          updated_at: m.now,
        })
        .where('id', '=', rule.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await recordChange(
        m,
        'flag.rule.updated',
        { projectId: project.id, environmentId: environment.id, flagId: flag.id, ruleId: rule.id },
        `Rule ${rule.priority} of flag "${flag.key}" in "${environment.key}" updated`,
        diffProperties(before, ruleItem(updated)),
      );
    });
    return { ...ruleItem(await readRule(rule.id)), _actions: ruleActions(access.role, flag) };
  }

  app.patch(
    `${rulesPath}/:rule`,
    {
      schema: {
        tags: ['targeting'],
        params: RuleParams,
        body: RulePatchBody,
        response: { 200: RuleResponse },
      },
    },
    async (request) => updateRule(request, request.params, request.body),
  );

  app.put(
    `${rulesPath}/:rule`,
    {
      schema: {
        tags: ['targeting'],
        params: RuleParams,
        body: RuleBody,
        response: { 200: RuleResponse },
      },
    },
    // A full replacement: members left out take their empty value rather than the stored one.
    async (request) =>
      updateRule(request, request.params, {
        description: null,
        rolloutPercentage: null,
        userSegmentId: null,
        conditionGroups: null,
        ...request.body,
      }),
  );

  app.delete(
    `${rulesPath}/:rule`,
    { schema: { tags: ['targeting'], params: RuleParams } },
    async (request, reply) => {
      const { access, project, flag, environment } = await resolve(
        request,
        request.params,
        'Member',
      );
      const rule = await requireRule(request.params, flag.id, environment.id);
      await mutateAs(services, access, async (m) => {
        await m.touchFlag(flag, [environment.id]);
        await m.trx.deleteFrom('rules').where('id', '=', rule.id).execute();
        // Close the gap so priorities stay 1..n in evaluation order.
        await m.trx
          .updateTable('rules')
          .set((eb) => ({ priority: eb('priority', '-', 1) }))
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', environment.id)
          .where('priority', '>', rule.priority)
          .execute();
        await recordChange(
          m,
          'flag.rule.deleted',
          {
            projectId: project.id,
            environmentId: environment.id,
            flagId: flag.id,
            ruleId: rule.id,
          },
          `Rule ${rule.priority} removed from flag "${flag.key}" in "${environment.key}"`,
        );
      });
      return reply.status(204).send();
    },
  );

  app.put(
    `${rulesPath}/reorder`,
    {
      schema: {
        tags: ['targeting'],
        params: FlagEnvParams,
        // Plain strings, not uuids: an id that is not a rule's is "unknown" (400 bad_request,
        // spec: endpoint rule 6) whatever it looks like.
        body: Type.Object(
          { ruleIds: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1000 }) },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const { access, project, flag, environment } = await resolve(
        request,
        request.params,
        'Member',
      );
      const { ruleIds } = request.body;
      await mutateAs(services, access, async (m) => {
        await m.touchFlag(flag, [environment.id]);
        const rules = await m.trx
          .selectFrom('rules')
          .select(['id', 'priority'])
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', environment.id)
          .orderBy('priority')
          .execute();
        checkReorder(
          ruleIds,
          rules.map((rule) => rule.id),
        );
        const priorities = new Map(rules.map((rule) => [rule.id, rule.priority]));
        for (const [index, id] of ruleIds.entries()) {
          const from = priorities.get(id);
          const to = index + 1;
          if (from === to) continue;
          await m.trx
            .updateTable('rules')
            .set({ priority: to, updated_at: m.now })
            .where('id', '=', id)
            .execute();
          await recordChange(
            m,
            'flag.rule.updated',
            { projectId: project.id, environmentId: environment.id, flagId: flag.id, ruleId: id },
            `Rule moved from priority ${from} to ${to} in flag "${flag.key}" in "${environment.key}"`,
            [{ property: 'Priority', from: String(from), to: String(to) }],
          );
        }
      });
      return reply.status(204).send();
    },
  );
}

/**
 * Checks that a reorder lists every existing rule exactly once (spec: endpoint rule 6).
 * @throws ApiError 400 `bad_request` naming the duplicated, missing and unknown ids.
 */
export function checkReorder(ruleIds: readonly string[], existing: readonly string[]): void {
  const known = new Set(existing);
  const listed = new Set<string>();
  const duplicated = new Set<string>();
  const unknown = new Set<string>();
  for (const id of ruleIds) {
    if (listed.has(id)) duplicated.add(id);
    listed.add(id);
    if (!known.has(id)) unknown.add(id);
  }
  const missing = existing.filter((id) => !listed.has(id));
  const problems = [
    duplicated.size > 0 ? `listed more than once: ${[...duplicated].join(', ')}` : '',
    missing.length > 0 ? `missing: ${missing.join(', ')}` : '',
    unknown.size > 0
      ? `not rules of this flag in this environment: ${[...unknown].join(', ')}`
      : '',
  ].filter(Boolean);
  if (problems.length > 0) {
    throw new ApiError(
      'bad_request',
      `ruleIds must list every rule of this flag in this environment exactly once; ${problems.join('; ')}.`,
    );
  }
}
