import { readFlagEnvironmentTarget } from '../../api/path-resources.js';
import { mutate } from '../../db/mutate.js';
import type { Actor } from '../../events/types.js';
import type { DueWork } from '../../schedules/due-work.js';
import type { Services } from '../../services.js';
import { projectMetrics } from '../metrics/queries.js';
import { emitExperimentEvent, type ExperimentRow } from './queries.js';
import { computeResults, primaryVerdicts, seriesPoints } from './results.js';
import type { Results } from './schemas.js';

/** How often each running experiment is checked at most, across all nodes (ms). */
export const CHECK_INTERVAL_MS = 60_000;
/** How far apart the points of an experiment's series are at least (ms). */
export const SERIES_INTERVAL_MS = 3_600_000;
/** Experiments checked per pass at most. */
const CHECKS_PER_PASS = 20;

/** Who the service's own experiment events are recorded as: no person or token has this id. */
export const EXPERIMENT_ACTOR: Actor = {
  userId: '00000000-0000-0000-0000-000000000000',
  email: null,
  name: 'Vexil experiment',
};

/**
 * One check of a running experiment (design record 064): computes its results, keeps the primary
 * metric's verdicts for lists, adds a point to its series when the last is older than
 * {@link SERIES_INTERVAL_MS}, and on a sample ratio mismatch records it and emits
 * `experiment.srm_detected`, once ({@link recordSampleRatioMismatch}).
 */
async function checkExperiment(
  services: Services,
  experiment: ExperimentRow,
  now: Date,
): Promise<boolean> {
  const metrics = await projectMetrics(services.db, experiment.project_id);
  const results = await computeResults(services.db, experiment, metrics, now);
  await services.db
    .updateTable('experiments')
    .set({ primary_verdicts: JSON.stringify(primaryVerdicts(results)) })
    .where('id', '=', experiment.id)
    .execute();
  const last = await services.db
    .selectFrom('experiment_series')
    .select('at')
    .where('experiment_id', '=', experiment.id)
    .orderBy('at', 'desc')
    .executeTakeFirst();
  const points = seriesPoints(results);
  if (
    points.length > 0 &&
    (last === undefined || Date.parse(last.at) <= now.getTime() - SERIES_INTERVAL_MS)
  )
    await services.db
      .insertInto('experiment_series')
      .values({
        experiment_id: experiment.id,
        at: now.toISOString(),
        points: JSON.stringify(points),
      })
      .onConflict((conflict) => conflict.doNothing())
      .execute();
  return recordSampleRatioMismatch(services, experiment, results.srm, now);
}

/**
 * Records a sample ratio mismatch of a running experiment and emits `experiment.srm_detected`,
 * once: conditional on none being recorded yet, so that checks and readings on several nodes
 * emit it one time in all. Does nothing when `srm` detected none.
 * @returns whether this call recorded it
 */
export async function recordSampleRatioMismatch(
  services: Services,
  experiment: ExperimentRow,
  srm: Results['srm'],
  now: Date,
): Promise<boolean> {
  if (!srm.detected || experiment.srm_detected_at !== null || experiment.status !== 'running')
    return false;
  const target = await readFlagEnvironmentTarget(services.db, experiment);
  return mutate(
    services.db,
    {
      organizationId: target.organizationId,
      actor: EXPERIMENT_ACTOR,
      now,
      events: services.events,
    },
    async (m) => {
      const { numUpdatedRows } = await m.trx
        .updateTable('experiments')
        .set({ srm_detected_at: m.now })
        .where('id', '=', experiment.id)
        .where('srm_detected_at', 'is', null)
        .executeTakeFirst();
      if (numUpdatedRows === 0n) return false;
      const observed = Object.entries(srm.observed)
        .map(([key, users]) => `${key} ${users}`)
        .join(', ');
      await emitExperimentEvent(
        m,
        target,
        experiment,
        'experiment.srm_detected',
        `Experiment "${experiment.key}" of flag "${target.flag.key}" in "${target.environment.key}": sample ratio mismatch (p = ${srm.pValue.toPrecision(3)}; exposed users ${observed}); its results cannot be trusted`,
        [
          { property: 'SrmPValue', from: null, to: String(srm.pValue) },
          { property: 'ExposedUsers', from: null, to: JSON.stringify(srm.observed) },
        ],
      );
      return true;
    },
  );
}

/**
 * The running experiments' checks as due work: each pass checks those not checked in the last
 * {@link CHECK_INTERVAL_MS}, each claimed by a conditional update of `checked_at` so that one
 * node checks it.
 */
export function experimentChecks(services: Services, intervalMs = CHECK_INTERVAL_MS): DueWork {
  return {
    name: 'experiment checks',
    async run(now) {
      const before = new Date(now.getTime() - intervalMs).toISOString();
      const experiments = await services.db
        .selectFrom('experiments')
        .selectAll()
        .where('status', '=', 'running')
        .where((eb) => eb.or([eb('checked_at', 'is', null), eb('checked_at', '<=', before)]))
        .limit(CHECKS_PER_PASS)
        .execute();
      let detected = 0;
      for (const experiment of experiments) {
        const { numUpdatedRows } = await services.db
          .updateTable('experiments')
          .set({ checked_at: now.toISOString() })
          .where('id', '=', experiment.id)
          .where((eb) =>
            experiment.checked_at === null
              ? eb('checked_at', 'is', null)
              : eb('checked_at', '=', experiment.checked_at),
          )
          .executeTakeFirst();
        if (numUpdatedRows === 0n) continue;
        if (await checkExperiment(services, experiment, now)) detected += 1;
      }
      return detected;
    },
  };
}
