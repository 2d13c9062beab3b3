import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { Caller } from '../../auth/caller.js';
import type { Mutation } from '../../db/mutate.js';
import type { Role } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/unique.js';
import type { App } from '../../http/app-instance.js';
import { ApiError, invalidField } from '../../http/errors.js';
import type { Services } from '../../services.js';
import { mutateAs, notFound } from '../access.js';
import { actionsFor } from '../actions.js';
import { checkNotArchived } from '../flags/configuration.js';
import { readFlagEnvironment, type FlagRow } from '../flags/queries.js';
import { scopedRoutes } from '../scope.js';
import { readPlanGuard } from './guard.js';
import { checkSteps, durationMs, GUARD_DEFAULTS, type Guard } from './plan-rules.js';
import {
  emitPlanEvent,
  findPlan,
  planGuard,
  planSteps,
  type PlanRow,
  type PlanTarget,
  type StoredFallthrough,
} from './queries.js';
import { FlagEnvParams, GuardReading, PlanInput, PlanResponse } from './schemas.js';
import { advancePlan, resumePlan, rollbackPlan } from './steps.js';

const PLAN_PATH = '/orgs/:org/projects/:project/flags/:flag/environments/:env/release-plan';

interface PlanScope {
  org: { id: string };
  project: { id: string; key: string };
  environment: { id: string; key: string };
  flag: FlagRow;
  caller: Caller;
  role: Role;
}

function targetOf(scope: PlanScope): PlanTarget {
  return {
    organizationId: scope.org.id,
    project: { id: scope.project.id, key: scope.project.key },
    environment: { id: scope.environment.id, key: scope.environment.key },
    flag: { id: scope.flag.id, key: scope.flag.key },
  };
}

function callerName(caller: Caller): string {
  return caller.type === 'user' ? (caller.name ?? caller.email) : `service token "${caller.name}"`;
}

/** The read shape of a plan (spec section 4), with what the caller may do next. */
async function planResponse(services: Services, plan: PlanRow, scope: PlanScope) {
  const keys = await services.db
    .selectFrom('variations')
    .select(['id', 'key'])
    .where('flag_id', '=', plan.flag_id)
    .execute();
  const key = (id: string) => keys.find((row) => row.id === id)?.key ?? id;
  const member = (blockedBy: string | null) => ({ role: 'Member' as const, blockedBy });
  return {
    id: plan.id,
    flagKey: scope.flag.key,
    environmentKey: scope.environment.key,
    variation: key(plan.variation_id),
    previousVariation: key(plan.previous_variation_id),
    steps: planSteps(plan),
    guard: planGuard(plan),
    state: plan.state,
    currentStep: plan.current_step < 0 ? null : plan.current_step,
    nextStepAt: plan.next_step_at,
    startedAt: plan.started_at,
    pausedReason: plan.paused_reason,
    regression: plan.regression === null ? null : (JSON.parse(plan.regression) as never),
    createdAt: plan.created_at,
    updatedAt: plan.updated_at,
    _actions: actionsFor(scope.role, {
      pause: member(plan.state === 'active' ? null : `the plan is ${plan.state}`),
      resume: member(plan.state === 'paused' ? null : `the plan is ${plan.state}`),
      rollback: member(
        plan.state === 'active' || plan.state === 'paused' ? null : `the plan is ${plan.state}`,
      ),
      delete: member(null),
    }),
  };
}

/** The plan of the scope's flag and environment. @throws ApiError 404 when there is none. */
async function requirePlan(services: Services, scope: PlanScope, org: string): Promise<PlanRow> {
  const plan = await findPlan(services.db, scope.flag.id, scope.environment.id);
  if (plan) return plan;
  throw notFound('Release plan', `${scope.flag.key}@${scope.environment.key}`, [], {
    method: 'PUT',
    path: `/api/v1/orgs/${org}/projects/${scope.project.key}/flags/${scope.flag.key}/environments/${scope.environment.key}/release-plan`,
  });
}

function wrongState(plan: PlanRow, action: string): ApiError {
  return new ApiError('conflict', `The release plan is ${plan.state}; it cannot ${action}.`);
}

/**
 * Starts a plan inside `m` (spec section 4): refuses a second active or paused plan (409),
 * replaces an ended one, records the fallthrough it finds, emits `release_plan.started`, and
 * applies the steps already due (a first step after `PT0S` at once).
 */
export async function startPlan(
  m: Mutation,
  target: PlanTarget,
  values: {
    variationId: string;
    previousVariationId: string;
    fallthrough: StoredFallthrough;
    steps: { percentage: number; after: string }[];
    guard: Guard | null;
    createdBy: string;
  },
  now: Date,
): Promise<PlanRow> {
  const existing = await findPlan(m.trx, target.flag.id, target.environment.id);
  if (existing && (existing.state === 'active' || existing.state === 'paused'))
    throw new ApiError(
      'conflict',
      `Flag "${target.flag.key}" has a ${existing.state} release plan in "${target.environment.key}"; roll it back or delete it first.`,
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

/** Release plans (spec: change requests, section 4) and their guards (section 5). */
export function registerReleasePlanRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  const refreshGuards = () =>
    void services.usage.exposures.refresh().catch((error: unknown) => {
      app.log.error({ err: error }, 'guarded release plans not read; the next flush retries');
    });

  route.get(
    PLAN_PATH,
    'Viewer',
    { schema: { tags: ['release-plans'], params: FlagEnvParams, response: { 200: PlanResponse } } },
    async (scope, request) =>
      planResponse(services, await requirePlan(services, scope, request.params.org), scope),
  );

  route.put(
    PLAN_PATH,
    'Member',
    {
      schema: {
        tags: ['release-plans'],
        params: FlagEnvParams,
        body: PlanInput,
        response: { 201: PlanResponse },
      },
    },
    async (scope, request, reply) => {
      const { flag, environment, caller } = scope;
      const body = request.body;
      checkNotArchived(flag);
      const variations = await services.db
        .selectFrom('variations')
        .select(['id', 'key'])
        .where('flag_id', '=', flag.id)
        .execute();
      const targetVariation = variations.find((v) => v.key === body.variation);
      if (!targetVariation)
        throw invalidField(
          'variation',
          `is not a variation key of this flag (${variations.map((v) => v.key).join(', ')})`,
        );
      checkSteps(body.steps);
      const guard: Guard | null = body.guard ? { ...GUARD_DEFAULTS, ...body.guard } : null;
      const configuration = await readFlagEnvironment(services, flag.id, environment.id);
      if (configuration.strategy !== 'SingleVariation')
        throw new ApiError(
          'conflict',
          `The fallthrough of flag "${flag.key}" in "${environment.key}" is a percentage rollout; a release plan starts from a fallthrough serving one variation.`,
        );
      if (configuration.default_variation_id === targetVariation.id)
        throw invalidField('variation', 'is what the fallthrough serves already');
      const now = services.clock.now();
      const plan = await mutateAs(services, scope, async (m) => {
        const started = await startPlan(
          m,
          targetOf(scope),
          {
            variationId: targetVariation.id,
            previousVariationId: configuration.default_variation_id,
            fallthrough: {
              strategy: configuration.strategy,
              defaultVariationId: configuration.default_variation_id,
              rollout: configuration.rollout,
            },
            steps: body.steps,
            guard,
            createdBy: caller.id,
          },
          now,
        );
        if (guard) m.afterCommit(refreshGuards);
        return started;
      });
      const warnings: string[] = [];
      if (guard) {
        const used = await services.db
          .selectFrom('custom_event_usage')
          .select('event_key')
          .where('environment_id', '=', environment.id)
          .where('event_key', '=', guard.metric)
          .executeTakeFirst();
        if (!used)
          warnings.push(
            `No event "${guard.metric}" has been received in "${environment.key}" yet; the guard waits for it (the metric may be new).`,
          );
      }
      return reply
        .status(201)
        .send({
          ...(await planResponse(services, plan, scope)),
          ...(warnings.length ? { warnings } : {}),
        });
    },
  );

  route.delete(
    PLAN_PATH,
    'Member',
    { schema: { tags: ['release-plans'], params: FlagEnvParams } },
    async (scope, request, reply) => {
      const plan = await requirePlan(services, scope, request.params.org);
      await mutateAs(services, scope, async (m) => {
        await m.trx.deleteFrom('release_plans').where('id', '=', plan.id).execute();
        await emitPlanEvent(
          m,
          targetOf(scope),
          plan,
          'release_plan.deleted',
          `Release plan of flag "${scope.flag.key}" in "${scope.environment.key}" deleted (${plan.state}); the fallthrough stays as it is`,
          [{ property: 'State', from: plan.state, to: null }],
        );
        m.afterCommit(refreshGuards);
      });
      return reply.status(204).send();
    },
  );

  const action = (
    name: 'pause' | 'resume' | 'rollback',
    run: (m: Mutation, plan: PlanRow, scope: PlanScope) => Promise<boolean>,
  ) =>
    route.post(
      `${PLAN_PATH}/${name}`,
      'Member',
      {
        schema: { tags: ['release-plans'], params: FlagEnvParams, response: { 200: PlanResponse } },
      },
      async (scope, request) => {
        const plan = await requirePlan(services, scope, request.params.org);
        const done = await mutateAs(services, scope, (m) => run(m, plan, scope));
        if (!done)
          throw wrongState(
            (await findPlan(services.db, plan.flag_id, plan.environment_id)) ?? plan,
            name,
          );
        refreshGuards();
        return planResponse(
          services,
          await requirePlan(services, scope, request.params.org),
          scope,
        );
      },
    );

  action('pause', async (m, plan, scope) => {
    const reason = `paused by ${callerName(scope.caller)}`;
    const { numUpdatedRows } = await m.trx
      .updateTable('release_plans')
      .set({ state: 'paused', next_step_at: null, paused_reason: reason, updated_at: m.now })
      .where('id', '=', plan.id)
      .where('state', '=', 'active')
      .executeTakeFirst();
    if (numUpdatedRows === 0n) return false;
    await emitPlanEvent(
      m,
      targetOf(scope),
      plan,
      'release_plan.paused',
      `Release plan of flag "${scope.flag.key}" in "${scope.environment.key}" ${reason}`,
      [
        { property: 'State', from: 'active', to: 'paused' },
        { property: 'Reason', from: null, to: reason },
      ],
    );
    return true;
  });
  action('resume', (m, plan, scope) => resumePlan(m, plan, targetOf(scope), new Date(m.now)));
  action('rollback', (m, plan, scope) =>
    rollbackPlan(m, plan, targetOf(scope), `rolled back by ${callerName(scope.caller)}`),
  );

  route.get(
    `${PLAN_PATH}/guard`,
    'Viewer',
    { schema: { tags: ['release-plans'], params: FlagEnvParams, response: { 200: GuardReading } } },
    async (scope, request) => {
      const plan = await requirePlan(services, scope, request.params.org);
      const guard = planGuard(plan);
      if (!guard)
        throw new ApiError(
          'not_found',
          `The release plan of flag "${scope.flag.key}" has no guard.`,
        );
      return readPlanGuard(services.db, plan, guard);
    },
  );
}
