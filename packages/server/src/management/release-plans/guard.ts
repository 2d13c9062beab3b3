import { readFlagEnvironmentTarget, type FlagEnvironmentTarget } from '../../api/path-resources.js';
import { sql, type Kysely } from 'kysely';
import { mutate } from '../../db/mutate.js';
import type { Schema } from '../../db/schema.js';
import type { DueWork } from '../../schedules/due-work.js';
import type { Services } from '../../services.js';
import type { Guard } from './plan-rules.js';
import {
  emitPlanEvent,
  pausePlan,
  planGuard,
  RELEASE_PLAN_ACTOR,
  type PlanRow,
} from './queries.js';
import type { GuardReading } from './schemas.js';
import { regressionTest, type SideCounts } from '../../statistics/sequential-test.js';
import { rollbackPlan } from './steps.js';

/** How often each active guard is tested at most, across all nodes (ms). */
export const GUARD_INTERVAL_MS = 5_000;
/** Guards tested per pass at most. */
const GUARDS_PER_PASS = 50;

/** Exposed users and users with the metric after their first exposure, per side of a plan. */
export async function exposureCounts(
  db: Kysely<Schema>,
  planId: string,
): Promise<{ target: SideCounts; rest: SideCounts }> {
  const rows = await db
    .selectFrom('release_plan_exposures')
    .select([
      'side',
      (eb) => eb.fn.countAll<number | string>().as('users'),
      sql<number | string>`sum(case when metric_ms >= exposed_ms then 1 else 0 end)`.as(
        'converted',
      ),
    ])
    .where('plan_id', '=', planId)
    .where('exposed_ms', 'is not', null)
    .groupBy('side')
    .execute();
  const side = (value: number): SideCounts => {
    const row = rows.find((r) => r.side === value);
    return { users: Number(row?.users ?? 0), converted: Number(row?.converted ?? 0) };
  };
  return { target: side(1), rest: side(0) };
}

/**
 * The guard's reading of a plan (spec section 5: `GET …/release-plan/guard`): each side's exposed
 * users, users with the metric and rate, and the sequential test's statistic against its
 * threshold; the test runs only once both sides have `minimumUsers` exposed users.
 */
export async function readGuard(
  db: Kysely<Schema>,
  plan: PlanRow,
  guard: Guard,
  variationKeys: { target: string; rest: string },
): Promise<GuardReading> {
  const counts = await exposureCounts(db, plan.id);
  const testing =
    counts.target.users >= guard.minimumUsers && counts.rest.users >= guard.minimumUsers;
  const result = regressionTest(counts.target, counts.rest, guard.confidence, guard.direction);
  const figures = (side: SideCounts, variation: string) => ({
    variations: [variation],
    exposedUsers: side.users,
    usersWithMetric: side.converted,
    rate: side.users === 0 ? null : side.converted / side.users,
  });
  return {
    metric: guard.metric,
    direction: guard.direction,
    minimumUsers: guard.minimumUsers,
    confidence: guard.confidence,
    action: guard.action,
    target: figures(counts.target, variationKeys.target),
    rest: figures(counts.rest, variationKeys.rest),
    testing,
    statistic: testing ? result.statistic : 1,
    threshold: result.threshold,
    pValue: testing ? result.pValue : 1,
    regressionDetected: testing && result.regression,
    checkedAt: plan.guard_checked_at,
  };
}

async function variationKeysOf(db: Kysely<Schema>, plan: PlanRow) {
  const rows = await db
    .selectFrom('variations')
    .select(['id', 'key'])
    .where('id', 'in', [plan.variation_id, plan.previous_variation_id])
    .execute();
  const key = (id: string) => rows.find((row) => row.id === id)?.key ?? id;
  return { target: key(plan.variation_id), rest: key(plan.previous_variation_id) };
}

/** {@link readGuard} for a plan with a guard, variation keys looked up. */
export async function readPlanGuard(
  db: Kysely<Schema>,
  plan: PlanRow,
  guard: Guard,
): Promise<GuardReading> {
  return readGuard(db, plan, guard, await variationKeysOf(db, plan));
}

/**
 * Acts on a regression (spec section 5): records it on the plan, emits
 * `release_plan.regression_detected` with both sides' figures and the statistic, then rolls the
 * plan back or pauses it, as the guard says. Conditional on the plan still being active.
 */
async function actOnRegression(
  services: Services,
  plan: PlanRow,
  target: FlagEnvironmentTarget,
  guard: Guard,
  reading: GuardReading,
  now: Date,
): Promise<boolean> {
  return mutate(
    services.db,
    {
      organizationId: target.organizationId,
      actor: RELEASE_PLAN_ACTOR,
      now,
      events: services.events,
    },
    async (m) => {
      const regression = {
        detectedAt: m.now,
        action: guard.action,
        target: reading.target,
        rest: reading.rest,
        statistic: reading.statistic,
        threshold: reading.threshold,
      };
      const { numUpdatedRows } = await m.trx
        .updateTable('release_plans')
        .set({ regression: JSON.stringify(regression), updated_at: m.now })
        .where('id', '=', plan.id)
        .where('state', '=', 'active')
        .executeTakeFirst();
      if (numUpdatedRows === 0n) return false;
      const side = (name: string, figures: GuardReading['target']) => [
        { property: `${name}ExposedUsers`, from: null, to: String(figures.exposedUsers) },
        { property: `${name}UsersWithMetric`, from: null, to: String(figures.usersWithMetric) },
        { property: `${name}Rate`, from: null, to: String(figures.rate) },
      ];
      const reason = `the guard found a regression of "${guard.metric}" (target ${formatRate(reading.target.rate)}, rest ${formatRate(reading.rest.rate)}; statistic ${reading.statistic.toPrecision(4)} ≥ ${reading.threshold.toPrecision(4)})`;
      await emitPlanEvent(
        m,
        target,
        plan,
        'release_plan.regression_detected',
        `Release plan of flag "${target.flag.key}" in "${target.environment.key}": ${reason}`,
        [
          ...side('Target', reading.target),
          ...side('Rest', reading.rest),
          { property: 'Statistic', from: null, to: String(reading.statistic) },
          { property: 'Threshold', from: null, to: String(reading.threshold) },
          { property: 'Action', from: null, to: guard.action },
        ],
      );
      if (guard.action === 'rollback') return rollbackPlan(m, plan, target, reason);
      return pausePlan(m, plan, target, reason);
    },
  );
}

function formatRate(rate: number | null): string {
  return rate === null ? 'n/a' : `${(rate * 100).toFixed(2)}%`;
}

/**
 * The guards as due work (design record 046): each pass tests the active guarded plans not
 * tested in the last {@link GUARD_INTERVAL_MS}, each claimed by a conditional update of
 * `guard_checked_at` so that one node tests it; on a regression it acts. A guard never moves a
 * step: the steps' own due work does that on schedule.
 */
export function releasePlanGuards(services: Services): DueWork {
  return {
    name: 'release plan guards',
    async run(now) {
      const before = new Date(now.getTime() - GUARD_INTERVAL_MS).toISOString();
      const plans = await services.db
        .selectFrom('release_plans')
        .selectAll()
        .where('state', '=', 'active')
        .where('guard', 'is not', null)
        .where((eb) =>
          eb.or([eb('guard_checked_at', 'is', null), eb('guard_checked_at', '<=', before)]),
        )
        .limit(GUARDS_PER_PASS)
        .execute();
      let acted = 0;
      for (const plan of plans) {
        const guard = planGuard(plan);
        if (!guard) continue;
        const { numUpdatedRows } = await services.db
          .updateTable('release_plans')
          .set({ guard_checked_at: now.toISOString() })
          .where('id', '=', plan.id)
          .where((eb) =>
            plan.guard_checked_at === null
              ? eb('guard_checked_at', 'is', null)
              : eb('guard_checked_at', '=', plan.guard_checked_at),
          )
          .executeTakeFirst();
        if (numUpdatedRows === 0n) continue;
        const reading = await readPlanGuard(services.db, plan, guard);
        if (!reading.regressionDetected) continue;
        const target = await readFlagEnvironmentTarget(services.db, plan);
        if (await actOnRegression(services, plan, target, guard, reading, now)) acted += 1;
      }
      return acted;
    },
  };
}
