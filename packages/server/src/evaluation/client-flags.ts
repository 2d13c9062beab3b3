import { evaluateAll, type EvaluationContext } from '@vexil/engine';
import type { UsageAggregator } from '../usage/aggregator.js';
import type { Snapshot } from './snapshots.js';

/** One flag in a client evaluation (spec: Client evaluation result). */
export interface ClientFlagResult {
  value: unknown;
  variation: string | null;
  reason: string | null;
  prerequisiteKey: string | null;
}

/**
 * Evaluates every client-visible flag of the snapshot for a context: the body of
 * `POST /v1/client/evaluate`, `identify` and the client stream's `flags` events. Served flags are
 * counted in `usage` at `nowMs`, unless `usage` is null (the client reports its own reads:
 * spec Evaluation API rule 1).
 */
export function evaluateClientFlags(
  snapshot: Snapshot,
  context: EvaluationContext,
  usage: { aggregator: UsageAggregator; nowMs: number } | null,
): { flags: Record<string, ClientFlagResult> } {
  const results = evaluateAll(snapshot.compiled, context, snapshot.clientSideKeyList);
  const flags: Record<string, ClientFlagResult> = {};
  for (const key in results) {
    const result = results[key]!;
    flags[key] = {
      value: result.value,
      variation: result.variation,
      reason: result.reason,
      prerequisiteKey: result.prerequisiteKey ?? null,
    };
    if (usage && result.variation !== null) {
      usage.aggregator.recordEvaluation(snapshot.environmentId, key, result.variation, usage.nowMs);
    }
  }
  return { flags };
}
