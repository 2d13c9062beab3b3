import type { Kysely, Selectable, Transaction } from 'kysely';
import type { MetricsTable, Schema } from '../../db/schema.js';

export type MetricRow = Selectable<MetricsTable>;

/** A metric row in the API's names (contract `experiments.md`, section 1). */
export function metricItem(row: MetricRow) {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    description: row.description,
    eventKey: row.event_key,
    kind: row.kind,
    valueProperty: row.value_property,
    direction: row.direction,
    windowHours: row.window_hours,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The project's metrics of the given keys, by key; a key without a metric is absent. */
export async function metricsByKey(
  db: Kysely<Schema> | Transaction<Schema>,
  projectId: string,
  keys: readonly string[],
): Promise<Map<string, MetricRow>> {
  if (keys.length === 0) return new Map();
  const rows = await db
    .selectFrom('metrics')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('key', 'in', [...keys])
    .execute();
  return new Map(rows.map((row) => [row.key, row]));
}

/**
 * What uses the metric and keeps it from being deleted: experiments not yet stopped and release
 * plans whose guard names it.
 */
export async function metricUsers(
  db: Kysely<Schema> | Transaction<Schema>,
  metric: MetricRow,
): Promise<string[]> {
  const experiments = await db
    .selectFrom('experiments')
    .innerJoin('flags', 'flags.id', 'experiments.flag_id')
    .select(['experiments.key', 'experiments.metrics', 'flags.key as flagKey'])
    .where('experiments.project_id', '=', metric.project_id)
    .where('experiments.status', '!=', 'stopped')
    .execute();
  const plans = await db
    .selectFrom('release_plans')
    .innerJoin('flags', 'flags.id', 'release_plans.flag_id')
    .select(['release_plans.guard', 'flags.key as flagKey'])
    .where('release_plans.project_id', '=', metric.project_id)
    .where('release_plans.state', 'in', ['active', 'paused'])
    .where('release_plans.guard', 'is not', null)
    .execute();
  return [
    ...experiments
      .filter((row) =>
        (JSON.parse(row.metrics) as { metricId: string }[]).some((m) => m.metricId === metric.id),
      )
      .map((row) => `experiment "${row.key}" of flag "${row.flagKey}"`),
    ...plans
      .filter(
        (row) => (JSON.parse(row.guard ?? '{}') as { metricKey?: string }).metricKey === metric.key,
      )
      .map((row) => `the release plan of flag "${row.flagKey}"`),
  ];
}

/** The project's metrics by id. */
export async function projectMetrics(
  db: Kysely<Schema> | Transaction<Schema>,
  projectId: string,
): Promise<Map<string, MetricRow>> {
  const rows = await db
    .selectFrom('metrics')
    .selectAll()
    .where('project_id', '=', projectId)
    .execute();
  return new Map(rows.map((row) => [row.id, row]));
}
