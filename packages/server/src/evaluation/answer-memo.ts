import {
  attributesRead,
  readsKey,
  type CompiledEnvironment,
  type EvaluationContext,
} from '@vexil/engine';

/** Bytes of answers one memo holds before it starts again empty. */
const MEMO_BYTES = 4 * 1024 * 1024;
/** Heap an engine result and its array slot take (measured at 10,000 flags: 72 bytes). */
const RESULT_BYTES = 72;

/** What a remembered answer holds: its bytes, and the results its servings are counted by. */
export function answerSize(body: Buffer, results: readonly unknown[]): number {
  return body.length + results.length * RESULT_BYTES;
}
/** Longer keys (large attribute values) are not remembered: the key would cost what it saves. */
const MAX_KEY_LENGTH = 1024;
/** How many lookups a memo is judged over, and the hits it needs among them to stay on. */
const JUDGED_LOOKUPS = 1024;
const MIN_HITS = JUDGED_LOOKUPS / 4;

/**
 * Bulk answers of one snapshot's flag selection remembered by what they depend on (design record
 * 065): the values of the attributes those flags read ({@link attributesRead}). Contexts that
 * agree on them get the same answer byte for byte, so it is evaluated and written once; users who
 * differ only in attributes no rule reads (a user id, when no rollout buckets by it) share it.
 *
 * Where the answers depend on an attribute that differs for nearly every request (a rollout's
 * user id, an email in a condition), the memo would only cost: it turns itself off when fewer
 * than a quarter of {@link JUDGED_LOOKUPS} lookups hit. It holds at most {@link MEMO_BYTES} of
 * answers, and lives as long as its snapshot (one configuration version).
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

  /** The answer remembered for `context`, else the one `write` makes, remembered when it can be. */
  answerFor(context: EvaluationContext, write: () => Answer): Answer {
    const key = this.key(context);
    const remembered = key === undefined ? undefined : this.get(key);
    if (remembered !== undefined) return remembered;
    const answer = write();
    if (key !== undefined) this.set(key, answer);
    return answer;
  }

  /** The key `context`'s answer is remembered under, or undefined when the memo is off or the key too long. */
  private key(context: EvaluationContext): string | undefined {
    if (!this.on) return undefined;
    const key = readsKey(context, this.attributes);
    return key.length > MAX_KEY_LENGTH ? undefined : key;
  }

  /** The remembered answer for `key`; counts the lookup towards whether the memo stays on. */
  private get(key: string): Answer | undefined {
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

  /** Remembers `answer` under `key`, starting again empty when the memo is full. */
  private set(key: string, answer: Answer): void {
    if (!this.on) return;
    if (this.bytes + answer.size > MEMO_BYTES) {
      this.answers.clear();
      this.bytes = 0;
    }
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
