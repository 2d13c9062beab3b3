import type { Static } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { Mutation } from '../../db/mutate.js';
import type { RulesTable } from '../../db/schema.js';
import type { EventType, KeyedRef, PropertyChange } from '../../events/types.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import type { FlagRow } from '../../api/path-resources.js';
import { FieldProblems } from './conditions.js';
import type { RuleParams, RuleRow } from './rule-schemas.js';

/**
 * Resolves `{rule}` (an id) among the rules of the flag in the environment.
 * @throws ApiError 404 with the list request as the next action.
 */
export async function requireRule(
  services: Services,
  params: Static<typeof RuleParams>,
  flagId: string,
  envId: string,
): Promise<RuleRow> {
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
export async function checkReferences(
  services: Services,
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

/** Reads a rule back after a change (spec: endpoint rule 3). */
export async function readRule(services: Services, id: string): Promise<RuleRow> {
  return services.db.selectFrom('rules').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/**
 * A rule's own columns, as a create writes them and an update may change them: every column but
 * its identity, place and timestamps. A column added to `rules` becomes required here, so every
 * writer of rules (the routes, flags-as-code apply) has to say what it stores.
 */
export type RuleValues = Omit<
  RulesTable,
  'id' | 'flag_id' | 'environment_id' | 'priority' | 'created_at' | 'updated_at'
>;

/** Inserts a rule of the flag in the environment at `priority` (the caller touched the flag). */
export async function insertRule(
  m: Mutation,
  target: { flagId: string; environmentId: string; priority: number },
  values: RuleValues,
): Promise<RulesTable> {
  const row: RulesTable = {
    // First, so that a copied rule's identity, place and times (when `values` is a whole row)
    // give way to the new rule's.
    ...values,
    id: uuid(),
    flag_id: target.flagId,
    environment_id: target.environmentId,
    priority: target.priority,
    created_at: m.now,
    updated_at: m.now,
  };
  await m.trx.insertInto('rules').values(row).execute();
  return row;
}

/** Updates a rule's columns named in `values` and returns the rule as stored. */
export function updateRule(
  m: Mutation,
  ruleId: string,
  values: Partial<RuleValues>,
): Promise<RuleRow> {
  return m.trx
    .updateTable('rules')
    .set({ ...values, updated_at: m.now })
    .where('id', '=', ruleId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Deletes a rule and closes the gap, so that priorities stay 1..n in evaluation order. */
export async function deleteRule(
  m: Mutation,
  rule: Pick<RuleRow, 'id' | 'flag_id' | 'environment_id' | 'priority'>,
): Promise<void> {
  await m.trx.deleteFrom('rules').where('id', '=', rule.id).execute();
  await m.trx
    .updateTable('rules')
    .set((eb) => ({ priority: eb('priority', '-', 1) }))
    .where('flag_id', '=', rule.flag_id)
    .where('environment_id', '=', rule.environment_id)
    .where('priority', '>', rule.priority)
    .execute();
}

/** Emits a rule change (the flag and environment were touched first: `m.touchFlag`). */
export async function recordRuleChange(
  m: Mutation,
  type: Extract<EventType, `flag.rule.${string}`>,
  context: { project: KeyedRef; environment: KeyedRef; flag: KeyedRef; ruleId: string },
  description: string,
  changes?: PropertyChange[],
): Promise<void> {
  await m.emit({
    type,
    project: context.project,
    environment: context.environment,
    entity: { type: 'flag', id: context.flag.id, key: context.flag.key },
    child: { type: 'rule', id: context.ruleId },
    ...(changes ? { changes } : {}),
    description,
  });
}
