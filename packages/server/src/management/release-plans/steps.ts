import { readFlagEnvironmentTarget, type FlagEnvironmentTarget } from '../../api/path-resources.js';
import { mutate, type Mutation } from '../../db/mutate.js';
import type { Services } from '../../services.js';
import type { DueWork } from '../../schedules/due-work.js';
import { inSpan } from '../../telemetry/spans.js';
import { writeFlagConfiguration } from '../flags/queries.js';
import { durationMs, percentageWeight, stepRollout } from './plan-rules.js';
import {
  emitPlanEvent,
  planSteps,
  RELEASE_PLAN_ACTOR,
  type PlanRow,
  type StoredFallthrough,
} from './queries.js';

/** Plans advanced per pass at most; the rest wait for the next pass, a second later. */
const PLANS_PER_PASS = 100;

function waitMs(after: string): number {
  const ms = durationMs(after);
  // Stored steps were checked when the plan was written.
  return typeof ms === 'number' ? ms : 0;
}

/**
 * Which step is the latest due at `nowMs`: from `next_step_at` (set at the start, at each step
 * and on resume, so a resumed plan continues from its resume), following the waits of the steps
 * after it. After downtime several overdue steps collapse into one (spec section 3).
 * @returns the step's index, or the current one when none is due
 */
export function latestDueStep(
  plan: Pick<PlanRow, 'steps' | 'current_step' | 'next_step_at'>,
  nowMs: number,
): number {
  if (plan.next_step_at === null) return plan.current_step;
  const steps = planSteps(plan);
  let index = plan.current_step;
  let due = Date.parse(plan.next_step_at);
  while (index + 1 < steps.length && due <= nowMs) {
    index += 1;
    const following = steps[index + 1];
    if (!following) break;
    due += waitMs(following.after);
  }
  return index;
}

/** Writes the fallthrough of step `index` through the one configuration write. */
async function writeStep(
  m: Mutation,
  plan: PlanRow,
  target: FlagEnvironmentTarget,
  index: number,
): Promise<void> {
  const step = planSteps(plan)[index];
  if (!step) return;
  const weight = percentageWeight(step.percentage) ?? 0;
  await writeFlagConfiguration(
    m,
    {
      project: target.project,
      environment: target.environment,
      flag: { ...target.flag, project_id: target.project.id },
    },
    {
      strategy: 'PercentageRollout',
      rollout: JSON.stringify(stepRollout(plan.variation_id, plan.previous_variation_id, weight)),
    },
    'releasePlan',
  );
}

/**
 * Moves an active plan to its latest due step at `now` in one change: claims the move with a
 * conditional update from the step it read (so of two nodes passing at once, one does it), writes
 * the step's fallthrough with the one configuration write, and emits `release_plan.advanced` (and
 * `release_plan.completed` at the last step). Skipped overdue steps keep a null `startedAt`.
 * @returns whether it moved the plan
 */
export async function advancePlan(
  m: Mutation,
  plan: PlanRow,
  target: FlagEnvironmentTarget,
  now: Date,
): Promise<boolean> {
  if (plan.state !== 'active') return false;
  const index = latestDueStep(plan, now.getTime());
  if (index === plan.current_step) return false;
  const steps = planSteps(plan);
  const startedAt = now.toISOString();
  const updatedSteps = steps.map((step, i) => (i === index ? { ...step, startedAt } : step));
  const next = steps[index + 1];
  const completed = next === undefined;
  const { numUpdatedRows } = await m.trx
    .updateTable('release_plans')
    .set({
      current_step: index,
      steps: JSON.stringify(updatedSteps),
      state: completed ? 'completed' : 'active',
      next_step_at: next ? new Date(now.getTime() + waitMs(next.after)).toISOString() : null,
      updated_at: m.now,
    })
    .where('id', '=', plan.id)
    .where('state', '=', 'active')
    .where('current_step', '=', plan.current_step)
    .executeTakeFirst();
  if (numUpdatedRows === 0n) return false;
  const moved = { ...plan, steps: JSON.stringify(updatedSteps) };
  await writeStep(m, moved, target, index);
  const percentage = steps[index]?.percentage ?? 0;
  const where = `flag "${target.flag.key}" in "${target.environment.key}"`;
  await emitPlanEvent(
    m,
    target,
    plan,
    'release_plan.advanced',
    `Release plan of ${where} at step ${index + 1} of ${steps.length} (${percentage}%)${index - plan.current_step > 1 ? `, ${index - plan.current_step - 1} overdue step(s) skipped` : ''}`,
    [
      {
        property: 'CurrentStep',
        from: plan.current_step < 0 ? null : String(plan.current_step),
        to: String(index),
      },
      { property: 'Percentage', from: null, to: String(percentage) },
    ],
  );
  if (completed)
    await emitPlanEvent(
      m,
      target,
      plan,
      'release_plan.completed',
      `Release plan of ${where} completed`,
      [{ property: 'State', from: 'active', to: 'completed' }],
    );
  return true;
}

/**
 * Ends a plan by restoring the fallthrough it found (spec section 4: rollback), conditional on
 * the plan being active or paused; emits `release_plan.rolled_back` with `reason`.
 * @returns whether it rolled the plan back
 */
export async function rollbackPlan(
  m: Mutation,
  plan: PlanRow,
  target: FlagEnvironmentTarget,
  reason: string,
): Promise<boolean> {
  const { numUpdatedRows } = await m.trx
    .updateTable('release_plans')
    .set({ state: 'rolledBack', next_step_at: null, paused_reason: null, updated_at: m.now })
    .where('id', '=', plan.id)
    .where('state', 'in', ['active', 'paused'])
    .executeTakeFirst();
  if (numUpdatedRows === 0n) return false;
  const before = JSON.parse(plan.fallthrough_before) as StoredFallthrough;
  await writeFlagConfiguration(
    m,
    {
      project: target.project,
      environment: target.environment,
      flag: { ...target.flag, project_id: target.project.id },
    },
    {
      strategy: before.strategy,
      default_variation_id: before.defaultVariationId,
      rollout: before.rollout,
    },
    'releasePlan',
  );
  await emitPlanEvent(
    m,
    target,
    plan,
    'release_plan.rolled_back',
    `Release plan of flag "${target.flag.key}" in "${target.environment.key}" rolled back: ${reason}`,
    [
      { property: 'State', from: plan.state, to: 'rolledBack' },
      { property: 'Reason', from: null, to: reason },
    ],
  );
  return true;
}

/**
 * Resumes a paused plan: the current step's fallthrough is written again (a direct change may
 * have replaced it) and the next step falls due its wait after now.
 * @returns whether it resumed the plan
 */
export async function resumePlan(
  m: Mutation,
  plan: PlanRow,
  target: FlagEnvironmentTarget,
  now: Date,
): Promise<boolean> {
  const steps = planSteps(plan);
  const next = steps[plan.current_step + 1];
  const { numUpdatedRows } = await m.trx
    .updateTable('release_plans')
    .set({
      state: 'active',
      paused_reason: null,
      next_step_at: next ? new Date(now.getTime() + waitMs(next.after)).toISOString() : null,
      updated_at: m.now,
    })
    .where('id', '=', plan.id)
    .where('state', '=', 'paused')
    .executeTakeFirst();
  if (numUpdatedRows === 0n) return false;
  if (plan.current_step >= 0) await writeStep(m, plan, target, plan.current_step);
  await emitPlanEvent(
    m,
    target,
    plan,
    'release_plan.resumed',
    `Release plan of flag "${target.flag.key}" in "${target.environment.key}" resumed`,
    [{ property: 'State', from: 'paused', to: 'active' }],
  );
  return true;
}

/**
 * The release plans' steps as due work (design record 041): every pass advances each active plan
 * whose next step is due, each in its own transaction as the service ({@link RELEASE_PLAN_ACTOR}).
 */
export function releasePlanSteps(services: Services): DueWork {
  return {
    name: 'release plan steps',
    async run(now) {
      const due = await services.db
        .selectFrom('release_plans')
        .selectAll()
        .where('state', '=', 'active')
        .where('next_step_at', '<=', now.toISOString())
        .orderBy('next_step_at')
        .limit(PLANS_PER_PASS)
        .execute();
      let advanced = 0;
      for (const plan of due) {
        const moved = await inSpan(
          'release_plan.step',
          { 'vexil.release_plan.id': plan.id },
          async () => {
            const target = await readFlagEnvironmentTarget(services.db, plan);
            return mutate(
              services.db,
              {
                organizationId: target.organizationId,
                actor: RELEASE_PLAN_ACTOR,
                now,
                events: services.events,
              },
              (m) => advancePlan(m, plan, target, now),
            );
          },
        );
        if (moved) advanced += 1;
      }
      return advanced;
    },
  };
}
