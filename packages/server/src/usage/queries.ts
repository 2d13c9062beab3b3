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
