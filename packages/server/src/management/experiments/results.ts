import { sql, type Kysely } from 'kysely';
import type { Schema } from '../../db/schema.js';
import {
  compare,
  estimate,
  sampleRatioMismatch,
  type Moments,
  type Verdict,
} from '../../statistics/always-valid.js';
import type { MetricRow } from '../metrics/queries.js';
import {
  experimentMetrics,
  experimentVariations,
  type ExperimentRow,
  type MetricRole,
} from './queries.js';
import { TOTAL_WEIGHT, type Results } from './schemas.js';

/** One variation's sums over the per-user rows of one metric (users with a counted event). */
interface MetricSums {
  usersWithEvent: number;
  events: number;
  eventsSquared: number;
  withValue: number;
  withValueSquared: number;
  valueSum: number;
  valueSumSquared: number;
  valueTimesWithValue: number;
}

const NO_SUMS: MetricSums = {
  usersWithEvent: 0,
  events: 0,
  eventsSquared: 0,
  withValue: 0,
  withValueSquared: 0,
  valueSum: 0,
  valueSumSquared: 0,
  valueTimesWithValue: 0,
};

/**
 * The per-user moments of a metric over a variation's `users` exposed users (design record 064):
 * X the user's value (1 if they converted, their event count, their summed value), Y 1 — or, for
 * `mean`, X their summed value and Y their events with a value, so that ΣX/ΣY is the mean over
 * events. Users without a counted event add X = 0 (and Y = 1, or 0 for `mean`).
 */
export function metricMoments(kind: MetricRow['kind'], users: number, sums: MetricSums): Moments {
  const perUser = (sumX: number, sumX2: number): Moments => ({
    users,
    sumX,
    sumX2,
    sumY: users,
    sumY2: users,
    sumXY: sumX,
  });
  switch (kind) {
    case 'conversion':
      return perUser(sums.usersWithEvent, sums.usersWithEvent);
    case 'count':
      return perUser(sums.events, sums.eventsSquared);
    case 'sum':
      return perUser(sums.valueSum, sums.valueSumSquared);
    case 'mean':
      return {
        users,
        sumX: sums.valueSum,
        sumX2: sums.valueSumSquared,
        sumY: sums.withValue,
        sumY2: sums.withValueSquared,
        sumXY: sums.valueTimesWithValue,
      };
  }
}

/** Exposed users per variation of the experiment. */
async function exposedUsers(
  db: Kysely<Schema>,
  experimentId: string,
): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('experiment_exposures')
    .select(['variation', (eb) => eb.fn.countAll<number | string>().as('users')])
    .where('experiment_id', '=', experimentId)
    .groupBy('variation')
    .execute();
  return new Map(rows.map((row) => [row.variation, Number(row.users)]));
}

/** metric id → variation → sums, over the experiment's per-user metric rows. */
async function metricSums(
  db: Kysely<Schema>,
  experimentId: string,
): Promise<Map<string, Map<string, MetricSums>>> {
  const rows = await db
    .selectFrom('experiment_metric_users')
    .select([
      'metric_id',
      'variation',
      (eb) => eb.fn.countAll<number | string>().as('usersWithEvent'),
      sql<number | string>`sum(events)`.as('events'),
      sql<number | string>`sum(events * events)`.as('eventsSquared'),
      sql<number | string>`sum(with_value)`.as('withValue'),
      sql<number | string>`sum(with_value * with_value)`.as('withValueSquared'),
      sql<number | string>`sum(value_sum)`.as('valueSum'),
      sql<number | string>`sum(value_sum * value_sum)`.as('valueSumSquared'),
      sql<number | string>`sum(value_sum * with_value)`.as('valueTimesWithValue'),
    ])
    .where('experiment_id', '=', experimentId)
    .groupBy(['metric_id', 'variation'])
    .execute();
  const sums = new Map<string, Map<string, MetricSums>>();
  for (const row of rows) {
    const byVariation = sums.get(row.metric_id) ?? new Map<string, MetricSums>();
    byVariation.set(row.variation, {
      usersWithEvent: Number(row.usersWithEvent),
      events: Number(row.events),
      eventsSquared: Number(row.eventsSquared),
      withValue: Number(row.withValue),
      withValueSquared: Number(row.withValueSquared),
      valueSum: Number(row.valueSum),
      valueSumSquared: Number(row.valueSumSquared),
      valueTimesWithValue: Number(row.valueTimesWithValue),
    });
    sums.set(row.metric_id, byVariation);
  }
  return sums;
}

/** The results' metric entries without the series: what a check stores a point of. */
export type MetricResults = Results['metrics'];

/**
 * Computes an experiment's results now (contract section 3): two grouped reads of rows kept per
 * user (never a scan of raw events), then the statistics. Each treatment is compared against the
 * control with always-valid intervals (Bonferroni over the treatments); a verdict only once every
 * variation has `minimum_users` (before, `verdict` is absent).
 * @param metrics - the project's metrics by id (a metric deleted since is left out)
 */
export async function computeResults(
  db: Kysely<Schema>,
  experiment: ExperimentRow,
  metrics: ReadonlyMap<string, MetricRow>,
  now: Date,
): Promise<Omit<Results, 'series'>> {
  const [exposed, sums] = await Promise.all([
    exposedUsers(db, experiment.id),
    metricSums(db, experiment.id),
  ]);
  const variations = experimentVariations(experiment);
  const control = experiment.control_variation;
  const treatments = variations.filter((variation) => variation.key !== control);
  const users = (key: string) => exposed.get(key) ?? 0;
  const enoughUsers = variations.every(
    (variation) => users(variation.key) >= experiment.minimum_users,
  );
  const srm = sampleRatioMismatch(
    Object.fromEntries(variations.map((variation) => [variation.key, users(variation.key)])),
    Object.fromEntries(variations.map((variation) => [variation.key, variation.weight])),
  );
  const metricEntries = experimentMetrics(experiment).flatMap(({ metricId, role }) => {
    const metric = metrics.get(metricId);
    if (metric === undefined) return [];
    const byMetric = sums.get(metricId);
    const moments = (key: string) =>
      metricMoments(metric.kind, users(key), byMetric?.get(key) ?? NO_SUMS);
    const controlMoments = moments(control);
    const byVariation: Results['metrics'][number]['byVariation'] = {};
    let eventsWithoutValue = 0;
    for (const { key } of variations) {
      const variationSums = byMetric?.get(key) ?? NO_SUMS;
      eventsWithoutValue += variationSums.events - variationSums.withValue;
      const own = moments(key);
      const { value, standardError } = estimate(own);
      const figures = {
        users: users(key),
        usersWithEvent: variationSums.usersWithEvent,
        value,
        standardError,
      };
      if (key === control) {
        byVariation[key] = figures;
        continue;
      }
      const { verdict, ...comparison } = compare(controlMoments, own, {
        confidence: experiment.confidence,
        direction: metric.direction,
        comparisons: treatments.length,
        guardrail: role === 'guardrail',
        enoughUsers,
      });
      // No verdict at all, rather than `inconclusive`, until every variation has minimumUsers.
      byVariation[key] = { ...figures, ...comparison, ...(enoughUsers ? { verdict } : {}) };
    }
    return [
      {
        key: metric.key,
        name: metric.name,
        kind: metric.kind,
        direction: metric.direction,
        role: role satisfies MetricRole,
        eventsWithoutValue: metric.value_property === null ? 0 : eventsWithoutValue,
        byVariation,
      },
    ];
  });
  return {
    status: experiment.status,
    startedAt: experiment.started_at,
    computedAt: now.toISOString(),
    srm: {
      pValue: srm.pValue,
      detected: srm.detected,
      expected: Object.fromEntries(
        variations.map((variation) => [variation.key, variation.weight / TOTAL_WEIGHT]),
      ),
      observed: Object.fromEntries(
        variations.map((variation) => [variation.key, users(variation.key)]),
      ),
    },
    variations: variations.map(({ key }) => ({
      key,
      exposedUsers: users(key),
      ...(key === control ? { control: true } : {}),
    })),
    metrics: metricEntries,
  };
}

/** The primary metric's verdict of each treatment that has one, as lists show it. */
export function primaryVerdicts(results: Pick<Results, 'metrics'>): Record<string, Verdict> {
  const primary = results.metrics.find((metric) => metric.role === 'primary');
  return Object.fromEntries(
    Object.entries(primary?.byVariation ?? {}).flatMap(([key, figures]) =>
      figures.verdict === undefined ? [] : [[key, figures.verdict]],
    ),
  );
}

/** The stored points of the experiment's series, oldest first. */
export async function readSeries(
  db: Kysely<Schema>,
  experimentId: string,
): Promise<Results['series']> {
  const rows = await db
    .selectFrom('experiment_series')
    .select(['at', 'points'])
    .where('experiment_id', '=', experimentId)
    .orderBy('at')
    .execute();
  return rows.flatMap((row) =>
    (JSON.parse(row.points) as Omit<Results['series'][number], 'at'>[]).map((point) => ({
      at: row.at,
      ...point,
    })),
  );
}

/**
 * The series point of `results`: each treatment's relative difference per metric, where there is
 * one to show (a comparison without data has a zero-width interval and is left out).
 */
export function seriesPoints(
  results: Pick<Results, 'metrics'>,
): Omit<Results['series'][number], 'at'>[] {
  return results.metrics.flatMap((metric) =>
    Object.entries(metric.byVariation).flatMap(([variation, figures]) =>
      figures.relativeDifference === undefined ||
      figures.confidenceInterval === undefined ||
      figures.confidenceInterval[0] === figures.confidenceInterval[1]
        ? []
        : [
            {
              metric: metric.key,
              variation,
              relativeDifference: figures.relativeDifference,
              confidenceInterval: figures.confidenceInterval,
            },
          ],
    ),
  );
}
