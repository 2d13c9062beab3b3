import { readFlagEnvironmentTarget, type FlagEnvironmentTarget } from '../../api/path-resources.js';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Mutation } from '../../db/mutate.js';
import type { FlagEnvironmentsTable, ReleasePlansTable, Schema } from '../../db/schema.js';
import {
  flagEnvironmentEvent,
  type Actor,
  type EventType,
  type PropertyChange,
} from '../../events/types.js';
import type { Guard } from './plan-rules.js';

export type PlanRow = Selectable<ReleasePlansTable>;

/** A step as stored: what the client wrote, and when it started (null until then, or skipped). */
export interface StoredStep {
  percentage: number;
  after: string;
  startedAt: string | null;
}

/** The fallthrough a plan found when it started, restored by a rollback. */
export interface StoredFallthrough {
  strategy: FlagEnvironmentsTable['strategy'];
  defaultVariationId: string;
  rollout: string;
}

/**
 * Who the service's own changes are recorded as (automatic steps, the guard's rollback): a
 * fixed id no person or token has, so the audit log tells them apart.
 */
export const RELEASE_PLAN_ACTOR: Actor = {
  userId: '00000000-0000-0000-0000-000000000000',
  email: null,
  name: 'Vexil release plan',
};

/** The stored steps of a plan row. */
export function planSteps(plan: Pick<PlanRow, 'steps'>): StoredStep[] {
  return JSON.parse(plan.steps) as StoredStep[];
}

/** The stored guard of a plan row, or null. */
export function planGuard(plan: Pick<PlanRow, 'guard'>): Guard | null {
  return plan.guard === null ? null : (JSON.parse(plan.guard) as Guard);
}

/** The plan of a flag in an environment (in any state), or undefined. */
export function findPlan(
  db: Kysely<Schema> | Transaction<Schema>,
  flagId: string,
  environmentId: string,
): Promise<PlanRow | undefined> {
  return db
    .selectFrom('release_plans')
    .selectAll()
    .where('flag_id', '=', flagId)
    .where('environment_id', '=', environmentId)
    .executeTakeFirst();
}

/** Emits one `release_plan.*` event about `plan` (spec section 4), environment-scoped. */
export function emitPlanEvent(
  m: Mutation,
  target: FlagEnvironmentTarget,
  plan: Pick<PlanRow, 'id'>,
  type: EventType,
  description: string,
  changes: PropertyChange[] = [],
): Promise<void> {
  return m.emit(
    flagEnvironmentEvent(target, { type: 'release_plan', id: plan.id }, type, description, changes),
  );
}

/**
 * Pauses the active plan of the flag in the environment, if there is one, recording why (spec
 * section 4: a direct change to the fallthrough or on/off pauses the plan); the plan's own writes
 * never call it. Conditional on the plan still being active, so a step or a guard that got there
 * first wins and nothing is recorded twice.
 * @returns whether a plan was paused
 */
export async function pauseActivePlan(
  m: Mutation,
  flagId: string,
  environmentId: string,
  reason: string,
): Promise<boolean> {
  const plan = await m.trx
    .selectFrom('release_plans')
    .select(['id', 'flag_id', 'environment_id'])
    .where('flag_id', '=', flagId)
    .where('environment_id', '=', environmentId)
    .where('state', '=', 'active')
    .executeTakeFirst();
  if (!plan) return false;
  return pausePlan(m, plan, await readFlagEnvironmentTarget(m.trx, plan), reason);
}

/**
 * Pauses `plan` if it is still active (whoever got there first wins: a step, the guard, a
 * person), recording why, and emits `release_plan.paused`; the one way every pause is made.
 * @param summary what the event's description says after the plan's name
 * @returns whether the plan was paused
 */
export async function pausePlan(
  m: Mutation,
  plan: Pick<PlanRow, 'id'>,
  target: FlagEnvironmentTarget,
  reason: string,
  summary = `paused: ${reason}`,
): Promise<boolean> {
  const { numUpdatedRows } = await m.trx
    .updateTable('release_plans')
    .set({ state: 'paused', next_step_at: null, paused_reason: reason, updated_at: m.now })
    .where('id', '=', plan.id)
    .where('state', '=', 'active')
    .executeTakeFirst();
  if (numUpdatedRows === 0n) return false;
  await emitPlanEvent(
    m,
    target,
    plan,
    'release_plan.paused',
    `Release plan of flag "${target.flag.key}" in "${target.environment.key}" ${summary}`,
    [
      { property: 'State', from: 'active', to: 'paused' },
      { property: 'Reason', from: null, to: reason },
    ],
  );
  return true;
}

/** Whether a configuration change touches what a plan drives: the fallthrough, or on/off. */
export function changesFallthroughOrState(
  before: Pick<
    Selectable<FlagEnvironmentsTable>,
    'strategy' | 'default_variation_id' | 'rollout' | 'is_enabled'
  >,
  after: Pick<
    Selectable<FlagEnvironmentsTable>,
    'strategy' | 'default_variation_id' | 'rollout' | 'is_enabled'
  >,
): boolean {
  return (
    before.strategy !== after.strategy ||
    before.default_variation_id !== after.default_variation_id ||
    before.rollout !== after.rollout ||
    before.is_enabled !== after.is_enabled
  );
}
