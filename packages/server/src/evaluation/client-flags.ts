import { evaluateAll, type EvaluationContext, type EvaluationResult } from '@vexil/engine';
import type { UsageAggregator } from '../usage/aggregator.js';
import type { Snapshot } from './snapshots.js';

/** One flag in a client evaluation (spec: Client evaluation result). */
export interface ClientFlagResult {
  value: unknown;
  variation: string | null;
  reason: string | null;
  prerequisiteKey: string | null;
}

/** Counting served flags: where, and at what time (Unix milliseconds). */
export interface ClientUsage {
  aggregator: UsageAggregator;
  nowMs: number;
}

function clientResult(result: EvaluationResult): ClientFlagResult {
  return {
    value: result.value,
    variation: result.variation,
    reason: result.reason,
    prerequisiteKey: result.prerequisiteKey ?? null,
  };
}

function recordServed(
  snapshot: Snapshot,
  key: string,
  variation: string | null,
  usage: ClientUsage | null,
): void {
  if (usage && variation !== null) {
    usage.aggregator.recordEvaluation(snapshot.environmentId, key, variation, usage.nowMs);
  }
}

/**
 * Evaluates every client-visible flag of the snapshot for a context: the `flags` events of client
 * streams. Served flags are counted in `usage` at `nowMs`, unless `usage` is null (the client
 * reports its own reads: spec Evaluation API rule 1).
 */
export function evaluateClientFlags(
  snapshot: Snapshot,
  context: EvaluationContext,
  usage: ClientUsage | null,
): { flags: Record<string, ClientFlagResult> } {
  const results = evaluateAll(snapshot.compiled, context, snapshot.clientSideKeyList);
  const flags: Record<string, ClientFlagResult> = {};
  for (const key in results) {
    const result = results[key]!;
    flags[key] = clientResult(result);
    recordServed(snapshot, key, result.variation, usage);
  }
  return { flags };
}

/** The serialized `"key":{...}` entry of a result, from the snapshot's cache when it has it. */
function serializedEntry(snapshot: Snapshot, result: EvaluationResult): string {
  // Looked up by the result's own strings (the flag and variation keys are the compiled
  // configuration's, the reason a constant), so no lookup key has to be built per flag.
  let byVariation = snapshot.clientFlagEntries.get(result.key);
  if (byVariation === undefined) {
    byVariation = new Map();
    snapshot.clientFlagEntries.set(result.key, byVariation);
  }
  let byReason = byVariation.get(result.variation);
  if (byReason === undefined) {
    byReason = new Map();
    byVariation.set(result.variation, byReason);
  }
  // A prerequisite's key only comes with PREREQUISITE_FAILED and some ERROR results.
  const prerequisite = result.prerequisiteKey;
  const outcome = prerequisite === undefined ? result.reason : `${result.reason}:${prerequisite}`;
  let entry = byReason.get(outcome);
  if (entry === undefined) {
    entry = `${JSON.stringify(result.key)}:${JSON.stringify(clientResult(result))}`;
    byReason.set(outcome, entry);
  }
  return entry;
}

/**
 * {@link evaluateClientFlags} as its JSON text: the body of `POST /v1/client/evaluate` and
 * `identify`. A flag's entry depends only on its key, variation, reason and prerequisite (the
 * value is the variation's), so each distinct entry is serialized once per snapshot and reused:
 * serializing 50 flags anew cost more than evaluating them.
 */
export function clientFlagsJson(
  snapshot: Snapshot,
  context: EvaluationContext,
  usage: ClientUsage | null,
): string {
  const results = evaluateAll(snapshot.compiled, context, snapshot.clientSideKeyList);
  let body = '{"flags":{';
  let separator = '';
  for (const key in results) {
    const result = results[key]!;
    body += separator + serializedEntry(snapshot, result);
    separator = ',';
    recordServed(snapshot, key, result.variation, usage);
  }
  return `${body}}}`;
}
