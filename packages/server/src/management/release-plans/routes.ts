import type { Caller } from '../../auth/caller.js';
import type { Mutation } from '../../db/mutate.js';
import type { Role } from '../../db/schema.js';

import type { App } from '../../http/app-instance.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs, notFound } from '../../api/access.js';
import { actionsFor } from '../../api/actions.js';
import { checkNotArchived } from '../flags/configuration.js';
import { type FlagRow, flagEnvironmentTarget } from '../../api/path-resources.js';
import { readFlagEnvironment } from '../flags/queries.js';
import { scopedRoutes } from '../../api/scope.js';
import { readPlanGuard } from './guard.js';
import { registerReleasePlanListRoute } from './plan-list.js';
import {
  emitPlanEvent,
  pausePlan,
  findPlan,
  planGuard,
  planSteps,
  type PlanRow,
} from './queries.js';
import { FlagEnvParams, GuardReading, PlanInput, PlanResponse } from './schemas.js';
import { checkPlanInput, startPlan, withGuardMetric } from './start.js';
import { resumePlan, rollbackPlan } from './steps.js';

const PLAN_PATH = '/orgs/:org/projects/:project/flags/:flag/environments/:env/release-plan';

interface PlanScope {
  org: { id: string };
  project: { id: string; key: string };
  environment: { id: string; key: string };
  flag: FlagRow;
  caller: Caller;
  role: Role;
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

/** Release plans (spec: change requests, section 4) and their guards (section 5). */
export function registerReleasePlanRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  registerReleasePlanListRoute(app, services);
  const refreshGuards = () =>
    void services.usage.exposures?.refresh().catch((error: unknown) => {
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
      const configuration = await readFlagEnvironment(services, flag.id, environment.id);
      const values = checkPlanInput(
        await withGuardMetric(services.db, scope.project.id, body),
        variations,
        configuration,
      );
      const { guard } = values;
      const plan = await mutateAs(services, scope, async (m) => {
        const started = await startPlan(
          m,
          flagEnvironmentTarget(scope),
          { ...values, createdBy: caller.id },
          services.clock.now(),
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
      return reply.status(201).send({
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
          flagEnvironmentTarget(scope),
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

  action('pause', (m, plan, scope) => {
    const reason = `paused by ${callerName(scope.caller)}`;
    return pausePlan(m, plan, flagEnvironmentTarget(scope), reason, reason);
  });
  action('resume', (m, plan, scope) =>
    resumePlan(m, plan, flagEnvironmentTarget(scope), new Date(m.now)),
  );
  action('rollback', (m, plan, scope) =>
    rollbackPlan(
      m,
      plan,
      flagEnvironmentTarget(scope),
      `rolled back by ${callerName(scope.caller)}`,
    ),
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
