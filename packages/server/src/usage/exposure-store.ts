import type { Kysely, Transaction } from 'kysely';
import type {
  ExperimentMetricUsersTable,
  ReleasePlanExposuresTable,
  Schema,
} from '../db/schema.js';
import type {
  ExperimentCountRow,
  ExperimentEventRow,
  ExperimentExposureRow,
  ExperimentWrite,
  EventSums,
  RunningExperiment,
  StoredExposure,
} from './experiment-exposures.js';
import type { ActiveGuardedPlan, ExposureRow, ExposureStore } from './exposures.js';

/** Rows per upsert statement: far below both dialects' bound-parameter limits. */
const ROWS_PER_STATEMENT = 500;

/**
 * A node's exposure store: the `release_plans` and `release_plan_exposures` tables, and the
 * running experiments' `experiment_exposures` and `experiment_metric_users` (design record 064).
 */
export class DatabaseExposureStore implements ExposureStore {
  constructor(private readonly db: Kysely<Schema>) {}

  async activePlans(): Promise<ActiveGuardedPlan[]> {
    const rows = await this.db
      .selectFrom('release_plans')
      .innerJoin('flags', 'flags.id', 'release_plans.flag_id')
      .innerJoin('variations', 'variations.id', 'release_plans.variation_id')
      .select([
        'release_plans.id',
        'release_plans.environment_id',
        'release_plans.guard',
        'flags.key as flagKey',
        'variations.key as variationKey',
      ])
      .where('release_plans.state', '=', 'active')
      .where('release_plans.guard', 'is not', null)
      .execute();
    return rows.map((row) => ({
      planId: row.id,
      environmentId: row.environment_id,
      flagKey: row.flagKey,
      targetVariationKey: row.variationKey,
      metric: (JSON.parse(row.guard ?? '{}') as { metric?: string }).metric ?? '',
    }));
  }

  async writeExposures(rows: ExposureRow[]): Promise<ReadonlySet<string>> {
    const existing = new Set(
      (
        await this.db
          .selectFrom('release_plans')
          .select('id')
          .where('id', 'in', [...new Set(rows.map((row) => row.planId))])
          .execute()
      ).map((row) => row.id),
    );
    const values: ReleasePlanExposuresTable[] = rows
      .filter((row) => existing.has(row.planId))
      .map((row) => ({
        plan_id: row.planId,
        user_hash: row.userHash,
        side: row.side,
        exposed_ms: row.exposedMs,
        metric_ms: row.metricMs,
      }));
    if (values.length === 0) return existing;
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < values.length; i += ROWS_PER_STATEMENT) {
        await trx
          .insertInto('release_plan_exposures')
          .values(values.slice(i, i + ROWS_PER_STATEMENT))
          .onConflict((conflict) =>
            conflict.columns(['plan_id', 'user_hash']).doUpdateSet((eb) => {
              // The earliest exposure wins, with its side; the latest metric event wins.
              const earlier = eb.and([
                eb('excluded.exposed_ms', 'is not', null),
                eb.or([
                  eb('release_plan_exposures.exposed_ms', 'is', null),
                  eb('excluded.exposed_ms', '<', eb.ref('release_plan_exposures.exposed_ms')),
                ]),
              ]);
              const later = eb.and([
                eb('excluded.metric_ms', 'is not', null),
                eb.or([
                  eb('release_plan_exposures.metric_ms', 'is', null),
                  eb('excluded.metric_ms', '>', eb.ref('release_plan_exposures.metric_ms')),
                ]),
              ]);
              return {
                side: eb
                  .case()
                  .when(earlier)
                  .then(eb.ref('excluded.side'))
                  .else(eb.ref('release_plan_exposures.side'))
                  .end(),
                exposed_ms: eb
                  .case()
                  .when(earlier)
                  .then(eb.ref('excluded.exposed_ms'))
                  .else(eb.ref('release_plan_exposures.exposed_ms'))
                  .end(),
                metric_ms: eb
                  .case()
                  .when(later)
                  .then(eb.ref('excluded.metric_ms'))
                  .else(eb.ref('release_plan_exposures.metric_ms'))
                  .end(),
              };
            }),
          )
          .execute();
      }
    });
    return existing;
  }

  async runningExperiments(): Promise<RunningExperiment[]> {
    const rows = await this.db
      .selectFrom('experiments')
      .innerJoin('flags', 'flags.id', 'experiments.flag_id')
      .select([
        'experiments.id',
        'experiments.environment_id',
        'experiments.metrics',
        'flags.key as flagKey',
      ])
      .where('experiments.status', '=', 'running')
      .execute();
    if (rows.length === 0) return [];
    const metricIds = [
      ...new Set(
        rows.flatMap((row) =>
          (JSON.parse(row.metrics) as { metricId: string }[]).map((m) => m.metricId),
        ),
      ),
    ];
    const metrics = new Map(
      (
        await this.db
          .selectFrom('metrics')
          .select(['id', 'event_key', 'value_property', 'window_hours'])
          .where('id', 'in', metricIds)
          .execute()
      ).map((metric) => [metric.id, metric]),
    );
    return rows.map((row) => ({
      experimentId: row.id,
      environmentId: row.environment_id,
      flagKey: row.flagKey,
      metrics: (JSON.parse(row.metrics) as { metricId: string }[]).flatMap(({ metricId }) => {
        const metric = metrics.get(metricId);
        return metric === undefined
          ? []
          : [
              {
                metricId,
                eventKey: metric.event_key,
                valueProperty: metric.value_property,
                windowMs: metric.window_hours * 3_600_000,
              },
            ];
      }),
    }));
  }

  async writeExperimentRows(
    exposures: ExperimentExposureRow[],
    events: ExperimentEventRow[],
    counts: ExperimentCountRow[],
  ): Promise<ExperimentWrite> {
    const experimentIds = [
      ...new Set([...exposures, ...events, ...counts].map((row) => row.experimentId)),
    ];
    if (experimentIds.length === 0) return { unmatched: [], stored: [] };
    const running = new Set(
      (
        await this.db
          .selectFrom('experiments')
          .select('id')
          .where('id', 'in', experimentIds)
          .where('status', '=', 'running')
          .execute()
      ).map((row) => row.id),
    );
    const unmatched: ExperimentEventRow[] = [];
    let stored: StoredExposure[] = [];
    await this.db.transaction().execute(async (trx) => {
      const values = exposures
        .filter((row) => running.has(row.experimentId))
        .map((row) => ({
          experiment_id: row.experimentId,
          user_hash: row.userHash,
          variation: row.variation,
          exposed_ms: row.exposedMs,
        }));
      for (let i = 0; i < values.length; i += ROWS_PER_STATEMENT)
        await trx
          .insertInto('experiment_exposures')
          .values(values.slice(i, i + ROWS_PER_STATEMENT))
          .onConflict((conflict) =>
            conflict.columns(['experiment_id', 'user_hash']).doUpdateSet((eb) => {
              // The earliest exposure wins, with its variation.
              const earlier = eb(
                'excluded.exposed_ms',
                '<',
                eb.ref('experiment_exposures.exposed_ms'),
              );
              return {
                variation: eb
                  .case()
                  .when(earlier)
                  .then(eb.ref('excluded.variation'))
                  .else(eb.ref('experiment_exposures.variation'))
                  .end(),
                exposed_ms: eb
                  .case()
                  .when(earlier)
                  .then(eb.ref('excluded.exposed_ms'))
                  .else(eb.ref('experiment_exposures.exposed_ms'))
                  .end(),
              };
            }),
          )
          .execute();
      // A user's events go with the variation of their first exposure: where a batch moved it
      // earlier (another node saw the user first), their counted events move with it.
      for (let i = 0; i < values.length; i += ROWS_PER_STATEMENT) {
        const chunk = values.slice(i, i + ROWS_PER_STATEMENT);
        for (const experimentId of new Set(chunk.map((row) => row.experiment_id)))
          await trx
            .updateTable('experiment_metric_users')
            .set((eb) => ({
              variation: eb
                .selectFrom('experiment_exposures')
                .select('experiment_exposures.variation')
                .whereRef(
                  'experiment_exposures.experiment_id',
                  '=',
                  'experiment_metric_users.experiment_id',
                )
                .whereRef(
                  'experiment_exposures.user_hash',
                  '=',
                  'experiment_metric_users.user_hash',
                ),
            }))
            .where('experiment_id', '=', experimentId)
            .where(
              'user_hash',
              'in',
              chunk.filter((row) => row.experiment_id === experimentId).map((row) => row.user_hash),
            )
            .execute();
      }
      const held = events.filter((row) => running.has(row.experimentId));
      const counted = counts.filter((row) => running.has(row.experimentId));
      const exposed = await storedExposures(trx, [
        ...held,
        ...counted,
        ...values.map((row) => ({ experimentId: row.experiment_id, userHash: row.user_hash })),
      ]);
      // One row per experiment, metric and user: an upsert statement may not name a row twice.
      const additions = new Map<string, ExperimentMetricUsersTable>();
      const add = (
        row: { experimentId: string; metricId: string; userHash: string },
        variation: string,
        sums: EventSums,
      ) => {
        const key = `${row.experimentId}\u0000${row.metricId}\u0000${row.userHash}`;
        const seen = additions.get(key);
        if (seen !== undefined) {
          seen.events += sums.events;
          seen.with_value += sums.withValue;
          seen.value_sum += sums.valueSum;
        } else
          additions.set(key, {
            experiment_id: row.experimentId,
            metric_id: row.metricId,
            user_hash: row.userHash,
            variation,
            events: sums.events,
            with_value: sums.withValue,
            value_sum: sums.valueSum,
          });
      };
      for (const row of held) {
        const exposure = exposed.get(`${row.experimentId}\u0000${row.userHash}`);
        if (exposure === undefined) {
          unmatched.push(row);
          continue;
        }
        const from = exposure.exposedMs;
        const until = from + row.windowMs;
        const sums: EventSums = { events: 0, withValue: 0, valueSum: 0 };
        for (let index = 0; index < row.times.length; index++) {
          const atMs = row.times[index] ?? -1;
          if (atMs < from || atMs > until) continue;
          sums.events += 1;
          const value = row.values[index] ?? null;
          if (value === null) continue;
          sums.withValue += 1;
          sums.valueSum += value;
        }
        if (sums.events > 0) add(row, exposure.variation, sums);
      }
      // Counted on arrival against the stored first exposure, which the process had read back.
      for (const row of counted) {
        const exposure = exposed.get(`${row.experimentId}\u0000${row.userHash}`);
        if (exposure !== undefined) add(row, exposure.variation, row);
      }
      const rows = [...additions.values()];
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT)
        // Additions commute: every node adds its users' events to the same rows.
        await trx
          .insertInto('experiment_metric_users')
          .values(rows.slice(i, i + ROWS_PER_STATEMENT))
          .onConflict((conflict) =>
            conflict.columns(['experiment_id', 'metric_id', 'user_hash']).doUpdateSet((eb) => ({
              events: eb('experiment_metric_users.events', '+', eb.ref('excluded.events')),
              with_value: eb(
                'experiment_metric_users.with_value',
                '+',
                eb.ref('excluded.with_value'),
              ),
              value_sum: eb('experiment_metric_users.value_sum', '+', eb.ref('excluded.value_sum')),
            })),
          )
          .execute();
      stored = [...exposed.values()];
    });
    return { unmatched, stored };
  }
}

/**
 * The stored first exposures of the users the rows name, by `experiment\0userHash`: each user
 * read once however many rows name them.
 */
async function storedExposures(
  trx: Transaction<Schema>,
  rows: readonly { experimentId: string; userHash: string }[],
): Promise<Map<string, StoredExposure & { variation: string }>> {
  const users = new Map<string, Set<string>>();
  for (const row of rows) {
    const hashes = users.get(row.experimentId) ?? new Set<string>();
    hashes.add(row.userHash);
    users.set(row.experimentId, hashes);
  }
  const exposed = new Map<string, StoredExposure & { variation: string }>();
  for (const [experimentId, hashes] of users) {
    const all = [...hashes];
    for (let i = 0; i < all.length; i += ROWS_PER_STATEMENT) {
      const found = await trx
        .selectFrom('experiment_exposures')
        .select(['user_hash', 'variation', 'exposed_ms'])
        .where('experiment_id', '=', experimentId)
        .where('user_hash', 'in', all.slice(i, i + ROWS_PER_STATEMENT))
        .execute();
      for (const row of found)
        exposed.set(`${experimentId}\u0000${row.user_hash}`, {
          experimentId,
          userHash: row.user_hash,
          variation: row.variation,
          exposedMs: row.exposed_ms,
        });
    }
  }
  return exposed;
}
