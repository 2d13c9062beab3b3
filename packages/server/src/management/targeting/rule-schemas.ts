import type { Selectable } from 'kysely';
import { Type, type Static } from 'typebox';
import type { RulesTable, StoredConditionGroup } from '../../db/schema.js';
import { invalidField } from '../../errors.js';
import { ActionsSchema } from '../../api/actions.js';
import { DescriptionSchema, NullableString, Uuid } from '../../api/fields.js';
import { ConditionGroupInputSchema, ConditionGroupResponse } from './conditions.js';

/** A rule's rollout weight for everyone: 100% in thousandths of a percent. */
const ROLLOUT_WEIGHT_TOTAL = 100_000;
const WEIGHT_PER_PERCENT = 1000;

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
  rolloutWeight: Type.Optional(
    Type.Union([
      Type.Integer({
        minimum: 0,
        maximum: ROLLOUT_WEIGHT_TOTAL,
        description:
          'The rollout in thousandths of a percent (12500 = 12.5%), like serve weights. Given with `rolloutPercentage`, the two must agree: the percentage is the weight rounded down to a whole percent.',
      }),
      Type.Null(),
    ]),
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
  rolloutPercentage: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The rollout as a whole percentage: `rolloutWeight` rounded down.',
  }),
  rolloutWeight: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'The rollout in thousandths of a percent (0–100000); null: every matching context.',
  }),
  userSegmentId: Type.Union([Uuid, Type.Null()]),
  conditionGroups: Type.Array(ConditionGroupResponse),
});
export const RuleResponse = Type.Intersect([RuleItem, Type.Object({ _actions: ActionsSchema })]);

export type RuleRow = Selectable<RulesTable>;

/** The rollout of a rule as stored: whole percent (rounded down) and thousandths of a percent. */
export interface StoredRollout {
  rollout_percentage: number | null;
  rollout_weight: number | null;
}

/** The rollout of a rule that serves every matching context. */
export const NO_ROLLOUT: StoredRollout = { rollout_percentage: null, rollout_weight: null };

/** A weight (thousandths of a percent) as a whole percentage, rounded down: never overstated. */
function wholePercent(weight: number): number {
  return Math.floor(weight / WEIGHT_PER_PERCENT);
}

/**
 * The rollout a rule body asks for (design record 026): `rolloutWeight` (thousandths of a
 * percent) or the spec's whole `rolloutPercentage`; when both are given they must agree (the
 * percentage is the weight rounded down, so a rule read back can be sent back unchanged).
 * `undefined` when the body gives neither (the stored rollout stays).
 * @throws ApiError invalid_field on `rolloutPercentage` when the two disagree.
 */
export function requestedRollout(body: {
  rolloutPercentage?: number | null;
  rolloutWeight?: number | null;
}): StoredRollout | undefined {
  const { rolloutPercentage: percentage, rolloutWeight: weight } = body;
  if (weight === undefined) {
    if (percentage === undefined) return undefined;
    return {
      rollout_percentage: percentage,
      rollout_weight: percentage === null ? null : percentage * WEIGHT_PER_PERCENT,
    };
  }
  const implied = weight === null ? null : wholePercent(weight);
  if (percentage !== undefined && percentage !== implied)
    throw invalidField(
      'rolloutPercentage',
      `must agree with rolloutWeight ${String(weight)} (${implied === null ? 'null' : String(implied)}), or be left out`,
    );
  return { rollout_percentage: implied, rollout_weight: weight };
}

export function ruleItem(row: RuleRow) {
  return {
    id: row.id,
    priority: row.priority,
    description: row.description,
    variationId: row.variation_id,
    rolloutPercentage: row.rollout_weight === null ? null : wholePercent(row.rollout_weight),
    rolloutWeight: row.rollout_weight,
    userSegmentId: row.segment_id,
    conditionGroups: JSON.parse(row.condition_groups) as StoredConditionGroup[],
  };
}
