import { type FlagEnvironmentTarget } from '../../api/path-resources.js';
import { v7 as uuid } from 'uuid';
import type { Mutation } from '../../db/mutate.js';
import type { FlagEnvironmentsTable } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/unique.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Kysely, Transaction } from 'kysely';
import type { Schema } from '../../db/schema.js';
import { metricsByKey } from '../metrics/queries.js';
import { checkSteps, durationMs, GUARD_DEFAULTS, type Guard } from './plan-rules.js';
import { emitPlanEvent, findPlan, type PlanRow, type StoredFallthrough } from './queries.js';
import type { PlanInput } from './schemas.js';
import { advancePlan } from './steps.js';
import { runningExperiment } from '../experiments/queries.js';

/** What starting a plan writes, checked: see {@link checkPlanInput}. */
export interface PlanValues {
  variationId: string;
  previousVariationId: string;
  fallthrough: StoredFallthrough;
  steps: { percentage: number; after: string }[];
  guard: Guard | null;
}

/**
 * Checks a plan as written (spec section 4) against the flag's variations and its configuration
 * in the environment: the target is a variation of the flag other than the one the fallthrough
 * serves, the fallthrough serves one variation (a plan moves from it), and the steps are valid.
 * Used by `PUT …/release-plan` and by the `releasePlan` change of a change request.
 * @param at - the path of the plan in the request (`''` for a PUT body, `changes[2].plan.` in a
 *   change request), prefixed to each field named in an error
 * @throws ApiError 400 `validation_failed` naming the field; 409 `conflict` when the fallthrough
 *   is a rollout
 */
export function checkPlanInput(
  input: PlanInput,
  variations: readonly { id: string; key: string | null }[],
  configuration: Pick<FlagEnvironmentsTable, 'strategy' | 'default_variation_id' | 'rollout'>,
  at = '',
): PlanValues {
  const target = variations.find((v) => v.key === input.variation);
  if (!target)
    throw invalidField(
      `${at}variation`,
      `is not a variation key of this flag (${variations.map((v) => v.key).join(', ')})`,
    );
  try {
    checkSteps(input.steps);
  } catch (error) {
    const fields = error instanceof ApiError ? error.detail.fields : undefined;
    const [field, [problem] = []] = Object.entries(fields ?? {})[0] ?? [];
    if (field === undefined || problem === undefined) throw error;
    throw invalidField(`${at}${field}`, problem);
  }
  if (configuration.strategy !== 'SingleVariation')
    throw new ApiError(
      'conflict',
      'The fallthrough is a percentage rollout; a release plan starts from a fallthrough serving one variation.',
    );
  if (configuration.default_variation_id === target.id)
    throw invalidField(
      `${at}variation`,
      'is what this environment serves already when no rule matches (its default serve): set the default serve to the variation people get today first',
    );
  return {
    variationId: target.id,
    previousVariationId: configuration.default_variation_id,
    fallthrough: {
      strategy: configuration.strategy,
      defaultVariationId: configuration.default_variation_id,
      rollout: configuration.rollout,
    },
    steps: input.steps,
    guard: input.guard ? checkedGuard(input.guard, at) : null,
  };
}

function checkedGuard(guard: NonNullable<PlanInput['guard']>, at: string): Guard {
  const { metric } = guard;
  if (metric === undefined)
    throw invalidField(
      `${at}guard.metric`,
      'is required: the key of the Custom event watched (or name a catalogue metric in metricKey)',
    );
  return { ...GUARD_DEFAULTS, ...guard, metric };
}

/**
 * The plan with its guard's catalogue metric (`metricKey`) resolved: the metric's event key and,
 * unless the guard says, its direction. The guard tests a rate, so the metric is a conversion.
 * @throws ApiError 400 `validation_failed` on `guard.metricKey`
 */
export async function withGuardMetric(
  db: Kysely<Schema> | Transaction<Schema>,
  projectId: string,
  input: PlanInput,
  at = '',
): Promise<PlanInput> {
  const guard = input.guard;
  if (!guard?.metricKey) return input;
  const metric = (await metricsByKey(db, projectId, [guard.metricKey])).get(guard.metricKey);
  if (!metric)
    throw invalidField(
      `${at}guard.metricKey`,
      `is not a metric of this project: "${guard.metricKey}"`,
    );
  if (metric.kind !== 'conversion')
    throw invalidField(
      `${at}guard.metricKey`,
      `names a ${metric.kind} metric; a guard tests a rate: name a conversion metric`,
    );
  if (guard.metric !== undefined && guard.metric !== metric.event_key)
    throw invalidField(
      `${at}guard.metric`,
      `differs from the event key of metric "${metric.key}" (${metric.event_key})`,
    );
  return {
    ...input,
    guard: { ...guard, metric: metric.event_key, direction: guard.direction ?? metric.direction },
  };
}

/**
 * Starts a plan inside `m` (spec section 4): refused with 409 `change_request_required` where
 * change requests are required (unless `m` applies one); refuses a second active or paused plan (409),
 * replaces an ended one, records the fallthrough it finds, emits `release_plan.started`, and
 * applies the steps already due (a first step after `PT0S` at once).
 */
export async function startPlan(
  m: Mutation,
  target: FlagEnvironmentTarget,
  values: PlanValues & { createdBy: string },
  now: Date,
): Promise<PlanRow> {
  // Starting a plan changes what the environment serves: where change requests are required,
  // only the apply of one starts it (spec section 4).
  await m.touchEnvironments([target.environment.id]);
  const existing = await findPlan(m.trx, target.flag.id, target.environment.id);
  if (existing && (existing.state === 'active' || existing.state === 'paused'))
    throw new ApiError(
      'conflict',
      `Flag "${target.flag.key}" has a ${existing.state} release plan in "${target.environment.key}"; roll it back or delete it first.`,
    );
  const experiment = await runningExperiment(m.trx, target.flag.id, target.environment.id);
  if (experiment)
    throw new ApiError(
      'conflict',
      `Experiment "${experiment.key}" runs on flag "${target.flag.key}" in "${target.environment.key}"; a release plan cannot start beside it.`,
    );
  if (existing) await m.trx.deleteFrom('release_plans').where('id', '=', existing.id).execute();
  const firstWait = durationMs(values.steps[0]?.after ?? 'PT0S');
  const plan: PlanRow = {
    id: uuid(),
    project_id: target.project.id,
    flag_id: target.flag.id,
    environment_id: target.environment.id,
    state: 'active',
    variation_id: values.variationId,
    previous_variation_id: values.previousVariationId,
    fallthrough_before: JSON.stringify(values.fallthrough),
    steps: JSON.stringify(values.steps.map((step) => ({ ...step, startedAt: null }))),
    guard: values.guard === null ? null : JSON.stringify(values.guard),
    current_step: -1,
    next_step_at: new Date(
      now.getTime() + (typeof firstWait === 'number' ? firstWait : 0),
    ).toISOString(),
    paused_reason: null,
    regression: null,
    guard_checked_at: null,
    started_at: m.now,
    created_by: values.createdBy,
    created_at: m.now,
    updated_at: m.now,
  };
  try {
    await m.trx.insertInto('release_plans').values(plan).execute();
  } catch (error) {
    if (isUniqueViolation(error))
      throw new ApiError(
        'conflict',
        `Flag "${target.flag.key}" has a release plan in "${target.environment.key}" already.`,
      );
    throw error;
  }
  await emitPlanEvent(
    m,
    target,
    plan,
    'release_plan.started',
    `Release plan of flag "${target.flag.key}" in "${target.environment.key}" started: ${values.steps.map((s) => `${s.percentage}%`).join(' → ')}${values.guard ? `, guarded by "${values.guard.metric}"` : ''}`,
    [{ property: 'State', from: null, to: 'active' }],
  );
  await advancePlan(m, plan, target, now);
  return (await findPlan(m.trx, target.flag.id, target.environment.id)) ?? plan;
}
