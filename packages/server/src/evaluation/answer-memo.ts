import {
  attributesRead,
  readsKey,
  type CompiledEnvironment,
  type EvaluationContext,
} from '@vexil/engine';
import type { ServedTally } from '../usage/aggregator.js';

/** Bytes of answers one memo holds at most. */
const MEMO_BYTES = 4 * 1024 * 1024;
/** Heap a tally takes per flag it counts: two array slots. */
const TALLY_BYTES_PER_FLAG = 16;

/** Longer keys (large attribute values) are not remembered: the key would cost what it saves. */
const MAX_KEY_LENGTH = 1024;
/** How many lookups a memo is judged over, and the hits it needs among them to stay on. */
const JUDGED_LOOKUPS = 1024;
const MIN_HITS = JUDGED_LOOKUPS / 4;

/** What a remembered answer holds: its bytes, and the tally its servings are counted by. */
export function answerSize(body: Buffer, tally: ServedTally): number {
  return body.length + tally.keys.length * TALLY_BYTES_PER_FLAG;
}

/**
 * Bulk answers of one snapshot's flag selection remembered by what they depend on (design record
 * 065): the values of the attributes those flags read ({@link attributesRead}). Contexts that
 * agree on them get the same answer byte for byte, so it is evaluated and written once; users who
 * differ only in attributes no rule reads (a user id, when no rollout buckets by it) share it.
 *
 * Where the answers depend on an attribute that differs for nearly every request (a rollout's
 * user id, an email in a condition), the memo would only cost: it turns itself off when fewer
 * than a quarter of {@link JUDGED_LOOKUPS} lookups hit. It holds at most {@link MEMO_BYTES} of
 * answers (once full, it keeps them), and lives as long as its snapshot (one configuration
 * version).
 */
export class AnswerMemo<Answer extends { size: number }> {
  private readonly attributes: readonly string[];
  private readonly answers = new Map<string, Answer>();
  private bytes = 0;
  private lookups = 0;
  private hits = 0;
  private on = true;

  constructor(env: CompiledEnvironment, positions: readonly number[]) {
    this.attributes = attributesRead(env, positions);
  }

  /** The key `context`'s answer is remembered under, or undefined when the memo is off or the key too long. */
  key(context: EvaluationContext): string | undefined {
    if (!this.on) return undefined;
    const key = readsKey(context, this.attributes);
    return key.length > MAX_KEY_LENGTH ? undefined : key;
  }

  /** The remembered answer for `key`; counts the lookup towards whether the memo stays on. */
  get(key: string): Answer | undefined {
    const answer = this.answers.get(key);
    this.lookups += 1;
    if (answer !== undefined) this.hits += 1;
    if (this.lookups === JUDGED_LOOKUPS) {
      this.on = this.hits >= MIN_HITS;
      if (!this.on) this.answers.clear();
      this.lookups = 0;
      this.hits = 0;
    }
    return answer;
  }

  /** Remembers `answer` under `key`, unless the memo is off or full. */
  set(key: string, answer: Answer): void {
    // A full memo keeps what it holds: evicting to make room would, for contexts that come round
    // in turn (a cycle longer than the memo holds), miss every time.
    if (!this.on || this.bytes + answer.size > MEMO_BYTES) return;
    this.answers.set(key, answer);
    this.bytes += answer.size;
  }
}

/**
 * The memos of each flag selection of a snapshot: a selection (the positions array a snapshot
 * holds for client keys, or for server keys) names its memos for as long as it lives, one per
 * `variant` (what else an answer depends on than the context: OFREP's event streams).
 */
export class AnswerMemos<Answer extends { size: number }> {
  private readonly memos = new WeakMap<readonly number[], Map<string, AnswerMemo<Answer>>>();

  of(env: CompiledEnvironment, positions: readonly number[], variant = ''): AnswerMemo<Answer> {
    let variants = this.memos.get(positions);
    if (variants === undefined)
      this.memos.set(positions, (variants = new Map<string, AnswerMemo<Answer>>()));
    let memo = variants.get(variant);
    if (memo === undefined) variants.set(variant, (memo = new AnswerMemo(env, positions)));
    return memo;
  }
}
