import type { IncomingHttpHeaders } from 'node:http';
import { evaluateSelected, type EvaluationContext, type EvaluationResult } from '@vexil/engine';
import { evaluationEvents } from '../telemetry/evaluation-events.js';
import { ServedTally, type UsageAggregator } from '../usage/aggregator.js';
import { answerSize, AnswerMemos } from './answer-memo.js';
import { joinFragments } from './fragments.js';
import type { ServedEntry, Snapshot } from './snapshots.js';

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

/**
 * Records client evaluations as served: counted in `usage`, unless it is null (the client
 * reports its own reads: spec Evaluation API rule 1), and as sampled evaluation events that
 * continue the trace `headers` carry.
 */
export function recordServed(
  snapshot: Snapshot,
  context: EvaluationContext,
  results: EvaluationResult[],
  usage: ClientUsage | null,
  headers?: IncomingHttpHeaders,
): void {
  if (evaluationEvents !== null) evaluationEvents.record(headers, snapshot, context, () => results);
  usage?.aggregator.recordEvaluations(snapshot.environmentId, results, usage.nowMs, context);
}

/**
 * The client evaluation as an object, the data of client streams' `flags` events, and the
 * results it holds: they count as served once sent ({@link recordServed}), and a stream sends
 * nothing when the answer is the one it sent last.
 */
export function evaluateClientFlags(
  snapshot: Snapshot,
  context: EvaluationContext,
): { body: { flags: Record<string, ClientFlagResult> }; results: EvaluationResult[] } {
  const results = evaluateSelected(snapshot.compiled, context, snapshot.clientFlags);
  const flags: Record<string, ClientFlagResult> = {};
  for (const result of results) {
    // defineProperty: a flag keyed "__proto__" is a plain key, not the object's prototype.
    Object.defineProperty(flags, result.key, {
      value: clientResult(result),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return { body: { flags }, results };
}

/**
 * The serialized entry of the `i`-th client-visible flag's result, cached in the snapshot:
 * `,"key":{…}`, with the comma that separates it from the entry before.
 */
function servedEntry(snapshot: Snapshot, i: number, result: EvaluationResult): Buffer {
  const served = snapshot.clientEntries[i] as ServedEntry[];
  // Compared by identity in the common case: variation keys are the compiled configuration's
  // strings and reasons are constants.
  for (const entry of served) {
    if (
      entry.variation === result.variation &&
      entry.reason === result.reason &&
      entry.prerequisiteKey === result.prerequisiteKey
    )
      return entry.bytes;
  }
  const bytes = Buffer.from(
    `,${JSON.stringify(result.key)}:${JSON.stringify(clientResult(result))}`,
  );
  served.push({
    variation: result.variation,
    reason: result.reason,
    prerequisiteKey: result.prerequisiteKey,
    bytes,
  });
  return bytes;
}

const BODY_START = Buffer.from('{"flags":{');
const BODY_END = Buffer.from('}}');

/** A remembered client evaluation: its body and the tally of its servings (design record 065). */
interface RememberedAnswer {
  body: Buffer;
  tally: ServedTally;
  size: number;
}

const rememberedAnswers = new AnswerMemos<RememberedAnswer>();

/**
 * {@link evaluateClientFlags} as UTF-8 JSON: the body of `POST /v1/client/evaluate` and
 * `identify`, counted as served (see {@link recordServed}). Remembered by the values of the
 * attributes the flags read (design record 065); else written from each flag's cached entry
 * (design record 062): serializing the flags anew cost more than evaluating them. The request's
 * `headers` carry the trace its evaluation events continue.
 */
export function clientFlagsBody(
  snapshot: Snapshot,
  context: EvaluationContext,
  usage: ClientUsage | null,
  headers?: IncomingHttpHeaders,
): Buffer {
  const memo = rememberedAnswers.of(snapshot.compiled, snapshot.clientFlags);
  const key = memo.key(context);
  const remembered = key === undefined ? undefined : memo.get(key);
  if (remembered !== undefined) {
    // The results, for the rare request that needs them (a sampled trace, a guard or experiment).
    const results = () => evaluateSelected(snapshot.compiled, context, snapshot.clientFlags);
    if (evaluationEvents !== null) evaluationEvents.record(headers, snapshot, context, results);
    usage?.aggregator.recordTally(remembered.tally, usage.nowMs, context, results);
    return remembered.body;
  }
  const results = evaluateSelected(snapshot.compiled, context, snapshot.clientFlags);
  recordServed(snapshot, context, results, usage, headers);
  const entries = results.map((result, i) => servedEntry(snapshot, i, result));
  const body = joinFragments(BODY_START, entries, BODY_END);
  if (key !== undefined) {
    const tally = new ServedTally(snapshot.environmentId, results);
    memo.set(key, { body, tally, size: answerSize(body, tally) });
  }
  return body;
}
