import type { Selectable } from 'kysely';
import { Type, type Static } from 'typebox';
import type { RulesTable, StoredConditionGroup } from '../../db/schema.js';
import { ActionsSchema } from '../actions.js';
import { DescriptionSchema, NullableString, Uuid } from '../fields.js';
import { ConditionGroupInputSchema, ConditionGroupResponse } from './conditions.js';

/** Targeting rule request and response shapes (spec: Targeting rule, endpoint rules 5 and 6). */
export const FlagEnvParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
});
export const RuleParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
  rule: Type.String(),
});
export type FlagEnvParams = Static<typeof FlagEnvParams>;

const ruleFields = {
  description: Type.Optional(DescriptionSchema),
  variationId: Uuid,
  rolloutPercentage: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()]),
  ),
  userSegmentId: Type.Optional(Type.Union([Uuid, Type.Null()])),
  conditionGroups: Type.Optional(
    Type.Union([Type.Array(ConditionGroupInputSchema, { maxItems: 50 }), Type.Null()]),
  ),
};
/** Rule create and full replacement (spec: endpoint rule 5). */
export const RuleBody = Type.Object(ruleFields, { additionalProperties: false });
/** Partial update: members left out keep their stored value. */
export const RulePatchBody = Type.Object(
  { ...ruleFields, variationId: Type.Optional(Uuid) },
  { additionalProperties: false },
);
export type RulePatchBody = Static<typeof RulePatchBody>;

/** Targeting rule (spec: Targeting rule). */
export const RuleItem = Type.Object({
  id: Uuid,
  priority: Type.Integer(),
  description: NullableString,
  variationId: Uuid,
  rolloutPercentage: Type.Union([Type.Integer(), Type.Null()]),
  userSegmentId: Type.Union([Uuid, Type.Null()]),
  conditionGroups: Type.Array(ConditionGroupResponse),
});
export const RuleResponse = Type.Intersect([RuleItem, Type.Object({ _actions: ActionsSchema })]);

export type RuleRow = Selectable<RulesTable>;

export function ruleItem(row: RuleRow) {
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
