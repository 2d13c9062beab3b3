import { sql } from 'kysely';
import type { Services } from '../services.js';
import { HOUR_MS } from './aggregator.js';

/** A flag as usage reads need it. */
export interface FlagRef {
  id: string;
  key: string;
}

/** One flag's usage in one environment over a range. */
export interface EnvironmentUsage {
  /** Evaluations by variation key, summed over the hourly buckets of the range. */
  counts: Map<string, number>;
  /** Last evaluation ever seen (epoch ms), or null when never evaluated. */
  lastEvaluatedMs: number | null;
}

function later(a: number | null | undefined, b: number): number {
  return a === null || a === undefined || b > a ? b : a;
}

/**
 * The last evaluation (epoch ms) of one flag in each environment that ever evaluated it,
 * flushed and this node's unflushed counts merged.
 */
export async function lastEvaluatedByEnvironment(
  services: Services,
  flag: FlagRef,
  environmentIds: readonly string[],
): Promise<Map<string, number>> {
  const rows = await services.db
    .selectFrom('flag_usage')
    .select((eb) => ['environment_id', eb.fn.max('last_evaluated_at').as('last')])
    .where('flag_id', '=', flag.id)
    .groupBy('environment_id')
    .execute();
  const result = new Map(rows.map((row) => [row.environment_id, Date.parse(row.last)]));
  for (const environmentId of environmentIds) {
    for (const bucket of services.usage.pendingUsage(environmentId, flag.key)) {
      result.set(environmentId, later(result.get(environmentId), bucket.lastEvaluatedMs));
    }
  }
  return result;
}

/**
 * One flag's usage per environment: evaluations by variation in the hourly buckets that start in
 * `[startOfHour(fromMs), toMs]`, and the last evaluation ever, including this node's unflushed
 * counts (design record 008). Environments without usage are absent from the map.
 */
export async function readFlagUsage(
  services: Services,
  flag: FlagRef,
  environmentIds: readonly string[],
  range: { fromMs: number; toMs: number },
): Promise<Map<string, EnvironmentUsage>> {
  const fromHourMs = range.fromMs - (range.fromMs % HOUR_MS);
  const rows = await services.db
    .selectFrom('flag_usage')
    .select((eb) => ['environment_id', 'variation_key', eb.fn.sum('count').as('count')])
    .where('flag_id', '=', flag.id)
    .where('hour', '>=', new Date(fromHourMs).toISOString())
    .where('hour', '<=', new Date(range.toMs).toISOString())
    .groupBy(['environment_id', 'variation_key'])
    .execute();
  const last = await lastEvaluatedByEnvironment(services, flag, environmentIds);
  const result = new Map<string, EnvironmentUsage>();
  const entry = (environmentId: string) => {
    let usage = result.get(environmentId);
    if (!usage) {
      usage = { counts: new Map(), lastEvaluatedMs: last.get(environmentId) ?? null };
      result.set(environmentId, usage);
    }
    return usage;
  };
  const add = (environmentId: string, variationKey: string, count: number) => {
    const { counts } = entry(environmentId);
    counts.set(variationKey, (counts.get(variationKey) ?? 0) + count);
  };
  for (const row of rows) add(row.environment_id, row.variation_key, Number(row.count));
  for (const environmentId of environmentIds) {
    for (const bucket of services.usage.pendingUsage(environmentId, flag.key)) {
      if (bucket.hourMs >= fromHourMs && bucket.hourMs <= range.toMs)
        add(environmentId, bucket.variationKey, bucket.count);
    }
  }
  for (const environmentId of last.keys()) entry(environmentId);
  return result;
}

/**
 * The last evaluation (epoch ms) of every flag of a project, per environment: flag id →
 * environment id → time. Flushed and unflushed counts merged; never-evaluated flags are absent.
 */
export async function lastEvaluatedInProject(
  services: Services,
  projectId: string,
  flags: readonly FlagRef[],
  environmentIds: readonly string[],
): Promise<Map<string, Map<string, number>>> {
  const rows = await services.db
    .selectFrom('flag_usage')
    .innerJoin('flags', 'flags.id', 'flag_usage.flag_id')
    .select((eb) => [
      'flag_usage.flag_id',
      'flag_usage.environment_id',
      eb.fn.max('flag_usage.last_evaluated_at').as('last'),
    ])
    .where('flags.project_id', '=', projectId)
    .groupBy(['flag_usage.flag_id', 'flag_usage.environment_id'])
    .execute();
  const result = new Map<string, Map<string, number>>();
  const set = (flagId: string, environmentId: string, ms: number) => {
    let byEnvironment = result.get(flagId);
    if (!byEnvironment) {
      byEnvironment = new Map();
      result.set(flagId, byEnvironment);
    }
    byEnvironment.set(environmentId, later(byEnvironment.get(environmentId), ms));
  };
  for (const row of rows) set(row.flag_id, row.environment_id, Date.parse(row.last));
  const idByKey = new Map(flags.map((flag) => [flag.key, flag.id]));
  for (const environmentId of environmentIds) {
    for (const [flagKey, ms] of services.usage.pendingLastEvaluated(environmentId)) {
      const flagId = idByKey.get(flagKey);
      if (flagId) set(flagId, environmentId, ms);
    }
  }
  return result;
}

/** The width of a usage series bucket. */
export type UsageInterval = 'hour' | 'day';

const INTERVAL_MS: Record<UsageInterval, number> = { hour: HOUR_MS, day: 24 * HOUR_MS };

/** A usage series: counts per flag, environment and variation, one per bucket. */
export interface UsageSeries {
  /** Start of each bucket (epoch ms), oldest first; UTC hours or UTC days. */
  buckets: number[];
  /** flag id → environment id → variation key → count per bucket. Only non-zero series. */
  counts: Map<string, Map<string, Map<string, number[]>>>;
}

/** Start of the UTC hour or day holding `ms`. */
export function bucketStart(ms: number, interval: UsageInterval): number {
  return ms - (((ms % INTERVAL_MS[interval]) + INTERVAL_MS[interval]) % INTERVAL_MS[interval]);
}

/**
 * Evaluations of the given flags of one project per hour or per UTC day, by environment and
 * variation, for the buckets from the one holding `fromMs` to the one holding `toMs`: one query
 * grouped by bucket in the database, plus this node's unflushed counts (design record 038).
 */
export async function readUsageSeries(
  services: Services,
  flags: readonly FlagRef[],
  environmentIds: readonly string[],
  range: { fromMs: number; toMs: number; interval: UsageInterval },
): Promise<UsageSeries> {
  const step = INTERVAL_MS[range.interval];
  const first = bucketStart(range.fromMs, range.interval);
  const buckets: number[] = [];
  for (let at = first; at <= range.toMs; at += step) buckets.push(at);
  const counts: UsageSeries['counts'] = new Map();
  if (flags.length === 0) return { buckets, counts };
  const add = (flagId: string, environmentId: string, variation: string, ms: number, n: number) => {
    const index = Math.floor((bucketStart(ms, range.interval) - first) / step);
    if (index < 0 || index >= buckets.length || n === 0) return;
    let byEnvironment = counts.get(flagId);
    if (!byEnvironment)
      counts.set(flagId, (byEnvironment = new Map<string, Map<string, number[]>>()));
    let byVariation = byEnvironment.get(environmentId);
    if (!byVariation) byEnvironment.set(environmentId, (byVariation = new Map<string, number[]>()));
    let series = byVariation.get(variation);
    if (!series) byVariation.set(variation, (series = buckets.map(() => 0)));
    series[index] = (series[index] ?? 0) + n;
  };
  // A day is the date part of the stored hour: text on SQLite, timestamptz (UTC) on PostgreSQL.
  const bucket =
    range.interval === 'hour'
      ? sql<string>`hour`
      : services.dialect === 'postgres'
        ? sql<string>`to_char(hour at time zone 'UTC', 'YYYY-MM-DD')`
        : sql<string>`substr(hour, 1, 10)`;
  const rows = await services.db
    .selectFrom('flag_usage')
    .select((eb) => [
      'flag_id',
      'environment_id',
      'variation_key',
      bucket.as('bucket'),
      eb.fn.sum('count').as('count'),
    ])
    .where(
      'flag_id',
      'in',
      flags.map((flag) => flag.id),
    )
    .where('hour', '>=', new Date(first).toISOString())
    .where('hour', '<=', new Date(range.toMs).toISOString())
    .groupBy(['flag_id', 'environment_id', 'variation_key', bucket])
    .execute();
  for (const row of rows)
    add(
      row.flag_id,
      row.environment_id,
      row.variation_key,
      Date.parse(row.bucket),
      Number(row.count),
    );
  for (const environmentId of environmentIds) {
    for (const flag of flags) {
      for (const pending of services.usage.pendingUsage(environmentId, flag.key))
        if (pending.hourMs <= range.toMs)
          add(flag.id, environmentId, pending.variationKey, pending.hourMs, pending.count);
    }
  }
  return { buckets, counts };
}
