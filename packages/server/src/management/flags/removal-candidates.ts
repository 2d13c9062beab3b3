import type { Selectable } from 'kysely';
import type { FlagEnvironmentsTable } from '../../db/schema.js';
import type { Services } from '../../services.js';
import { lastEvaluatedInProject } from '../../usage/queries.js';

/** Spec: Removal candidate. */
export interface RemovalCandidate {
  key: string;
  reason: string;
  treatment: boolean;
  status: 'Stale' | 'Dead';
}

const DAY_MS = 86_400_000;

/** What one environment serves when the flag's configuration leaves no choice. */
type Served = { kind: 'on'; variationKey: string } | { kind: 'off' } | { kind: 'mixed' };

/**
 * Reads what an environment serves everyone: `off` when disabled or when it serves the off
 * variation to all; `on` with the variation when enabled, with no rules and no prerequisites,
 * serving one variation (a single variation, or a rollout with all weight on one); else `mixed`.
 */
function servedToEveryone(
  config: Selectable<FlagEnvironmentsTable>,
  hasRules: boolean,
  variationKeys: ReadonlyMap<string, string>,
): Served {
  if (config.is_enabled === 0) return { kind: 'off' };
  const prerequisites = JSON.parse(config.prerequisites) as unknown[];
  if (hasRules || prerequisites.length > 0) return { kind: 'mixed' };
  let variationId: string | undefined = config.default_variation_id;
  if (config.strategy === 'PercentageRollout') {
    const weighted = (
      JSON.parse(config.rollout) as { variationId: string; weight: number }[]
    ).filter((entry) => entry.weight > 0);
    variationId = weighted.length === 1 ? weighted[0]?.variationId : undefined;
  }
  if (!variationId) return { kind: 'mixed' };
  if (variationId === config.off_variation_id) return { kind: 'off' };
  return { kind: 'on', variationKey: variationKeys.get(variationId) ?? '' };
}

/**
 * Removal candidates of a project (spec: endpoint rule 9; the rules are in docs/lifecycle.md and
 * design record 008), sorted by key. With `staleness` `dead` only `Dead` flags are returned.
 *
 * - stuck rolled out: every environment with traffic in the stale period serves the same non-off
 *   variation to everyone → treatment true;
 * - stuck rolled back: every environment serves the off variation to everyone, and the flag
 *   still has traffic → treatment false;
 * - `Stale` when the deciding environments' configuration is unchanged for the stale period,
 *   `Dead` for the dead period; younger flags are not candidates.
 * Omitted: archived and permanent flags, flags never evaluated (created but unused), flags
 * without traffic in the stale period (zero traffic), and flags that differ across environments.
 */
export async function findRemovalCandidates(
  services: Services,
  projectId: string,
  staleness: 'dead' | 'stale',
): Promise<RemovalCandidate[]> {
  const nowMs = services.clock.now().getTime();
  const { stalePeriodMs, deadPeriodMs } = services.config.lifecycle;
  const db = services.db;
  const [flags, environments, configs, ruleRows, variations] = await Promise.all([
    db
      .selectFrom('flags')
      .select(['id', 'key', 'created_at'])
      .where('project_id', '=', projectId)
      .where('is_archived', '=', 0)
      .where('is_permanent', '=', 0)
      .orderBy('key')
      .execute(),
    db
      .selectFrom('environments')
      .select(['id', 'key', 'sort_order'])
      .where('project_id', '=', projectId)
      .orderBy('sort_order')
      .orderBy('key')
      .execute(),
    db
      .selectFrom('flag_environments')
      .innerJoin('flags', 'flags.id', 'flag_environments.flag_id')
      .selectAll('flag_environments')
      .where('flags.project_id', '=', projectId)
      .execute(),
    db
      .selectFrom('rules')
      .innerJoin('flags', 'flags.id', 'rules.flag_id')
      .select(['rules.flag_id', 'rules.environment_id'])
      .where('flags.project_id', '=', projectId)
      .execute(),
    db
      .selectFrom('variations')
      .innerJoin('flags', 'flags.id', 'variations.flag_id')
      .select(['variations.id', 'variations.key'])
      .where('flags.project_id', '=', projectId)
      .execute(),
  ]);
  const environmentKey = new Map(environments.map((env) => [env.id, env.key]));
  const environmentOrder = environments.map((env) => env.id);
  const variationKeys = new Map(variations.map((v) => [v.id, v.key]));
  const withRules = new Set(ruleRows.map((rule) => `${rule.flag_id}\n${rule.environment_id}`));
  const configsByFlag = new Map<string, Selectable<FlagEnvironmentsTable>[]>();
  for (const config of configs) {
    const list = configsByFlag.get(config.flag_id) ?? [];
    list.push(config);
    configsByFlag.set(config.flag_id, list);
  }
  const lastEvaluated = await lastEvaluatedInProject(services, projectId, flags, environmentOrder);

  const candidates: RemovalCandidate[] = [];
  for (const flag of flags) {
    const evaluated = lastEvaluated.get(flag.id);
    if (!evaluated || evaluated.size === 0) continue; // created but never used
    const flagConfigs = (configsByFlag.get(flag.id) ?? []).sort(
      (a, b) =>
        environmentOrder.indexOf(a.environment_id) - environmentOrder.indexOf(b.environment_id),
    );
    const withTraffic = flagConfigs.filter(
      (config) => (evaluated.get(config.environment_id) ?? -Infinity) >= nowMs - stalePeriodMs,
    );
    if (withTraffic.length === 0) continue; // zero traffic in the stale period
    const served = (config: Selectable<FlagEnvironmentsTable>) =>
      servedToEveryone(
        config,
        withRules.has(`${flag.id}\n${config.environment_id}`),
        variationKeys,
      );

    let deciding: Selectable<FlagEnvironmentsTable>[];
    let treatment: boolean;
    let reason: string;
    const trafficKeys = withTraffic.map((config) => environmentKey.get(config.environment_id));
    if (flagConfigs.every((config) => served(config).kind === 'off')) {
      deciding = flagConfigs;
      treatment = false;
      reason = `Stuck rolled back: serves the off variation everywhere, still evaluated in ${trafficKeys.join(', ')}`;
    } else {
      const servedWithTraffic = withTraffic.map(served);
      const [first] = servedWithTraffic;
      if (
        !first ||
        first.kind !== 'on' ||
        !servedWithTraffic.every(
          (entry) => entry.kind === 'on' && entry.variationKey === first.variationKey,
        )
      ) {
        continue; // divergent across environments, or not decided by configuration
      }
      deciding = withTraffic;
      treatment = true;
      reason = `Stuck rolled out: serves "${first.variationKey}" to everyone in ${trafficKeys.join(', ')}`;
    }
    const lastChangeMs = Math.max(
      Date.parse(flag.created_at),
      ...deciding.map((config) => Date.parse(config.updated_at)),
    );
    const unchangedMs = nowMs - lastChangeMs;
    const status =
      unchangedMs >= deadPeriodMs ? 'Dead' : unchangedMs >= stalePeriodMs ? 'Stale' : null;
    if (!status || (staleness === 'dead' && status !== 'Dead')) continue;
    candidates.push({
      key: flag.key,
      reason: `${reason}; unchanged for ${Math.floor(unchangedMs / DAY_MS)} days`,
      treatment,
      status,
    });
  }
  return candidates;
}
