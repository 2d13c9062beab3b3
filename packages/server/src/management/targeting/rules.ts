import { Type, type Static } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { Role } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs } from '../../api/access.js';
import { actionsFor } from '../../api/actions.js';
import { checkNotArchived } from '../flags/configuration.js';
import type { FlagRow } from '../../api/path-resources.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes, type FlagEnvironmentScope } from '../../api/scope.js';
import { normalizeGroups, storedIds } from './conditions.js';
import { ruleInWords } from './rule-words.js';
import {
  checkReferences,
  deleteRule,
  insertRule,
  readRule,
  recordRuleChange,
  requireRule,
  updateRule,
} from './rule-queries.js';
import {
  FlagEnvParams,
  RuleBody,
  RuleItem,
  RuleParams,
  RulePatchBody,
  RuleResponse,
  NO_ROLLOUT,
  requestedRollout,
  ruleItem,
} from './rule-schemas.js';

function ruleActions(role: Role, flag: FlagRow) {
  const blockedBy = flag.is_archived ? 'the flag is archived' : null;
  return actionsFor(role, {
    update: { role: 'Member', blockedBy },
    delete: { role: 'Member', blockedBy },
  });
}

/** Updates a rule: members of `body` left out keep their stored value. */
async function changeRule(
  services: Services,
  { project, flag, environment, ...access }: FlagEnvironmentScope,
  params: Static<typeof RuleParams>,
  body: RulePatchBody,
) {
  checkNotArchived(flag);
  const rule = await requireRule(services, params, flag.id, environment.id);
  const rollout = requestedRollout(body);
  const before = ruleItem(rule);
  const groups =
    body.conditionGroups !== undefined
      ? normalizeGroups(body.conditionGroups ?? [], storedIds(before.conditionGroups))
      : before.conditionGroups;
  const variationId = body.variationId ?? rule.variation_id;
  const segmentId = body.userSegmentId !== undefined ? body.userSegmentId : rule.segment_id;
  await checkReferences(services, flag, variationId, segmentId);
  await mutateAs(services, access, async (m) => {
    await m.touchFlag(flag, [environment.id]);
    const updated = await updateRule(m, rule.id, {
      ...(body.description !== undefined ? { description: body.description } : {}),
      variation_id: variationId,
      ...rollout,
      segment_id: segmentId,
      condition_groups: JSON.stringify(groups),
    });
    await recordRuleChange(
      m,
      'flag.rule.updated',
      { project, environment, flag, ruleId: rule.id },
      `Rule ${rule.priority} of flag "${flag.key}" in "${environment.key}" updated`,
      diffProperties(before, ruleItem(updated)),
    );
  });
  return {
    ...ruleItem(await readRule(services, rule.id)),
    _actions: ruleActions(access.role, flag),
  };
}

/** Registers the targeting rules of a flag in one environment (spec: Targeting rule, endpoint rules 5 and 6). */
export function registerRuleRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  const rulesPath = '/orgs/:org/projects/:project/flags/:flag/environments/:env/rules';

  route.post(
    rulesPath,
    'Member',
    {
      schema: {
        tags: ['targeting'],
        params: FlagEnvParams,
        body: RuleBody,
        response: { 201: RuleResponse },
      },
    },
    async ({ project, flag, environment, ...access }, request, reply) => {
      checkNotArchived(flag);
      const body = request.body;
      const segmentId = body.userSegmentId ?? null;
      const rollout = requestedRollout(body) ?? NO_ROLLOUT;
      const groups = normalizeGroups(body.conditionGroups ?? [], new Set());
      await checkReferences(services, flag, body.variationId, segmentId);
      const id = await mutateAs(services, access, async (m) => {
        await m.touchFlag(flag, [environment.id]);
        const last = await m.trx
          .selectFrom('rules')
          .select((eb) => eb.fn.max('priority').as('max'))
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', environment.id)
          .executeTakeFirst();
        const row = await insertRule(
          m,
          { flagId: flag.id, environmentId: environment.id, priority: (last?.max ?? 0) + 1 },
          {
            description: body.description ?? null,
            variation_id: body.variationId,
            ...rollout,
            segment_id: segmentId,
            condition_groups: JSON.stringify(groups),
          },
        );
        const segment =
          segmentId === null
            ? undefined
            : await m.trx
                .selectFrom('segments')
                .select('key')
                .where('id', '=', segmentId)
                .executeTakeFirst();
        const rule = ruleInWords({
          description: body.description ?? null,
          segmentKey: segment?.key ?? null,
          conditionGroups: groups,
        });
        await recordRuleChange(
          m,
          'flag.rule.created',
          { project, environment, flag, ruleId: row.id },
          `Rule ${row.priority} added to flag "${flag.key}" in "${environment.key}": ${rule}`,
        );
        return row.id;
      });
      // Re-read after persisting (spec: endpoint rule 5): priority and ids are the server's.
      const stored = await readRule(services, id);
      return reply
        .status(201)
        .send({ ...ruleItem(stored), _actions: ruleActions(access.role, flag) });
    },
  );

  route.get(
    rulesPath,
    'Viewer',
    {
      schema: {
        tags: ['targeting'],
        params: FlagEnvParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(RuleItem) },
      },
    },
    async ({ flag, environment, ...access }, request) => {
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

  route.get(
    `${rulesPath}/:rule`,
    'Viewer',
    { schema: { tags: ['targeting'], params: RuleParams, response: { 200: RuleResponse } } },
    async ({ flag, environment, ...access }, request) => {
      const rule = await requireRule(services, request.params, flag.id, environment.id);
      return { ...ruleItem(rule), _actions: ruleActions(access.role, flag) };
    },
  );

  route.patch(
    `${rulesPath}/:rule`,
    'Member',
    {
      schema: {
        tags: ['targeting'],
        params: RuleParams,
        body: RulePatchBody,
        response: { 200: RuleResponse },
      },
    },
    async (scope, request) => changeRule(services, scope, request.params, request.body),
  );

  route.put(
    `${rulesPath}/:rule`,
    'Member',
    {
      schema: {
        tags: ['targeting'],
        params: RuleParams,
        body: RuleBody,
        response: { 200: RuleResponse },
      },
    },
    // A full replacement: members left out take their empty value rather than the stored one.
    async (scope, request) =>
      changeRule(services, scope, request.params, {
        description: null,
        userSegmentId: null,
        conditionGroups: null,
        ...(request.body.rolloutWeight === undefined ? { rolloutPercentage: null } : {}),
        ...request.body,
      }),
  );

  route.delete(
    `${rulesPath}/:rule`,
    'Member',
    { schema: { tags: ['targeting'], params: RuleParams } },
    async ({ project, flag, environment, ...access }, request, reply) => {
      checkNotArchived(flag);
      const rule = await requireRule(services, request.params, flag.id, environment.id);
      await mutateAs(services, access, async (m) => {
        await m.touchFlag(flag, [environment.id]);
        await deleteRule(m, rule);
        await recordRuleChange(
          m,
          'flag.rule.deleted',
          { project, environment, flag, ruleId: rule.id },
          `Rule ${rule.priority} removed from flag "${flag.key}" in "${environment.key}"`,
        );
      });
      return reply.status(204).send();
    },
  );

  route.put(
    `${rulesPath}/reorder`,
    'Member',
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
    async ({ project, flag, environment, ...access }, request, reply) => {
      checkNotArchived(flag);
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
          await recordRuleChange(
            m,
            'flag.rule.updated',
            { project, environment, flag, ruleId: id },
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
