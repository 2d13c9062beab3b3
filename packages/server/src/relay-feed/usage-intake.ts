import type { UsageAggregator } from '../usage/aggregator.js';
import type { RunningExperiment } from '../usage/experiment-exposures.js';
import type { ActiveGuardedPlan } from '../usage/exposures.js';
import type { RelayUsageBody } from './protocol.js';

/**
 * Adds a usage body a relay sent (`POST /v1/relay/usage`) into `usage`, as direct SDK traffic
 * would have counted: on a full node, whose flush writes it to the database, and on a relay in a
 * chain, whose flush sends it on upstream. Counts of hours that have not begun (a relay's clock
 * ahead) are dropped, and "last" times are brought within their hour and not after `nowMs`; a
 * null variation served none and is not counted (as {@link UsageAggregator} does). Exposures of
 * the guarded release plans in `plans`, and exposures and events of the experiments in
 * `experiments`, go to this node's exposure recorder; others are dropped.
 * @param nowMs this node's clock (epoch ms)
 * @param plans the plans the relay may record exposures of: active, in its key's scope
 * @param experiments the experiments the relay may record: running, in its key's scope
 * @param keyKnown whether a key use's SDK key id is one to record (a full node drops the uses of
 *   keys it no longer has, as its flush would)
 */
export function addRelayUsage(
  usage: UsageAggregator,
  body: RelayUsageBody,
  nowMs: number,
  keyKnown: (keyId: string) => boolean,
  plans: readonly ActiveGuardedPlan[],
  experiments: readonly RunningExperiment[],
): void {
  for (const row of body.evaluations) {
    if (row.variation === null || row.hourMs > nowMs) continue;
    const lastMs = Math.min(Math.max(row.lastAtMs ?? row.hourMs, row.hourMs), nowMs);
    usage.addEvaluations(
      row.environmentId,
      row.flagKey,
      row.variation,
      row.hourMs,
      row.count,
      lastMs,
    );
  }
  for (const row of body.customEvents)
    if (row.hourMs <= nowMs)
      usage.addCustomEvents(row.environmentId, row.eventKey, row.hourMs, row.count);
  for (const use of body.keyUses)
    if (keyKnown(use.keyId)) usage.recordKeyUse(use.keyId, Math.min(use.atMs, nowMs));
  if (body.exposures !== undefined && plans.length > 0) {
    const planIds = new Set(plans.map((plan) => plan.planId));
    usage.exposures?.addRelayed(
      body.exposures
        .filter((row) => planIds.has(row.planId))
        .map((row) => ({
          ...row,
          exposedMs: row.exposedMs === null ? null : Math.min(row.exposedMs, nowMs),
          metricMs: row.metricMs === null ? null : Math.min(row.metricMs, nowMs),
        })),
    );
  }
  if (experiments.length > 0) {
    const ids = new Set(experiments.map((experiment) => experiment.experimentId));
    usage.exposures?.experiments.addRelayed(
      (body.experimentExposures ?? [])
        .filter((row) => ids.has(row.experimentId))
        .map((row) => ({ ...row, exposedMs: Math.min(row.exposedMs, nowMs) })),
      (body.experimentEvents ?? [])
        // Times and numbers go in step: a row whose arrays differ in length is dropped.
        .filter((row) => ids.has(row.experimentId) && row.times.length === row.values.length)
        .map((row) => ({ ...row, times: row.times.map((atMs) => Math.min(atMs, nowMs)) })),
    );
  }
}
