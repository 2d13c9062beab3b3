import { flagEnvironmentTarget } from '../../api/path-resources.js';
import { mutateAs, notFound } from '../../api/access.js';
import { actionsFor } from '../../api/actions.js';
import { paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes, type FlagEnvironmentScope, type ProjectScope } from '../../api/scope.js';
import type { Role } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError } from '../../errors.js';
import type { App } from '../../http/app-instance.js';
import type { Services } from '../../services.js';
import { checkNotArchived } from '../flags/configuration.js';
import { projectMetrics, type MetricRow } from '../metrics/queries.js';
import { ProjectParams } from '../metrics/schemas.js';
import {
  checkExperimentInput,
  createExperiment,
  startExperiment,
  stopExperiment,
} from './lifecycle.js';
import {
  decisionWords,
  emitExperimentEvent,
  experimentMetrics,
  experimentVariations,
  findExperiment,
  storedDecision,
  type ExperimentRow,
} from './queries.js';
import { recordSampleRatioMismatch } from './checks.js';
import { computeResults, readSeries, seriesPoints } from './results.js';
import {
  ExperimentInput,
  ExperimentItem,
  ExperimentParams,
  ExperimentPatch,
  ExperimentResponse,
  FlagEnvironmentParams,
  ListQuery,
  ResultsResponse,
  StopInput,
  type Decision,
} from './schemas.js';

const PATH = '/orgs/:org/projects/:project/flags/:flag/environments/:env/experiments';

/**
 * Opens a change request holding one change of kind `experiment` (design record 064), for a start
 * or a stop in an environment that requires change requests. Given by the node, which wires the
 * change requests to the areas that propose them.
 */
export type ProposeExperimentChange = (
  scope: ProjectScope,
  environmentKey: string,
  title: string,
  change: {
    kind: 'experiment';
    flagKey: string;
    experimentKey: string;
    action: 'start' | 'stop';
    decision?: Decision;
  },
) => Promise<{ number: number }>;

/** An experiment in the API's names (contract section 2). */
function experimentItem(
  row: ExperimentRow,
  keys: { flag: string; environment: string },
  metrics: ReadonlyMap<string, MetricRow>,
) {
  const refs = experimentMetrics(row);
  const metricKeys = (role: string) =>
    refs
      .filter((ref) => ref.role === role)
      .map((ref) => metrics.get(ref.metricId)?.key ?? ref.metricId);
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    hypothesis: row.hypothesis,
    flagKey: keys.flag,
    environmentKey: keys.environment,
    variations: experimentVariations(row),
    controlVariation: row.control_variation,
    primaryMetric: metricKeys('primary')[0] ?? '',
    secondaryMetrics: metricKeys('secondary'),
    guardrailMetrics: metricKeys('guardrail'),
    confidence: row.confidence,
    minimumUsers: row.minimum_users,
    salt: row.salt,
    status: row.status,
    decision: storedDecision(row),
    startedAt: row.started_at,
    stoppedAt: row.stopped_at,
    srmDetectedAt: row.srm_detected_at,
    primaryVerdicts:
      row.primary_verdicts === null
        ? null
        : (JSON.parse(row.primary_verdicts) as Record<string, 'better' | 'worse' | 'inconclusive'>),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function experimentActions(role: Role, row: ExperimentRow) {
  const member = (blockedBy: string | null) => ({ role: 'Member' as const, blockedBy });
  const is = (status: ExperimentRow['status']) =>
    row.status === status ? null : `the experiment is ${row.status}`;
  return actionsFor(role, {
    update: member(is('draft')),
    start: member(is('draft')),
    stop: member(is('running')),
    delete: member(row.status === 'running' ? 'the experiment is running; stop it first' : null),
  });
}

/** Experiments on a flag's fallthrough (contract `experiments.md`, sections 2–3; design record 064). */
export function registerExperimentRoutes(
  app: App,
  services: Services,
  propose: ProposeExperimentChange,
): void {
  const route = scopedRoutes(app, services);
  const refreshRecorder = () =>
    void services.usage.exposures?.refresh().catch((error: unknown) => {
      app.log.error({ err: error }, 'running experiments not read; the next flush retries');
    });

  const response = async (scope: FlagEnvironmentScope, row: ExperimentRow) => ({
    ...experimentItem(
      row,
      { flag: scope.flag.key, environment: scope.environment.key },
      await projectMetrics(services.db, scope.project.id),
    ),
    _actions: experimentActions(scope.role, row),
  });

  const requireExperiment = async (
    scope: FlagEnvironmentScope,
    ref: string,
  ): Promise<ExperimentRow> => {
    const row = await findExperiment(services.db, scope.flag.id, scope.environment.id, ref);
    if (row) return row;
    const keys = await services.db
      .selectFrom('experiments')
      .select('key')
      .where('flag_id', '=', scope.flag.id)
      .where('environment_id', '=', scope.environment.id)
      .execute();
    throw notFound(
      'Experiment',
      ref,
      keys.map((row) => row.key),
      {
        method: 'GET',
        path: `/api/v1/orgs/${scope.org.slug}/projects/${scope.project.key}/flags/${scope.flag.key}/environments/${scope.environment.key}/experiments`,
      },
    );
  };

  const variationsOf = (flagId: string) =>
    services.db
      .selectFrom('variations')
      .select(['id', 'key'])
      .where('flag_id', '=', flagId)
      .execute();

  route.get(
    '/orgs/:org/projects/:project/experiments',
    'Viewer',
    {
      schema: {
        tags: ['experiments'],
        params: ProjectParams,
        querystring: ListQuery,
        response: { 200: pagedSchema(ExperimentItem) },
      },
    },
    async (scope, request) => {
      let query = services.db
        .selectFrom('experiments')
        .innerJoin('flags', 'flags.id', 'experiments.flag_id')
        .innerJoin('environments', 'environments.id', 'experiments.environment_id')
        .selectAll('experiments')
        .select(['flags.key as flagKey', 'environments.key as environmentKey'])
        .where('experiments.project_id', '=', scope.project.id);
      if (request.query.status !== undefined)
        query = query.where('experiments.status', '=', request.query.status);
      const { rows, nextCursor } = await paginate(query, request.query, {
        sortColumn: 'experiments.created_at',
        sortValue: (row) => row.created_at,
        direction: 'desc',
        idColumn: 'experiments.id',
      });
      const metrics = await projectMetrics(services.db, scope.project.id);
      return {
        items: rows.map((row) =>
          experimentItem(row, { flag: row.flagKey, environment: row.environmentKey }, metrics),
        ),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, {}),
      };
    },
  );

  route.get(
    PATH,
    'Viewer',
    {
      schema: {
        tags: ['experiments'],
        params: FlagEnvironmentParams,
        querystring: ListQuery,
        response: { 200: pagedSchema(ExperimentItem) },
      },
    },
    async (scope, request) => {
      let query = services.db
        .selectFrom('experiments')
        .selectAll()
        .where('flag_id', '=', scope.flag.id)
        .where('environment_id', '=', scope.environment.id);
      if (request.query.status !== undefined)
        query = query.where('status', '=', request.query.status);
      const { rows, nextCursor } = await paginate(query, request.query, {
        sortColumn: 'created_at',
        sortValue: (row) => row.created_at,
        direction: 'desc',
      });
      const metrics = await projectMetrics(services.db, scope.project.id);
      const keys = { flag: scope.flag.key, environment: scope.environment.key };
      return {
        items: rows.map((row) => experimentItem(row, keys, metrics)),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, {
          create: {
            role: 'Member',
            blockedBy: scope.flag.is_archived ? 'the flag is archived' : null,
          },
        }),
      };
    },
  );

  route.post(
    PATH,
    'Member',
    {
      schema: {
        tags: ['experiments'],
        params: FlagEnvironmentParams,
        body: ExperimentInput,
        response: { 201: ExperimentResponse },
      },
    },
    async (scope, request, reply) => {
      checkNotArchived(scope.flag);
      const { key, ...input } = request.body;
      const values = await checkExperimentInput(
        services.db,
        scope.project.id,
        input,
        await variationsOf(scope.flag.id),
      );
      const row = await mutateAs(services, scope, (m) =>
        createExperiment(m, flagEnvironmentTarget(scope), key, values, scope.caller.id),
      );
      return reply.status(201).send(await response(scope, row));
    },
  );

  route.get(
    `${PATH}/:experiment`,
    'Viewer',
    {
      schema: {
        tags: ['experiments'],
        params: ExperimentParams,
        response: { 200: ExperimentResponse },
      },
    },
    async (scope, request) =>
      response(scope, await requireExperiment(scope, request.params.experiment)),
  );

  route.patch(
    `${PATH}/:experiment`,
    'Member',
    {
      schema: {
        tags: ['experiments'],
        params: ExperimentParams,
        body: ExperimentPatch,
        response: { 200: ExperimentResponse },
      },
    },
    async (scope, request) => {
      const before = await requireExperiment(scope, request.params.experiment);
      if (before.status !== 'draft')
        throw new ApiError(
          'conflict',
          `Experiment "${before.key}" is ${before.status}; only a draft changes.`,
        );
      const metrics = await projectMetrics(services.db, scope.project.id);
      const current = experimentItem(
        before,
        { flag: scope.flag.key, environment: scope.environment.key },
        metrics,
      );
      const body = request.body;
      const values = await checkExperimentInput(
        services.db,
        scope.project.id,
        {
          name: body.name ?? current.name,
          hypothesis: body.hypothesis !== undefined ? body.hypothesis : current.hypothesis,
          variations: body.variations ?? current.variations,
          controlVariation: body.controlVariation ?? current.controlVariation,
          primaryMetric: body.primaryMetric ?? current.primaryMetric,
          secondaryMetrics: body.secondaryMetrics ?? current.secondaryMetrics,
          guardrailMetrics: body.guardrailMetrics ?? current.guardrailMetrics,
          confidence: body.confidence ?? current.confidence,
          minimumUsers: body.minimumUsers ?? current.minimumUsers,
          salt: body.salt ?? current.salt,
        },
        await variationsOf(scope.flag.id),
      );
      const updated = await mutateAs(services, scope, async (m) => {
        const row = await m.trx
          .updateTable('experiments')
          .set({
            name: values.name,
            hypothesis: values.hypothesis,
            variations: JSON.stringify(values.variations),
            control_variation: values.controlVariation,
            metrics: JSON.stringify(values.metrics),
            confidence: values.confidence,
            minimum_users: values.minimumUsers,
            salt: values.salt ?? before.salt,
            updated_at: m.now,
          })
          .where('id', '=', before.id)
          .where('status', '=', 'draft')
          .returningAll()
          .executeTakeFirst();
        if (!row)
          throw new ApiError(
            'conflict',
            `Experiment "${before.key}" was started or removed meanwhile.`,
          );
        const after = experimentItem(
          row,
          { flag: scope.flag.key, environment: scope.environment.key },
          metrics,
        );
        await emitExperimentEvent(
          m,
          flagEnvironmentTarget(scope),
          row,
          'experiment.updated',
          `Experiment "${row.key}" of flag "${scope.flag.key}" in "${scope.environment.key}" updated`,
          diffProperties({ ...current, updatedAt: null }, { ...after, updatedAt: null }),
        );
        return row;
      });
      return response(scope, updated);
    },
  );

  route.delete(
    `${PATH}/:experiment`,
    'Member',
    { schema: { tags: ['experiments'], params: ExperimentParams } },
    async (scope, request, reply) => {
      const experiment = await requireExperiment(scope, request.params.experiment);
      await mutateAs(services, scope, async (m) => {
        const { numDeletedRows } = await m.trx
          .deleteFrom('experiments')
          .where('id', '=', experiment.id)
          .where('status', '!=', 'running')
          .executeTakeFirst();
        if (numDeletedRows === 0n)
          throw new ApiError(
            'conflict',
            `Experiment "${experiment.key}" is running; stop it first.`,
          );
        await emitExperimentEvent(
          m,
          flagEnvironmentTarget(scope),
          experiment,
          'experiment.deleted',
          `Experiment "${experiment.key}" of flag "${scope.flag.key}" in "${scope.environment.key}" deleted (${experiment.status}), with its exposures and results`,
          [{ property: 'Status', from: experiment.status, to: null }],
        );
      });
      return reply.status(204).send();
    },
  );

  /**
   * A start or stop: written directly, or, where the environment requires change requests,
   * proposed as a change request that does it when applied (the answer names it).
   */
  const transition = async (
    scope: FlagEnvironmentScope,
    experiment: ExperimentRow,
    action: 'start' | 'stop',
    decision?: Decision,
  ) => {
    if (scope.environment.change_requests_required === 1) {
      if (action === 'start' && experiment.status !== 'draft')
        throw new ApiError(
          'conflict',
          `Experiment "${experiment.key}" is ${experiment.status}; only a draft starts.`,
        );
      if (action === 'stop' && experiment.status !== 'running')
        throw new ApiError(
          'conflict',
          `Experiment "${experiment.key}" is ${experiment.status}; only a running experiment stops.`,
        );
      const title =
        action === 'start'
          ? `Start experiment "${experiment.key}" of flag "${scope.flag.key}"`
          : `Stop experiment "${experiment.key}" of flag "${scope.flag.key}": ${decisionWords(decision ?? 'inconclusive')}`;
      const changeRequest = await propose(scope, scope.environment.key, title, {
        kind: 'experiment',
        flagKey: scope.flag.key,
        experimentKey: experiment.key,
        action,
        ...(decision !== undefined ? { decision } : {}),
      });
      const row = await requireExperiment(scope, experiment.id);
      return { ...(await response(scope, row)), changeRequest: { number: changeRequest.number } };
    }
    const row = await mutateAs(services, scope, async (m) => {
      const changed =
        action === 'start'
          ? await startExperiment(m, flagEnvironmentTarget(scope), experiment)
          : await stopExperiment(
              m,
              flagEnvironmentTarget(scope),
              experiment,
              decision ?? 'inconclusive',
            );
      m.afterCommit(refreshRecorder);
      return changed;
    });
    return response(scope, row);
  };

  route.post(
    `${PATH}/:experiment/start`,
    'Member',
    {
      schema: {
        tags: ['experiments'],
        params: ExperimentParams,
        response: { 200: ExperimentResponse },
      },
    },
    async (scope, request) => {
      checkNotArchived(scope.flag);
      return transition(scope, await requireExperiment(scope, request.params.experiment), 'start');
    },
  );

  route.post(
    `${PATH}/:experiment/stop`,
    'Member',
    {
      schema: {
        tags: ['experiments'],
        params: ExperimentParams,
        body: StopInput,
        response: { 200: ExperimentResponse },
      },
    },
    async (scope, request) =>
      transition(
        scope,
        await requireExperiment(scope, request.params.experiment),
        'stop',
        request.body.decision,
      ),
  );

  route.get(
    `${PATH}/:experiment/results`,
    'Viewer',
    {
      schema: {
        tags: ['experiments'],
        params: ExperimentParams,
        response: { 200: ResultsResponse },
      },
    },
    async (scope, request) => {
      const experiment = await requireExperiment(scope, request.params.experiment);
      const [results, series] = await Promise.all([
        computeResults(
          services.db,
          experiment,
          await projectMetrics(services.db, scope.project.id),
          services.clock.now(),
        ),
        readSeries(services.db, experiment.id),
      ]);
      // A reading that finds a mismatch records it at once, rather than at the next check.
      await recordSampleRatioMismatch(services, experiment, results.srm, services.clock.now());
      // The stored points, then the one of this reading (not stored: checks store one an hour).
      const now = seriesPoints(results).map((point) => ({ at: results.computedAt, ...point }));
      return { ...results, series: [...series, ...now] };
    },
  );
}
