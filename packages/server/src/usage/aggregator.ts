import type { EvaluationContext, EvaluationReason } from '@vexil/engine';
import type { Kysely, Transaction } from 'kysely';
import type { CustomEventUsageTable, FlagUsageTable, Schema } from '../db/schema.js';
import type { ExposureRecorder } from './exposures.js';

export const HOUR_MS = 3_600_000;
/** Rows per upsert statement: far below both dialects' bound-parameter limits. */
const ROWS_PER_STATEMENT = 500;
/**
 * Distinct custom-event buckets held between two flushes. Custom event keys come from clients,
 * so without a bound a flood of invented keys could grow memory until the next flush.
 */
const MAX_PENDING_CUSTOM_BUCKETS = 100_000;
/**
 * Evaluation buckets kept back from a failed flush for the next one. Past it (a long outage of
 * the database, or of a relay's upstream, spanning many hours) the counts are dropped and
 * counted as `overflow` discards, so memory stays bounded however long the outage lasts.
 */
const MAX_KEPT_EVALUATION_BUCKETS = 100_000;
/** How often counts past their retention are removed. */
const PRUNE_INTERVAL_MS = HOUR_MS;

/** Why an analytics event was dropped (design record 008); each reason is counted. */
export type DiscardReason =
  'invalid' | 'timestamp' | 'flagKeyTooLong' | 'tooManyEventKeys' | 'unknownFlag' | 'overflow';

/**
 * Where flushed counts go: the database ({@link DatabaseUsageStore}), or, on a relay, its
 * upstream (design record 044).
 */
export interface UsageStore {
  /**
   * Adds a batch of counts to what is stored.
   * @throws when it could not: the aggregator keeps the counts for the next flush
   */
  write(batch: UsageBatch): Promise<void>;
  /** Removes the counts of hours before `beforeHourMs` (epoch ms); how many rows went. */
  prune(beforeHourMs: number): Promise<number>;
}

export interface EvaluationBucket {
  variationKey: string;
  hourMs: number;
  count: number;
  lastMs: number;
}

export interface CustomBucket {
  eventKey: string;
  hourMs: number;
  count: number;
}

/** Counts not yet in the database (or, on a relay, not yet sent upstream). */
export interface UsageBatch {
  /** environment id → flag key → variation key (or `variation\nhour` across an hour boundary) → bucket */
  evaluations: Map<string, Map<string, Map<string, EvaluationBucket>>>;
  /** environment id → `eventKey\nhour` → bucket */
  customEvents: Map<string, Map<string, CustomBucket>>;
  customBucketCount: number;
  /** Per credential table, the id of each credential (or person) → its latest use (epoch ms). */
  lastUses: Record<LastUseTable, Map<string, number>>;
}

/**
 * Where a credential's last use is kept, and in which column: SDK keys and API tokens (personal
 * and service) in `last_used_at`, people in `users.last_seen_at`.
 */
const LAST_USE_COLUMNS = {
  sdk_keys: 'last_used_at',
  api_tokens: 'last_used_at',
  users: 'last_seen_at',
} as const;

type LastUseTable = keyof typeof LAST_USE_COLUMNS;

function hasLastUses(batch: UsageBatch): boolean {
  return Object.values(batch.lastUses).some((uses) => uses.size > 0);
}

/** One not-yet-flushed usage bucket of a flag in an environment. */
export interface PendingFlagUsage {
  variationKey: string;
  hourMs: number;
  count: number;
  lastEvaluatedMs: number;
}

function emptyPending(): UsageBatch {
  return {
    evaluations: new Map(),
    customEvents: new Map(),
    customBucketCount: 0,
    lastUses: { sdk_keys: new Map(), api_tokens: new Map(), users: new Map() },
  };
}

function startOfHour(ms: number): number {
  return ms - (ms % HOUR_MS);
}

/** Adds `count` evaluations serving `variationKey` in the hour starting at `hourMs` to a flag's buckets. */
function addToFlag(
  flags: Map<string, Map<string, EvaluationBucket>>,
  flagKey: string,
  variationKey: string,
  hourMs: number,
  count: number,
  lastMs: number,
): void {
  let buckets = flags.get(flagKey);
  if (!buckets) {
    buckets = new Map();
    flags.set(flagKey, buckets);
  }
  // The hot path builds no key: within one flush interval a variation almost always counts
  // into one hour, so the variation key alone names that bucket. Only across an hour boundary
  // does a second bucket take the composite `variation\nhour` key.
  let id = variationKey;
  let bucket = buckets.get(id);
  if (bucket !== undefined && bucket.hourMs !== hourMs) {
    id = `${variationKey}\n${hourMs}`;
    bucket = buckets.get(id);
  }
  if (bucket) {
    bucket.count += count;
    if (lastMs > bucket.lastMs) bucket.lastMs = lastMs;
  } else {
    buckets.set(id, { variationKey, hourMs, count, lastMs });
  }
}

/** A result as usage counting and exposures read it. */
export interface ServedResult {
  key: string;
  variation: string | null;
  reason?: EvaluationReason;
}

/**
 * Evaluations served again and again as one remembered bulk answer (design record 065): counted
 * with one increment per answer served, and added to its flags' counts when the aggregator next
 * reads or writes them, or when the hour turns. The counts' last evaluation time is the answer's
 * last serving, so it is exact for every flag the answer holds. It keeps only the flag keys and
 * variations that served one: an engine result takes six times the memory.
 */
export class ServedTally {
  count = 0;
  hourMs = 0;
  lastMs = 0;
  readonly keys: string[] = [];
  readonly variations: string[] = [];

  /** @param results the answer's results; those with a null variation served none and do not count */
  constructor(
    readonly environmentId: string,
    results: readonly ServedResult[],
  ) {
    for (const { key, variation } of results) {
      if (variation === null) continue;
      this.keys.push(key);
      this.variations.push(variation);
    }
  }
}

/**
 * Usage recording (design record 008): evaluation counts per flag × environment × variation ×
 * hour with the last evaluation time, custom event counts per environment × key × hour, and each
 * SDK key's last use (design record 025).
 * Recording is a few map operations; the database sees one batch of upserts per flush. A crash
 * loses at most the counts of one flush interval.
 *
 * Counts are kept by flag key (what the evaluation snapshot knows); keys are resolved to flag ids
 * at flush time, and counts for flags or environments deleted meanwhile are dropped.
 */
export class UsageAggregator {
  private pending = emptyPending();
  /** Tallies counted since they were last added to {@link pending}. */
  private readonly tallies = new Set<ServedTally>();
  /** The batch being written, still visible to reads until it is committed. */
  private flushing: UsageBatch | null = null;
  private flushChain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  /** When the last flush completed with everything written (epoch ms), for the flush-lag metric. */
  private lastCompleteFlushMs = Date.now();
  private readonly discards: Record<DiscardReason, number> = {
    invalid: 0,
    timestamp: 0,
    flagKeyTooLong: 0,
    tooManyEventKeys: 0,
    unknownFlag: 0,
    overflow: 0,
  };

  /**
   * @param store where flushed counts go
   * @param exposures guarded release plans' exposures and metric events, fed by the record calls
   *   below (design record 046); a relay's sends them upstream (design record 045)
   */
  constructor(
    private readonly store: UsageStore,
    private readonly onFlushError: (error: unknown) => void,
    readonly exposures: ExposureRecorder | null = null,
  ) {}

  /**
   * Counts one evaluation of `flagKey` serving `variationKey`, at `atMs` (epoch milliseconds),
   * and, when the flag has an active guarded release plan or a running experiment, the exposure
   * of `context`'s user (`reason`: the evaluation's, unknown for a reported event).
   */
  recordEvaluation(
    environmentId: string,
    flagKey: string,
    variationKey: string,
    atMs: number,
    context?: EvaluationContext,
    reason?: EvaluationReason,
  ): void {
    addToFlag(this.flagsOf(environmentId), flagKey, variationKey, startOfHour(atMs), 1, atMs);
    if (this.exposures?.active === true && context !== undefined)
      this.exposures.recordEvaluation(environmentId, flagKey, variationKey, reason, context, atMs);
  }

  /**
   * Counts one evaluation of each result that served a variation (results with a null variation
   * served none), at `atMs`: a client evaluation's flags, counted in one call.
   */
  recordEvaluations(
    environmentId: string,
    results: readonly ServedResult[],
    atMs: number,
    context?: EvaluationContext,
  ): void {
    const flags = this.flagsOf(environmentId);
    const hourMs = startOfHour(atMs);
    for (const { key, variation } of results) {
      if (variation !== null) addToFlag(flags, key, variation, hourMs, 1, atMs);
    }
    if (this.exposures?.active === true && context !== undefined)
      this.exposures.recordEvaluations(environmentId, results, context, atMs);
  }

  /**
   * Counts one more serving of a remembered answer at `atMs`, and, as
   * {@link recordEvaluations} does, the exposure of `context`'s user when a flag of it is guarded
   * or in a running experiment (only then, in an environment that has one, are the answer's
   * `results` asked for). A map update per flag becomes one increment.
   */
  recordTally(
    tally: ServedTally,
    atMs: number,
    context: EvaluationContext,
    results: () => readonly ServedResult[],
  ): void {
    const hourMs = startOfHour(atMs);
    if (tally.count > 0 && tally.hourMs !== hourMs) this.addTally(tally);
    if (tally.count === 0) {
      tally.hourMs = hourMs;
      this.tallies.add(tally);
    }
    tally.count += 1;
    tally.lastMs = atMs;
    if (this.exposures?.active === true && this.exposures.watches(tally.environmentId))
      this.exposures.recordEvaluations(tally.environmentId, results(), context, atMs);
  }

  /** Adds a tally's count to the pending counts of its flags and starts it again from zero. */
  private addTally(tally: ServedTally): void {
    const flags = this.flagsOf(tally.environmentId);
    const { keys, variations } = tally;
    for (let i = 0; i < keys.length; i++)
      addToFlag(
        flags,
        keys[i] as string,
        variations[i] as string,
        tally.hourMs,
        tally.count,
        tally.lastMs,
      );
    tally.count = 0;
    this.tallies.delete(tally);
  }

  private addTallies(): void {
    for (const tally of this.tallies) this.addTally(tally);
  }

  /**
   * Counts one custom event (a `track()` call) named `eventKey`, at `atMs`; from the user
   * `userId`, it is a metric event of the guarded release plans and running experiments reading
   * `eventKey` (`metadata` holds the number a `sum` or `mean` metric reads).
   */
  recordCustomEvent(
    environmentId: string,
    eventKey: string,
    atMs: number,
    userId?: string,
    metadata?: unknown,
  ): void {
    this.addCustomEvent(environmentId, eventKey, startOfHour(atMs), 1);
    if (this.exposures?.active === true && userId !== undefined)
      this.exposures.recordMetric(environmentId, eventKey, userId, atMs, metadata);
  }

  /**
   * Adds `count` evaluations of `flagKey` serving `variationKey`, counted elsewhere (by a relay,
   * design record 045) in the hour containing `hourMs`; `lastMs` is the latest of them.
   */
  addEvaluations(
    environmentId: string,
    flagKey: string,
    variationKey: string,
    hourMs: number,
    count: number,
    lastMs: number,
  ): void {
    addToFlag(
      this.flagsOf(environmentId),
      flagKey,
      variationKey,
      startOfHour(hourMs),
      count,
      lastMs,
    );
  }

  /** Adds `count` custom events named `eventKey`, counted elsewhere, in the hour containing `hourMs`. */
  addCustomEvents(environmentId: string, eventKey: string, hourMs: number, count: number): void {
    this.addCustomEvent(environmentId, eventKey, startOfHour(hourMs), count);
  }

  /**
   * Notes that the SDK key with id `keyId` was used at `atMs` (epoch ms); written to the key's
   * `last_used_at` with the next flush. A null id (a grant from an old snapshot copy) is ignored.
   */
  recordKeyUse(keyId: string | null, atMs: number): void {
    if (keyId !== null) this.noteLastUse('sdk_keys', keyId, atMs);
  }

  /**
   * Notes that the personal or service token with id `tokenId` was used at `atMs` (epoch ms);
   * written to its `last_used_at` with the next flush, so a request costs no write.
   */
  recordTokenUse(tokenId: string, atMs: number): void {
    this.noteLastUse('api_tokens', tokenId, atMs);
  }

  /**
   * Notes that the person with id `userId` made a request at `atMs` (epoch ms), by token or
   * session; written to `users.last_seen_at` with the next flush.
   */
  recordUserSeen(userId: string, atMs: number): void {
    this.noteLastUse('users', userId, atMs);
  }

  private noteLastUse(table: LastUseTable, id: string, atMs: number): void {
    const uses = this.pending.lastUses[table];
    const last = uses.get(id);
    if (last === undefined || atMs > last) uses.set(id, atMs);
  }

  /** The environment's pending evaluation counts, by flag key. */
  private flagsOf(environmentId: string): Map<string, Map<string, EvaluationBucket>> {
    let flags = this.pending.evaluations.get(environmentId);
    if (!flags) {
      flags = new Map();
      this.pending.evaluations.set(environmentId, flags);
    }
    return flags;
  }

  private addCustomEvent(environmentId: string, eventKey: string, hourMs: number, count: number) {
    let buckets = this.pending.customEvents.get(environmentId);
    if (!buckets) {
      buckets = new Map();
      this.pending.customEvents.set(environmentId, buckets);
    }
    const id = `${eventKey}\n${hourMs}`;
    const bucket = buckets.get(id);
    if (bucket) {
      bucket.count += count;
    } else if (this.pending.customBucketCount >= MAX_PENDING_CUSTOM_BUCKETS) {
      this.discards.overflow += count;
    } else {
      buckets.set(id, { eventKey, hourMs, count });
      this.pending.customBucketCount += 1;
    }
  }

  /** Counts a discarded analytics event. */
  recordDiscard(reason: DiscardReason): void {
    this.discards[reason] += 1;
  }

  /** Discarded analytics events since start, by reason (for metrics). */
  discardCounts(): Readonly<Record<DiscardReason, number>> {
    return { ...this.discards };
  }

  /**
   * The not-yet-flushed usage of one flag (by key) in one environment, including a batch whose
   * write is in progress, so a node always sees its own recent traffic.
   */
  pendingUsage(environmentId: string, flagKey: string): PendingFlagUsage[] {
    this.addTallies();
    const result: PendingFlagUsage[] = [];
    for (const batch of [this.flushing, this.pending]) {
      const buckets = batch?.evaluations.get(environmentId)?.get(flagKey);
      for (const bucket of buckets?.values() ?? []) {
        result.push({
          variationKey: bucket.variationKey,
          hourMs: bucket.hourMs,
          count: bucket.count,
          lastEvaluatedMs: bucket.lastMs,
        });
      }
    }
    return result;
  }

  /** The not-yet-flushed last evaluation time (epoch ms) of every flag key seen in an environment. */
  pendingLastEvaluated(environmentId: string): Map<string, number> {
    this.addTallies();
    const result = new Map<string, number>();
    for (const batch of [this.flushing, this.pending]) {
      for (const [flagKey, buckets] of batch?.evaluations.get(environmentId) ?? []) {
        for (const bucket of buckets.values()) {
          if (bucket.lastMs > (result.get(flagKey) ?? -Infinity))
            result.set(flagKey, bucket.lastMs);
        }
      }
    }
    return result;
  }

  /**
   * Flushes every `intervalMs`, and every hour removes the counts older than `retentionMs`
   * ({@link prune}), until {@link close}. The timers never keep the process alive. With
   * `retentionMs` null this process only flushes: another one prunes (design record 029).
   */
  start(intervalMs: number, retentionMs: number | null): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
    if (retentionMs === null) return;
    this.pruneTimer = setInterval(
      () => void this.prune(Date.now() - retentionMs),
      PRUNE_INTERVAL_MS,
    );
    this.pruneTimer.unref();
  }

  /**
   * Removes the hourly counts of hours that ended before `beforeMs` (epoch ms): custom events all,
   * and flag evaluations except each flag's newest count in each environment, which holds its
   * "last evaluated" time (design record 008). One statement per hour, between flushes; a failure
   * goes to the flush-error callback. Never rejects.
   * @returns how many rows were removed
   */
  prune(beforeMs: number): Promise<number> {
    const pruning = this.flushChain.then(() => this.store.prune(startOfHour(beforeMs)));
    const settled = pruning.catch((error: unknown) => {
      this.onFlushError(error);
      return 0;
    });
    this.flushChain = settled.then(() => undefined);
    return settled;
  }

  /**
   * Writes the pending counts to the store ({@link DatabaseUsageStore}: one transaction).
   * Flushes run one at a time; a failed write is logged and its counts are kept for the next
   * flush, up to {@link MAX_KEPT_EVALUATION_BUCKETS}. Never rejects.
   */
  flush(): Promise<void> {
    this.flushChain = this.flushChain
      .then(() => this.flushOnce())
      .then(() => this.exposures?.flush())
      .catch((error: unknown) => this.onFlushError(error));
    return this.flushChain;
  }

  /** Stops the timer and writes what is pending; call before the database closes. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.timer = null;
    this.pruneTimer = null;
    await this.flush();
  }

  /** Seconds since every count was last written: how much a crash would lose now. */
  flushLagSeconds(nowMs: number): number {
    return (nowMs - this.lastCompleteFlushMs) / 1000;
  }

  private async flushOnce(): Promise<void> {
    this.addTallies();
    const batch = this.pending;
    if (batch.evaluations.size === 0 && batch.customEvents.size === 0 && !hasLastUses(batch)) {
      this.lastCompleteFlushMs = Date.now();
      return;
    }
    this.pending = emptyPending();
    this.flushing = batch;
    try {
      await this.store.write(batch);
      this.lastCompleteFlushMs = Date.now();
    } catch (error) {
      this.onFlushError(error);
      this.restore(batch);
    } finally {
      this.flushing = null;
    }
  }

  /** Puts a batch that could not be written back in front of newer counts. */
  private restore(batch: UsageBatch): void {
    let kept = 0;
    for (const [environmentId, flags] of batch.evaluations) {
      const pending = this.flagsOf(environmentId);
      for (const [flagKey, buckets] of flags) {
        for (const b of buckets.values()) {
          if (kept >= MAX_KEPT_EVALUATION_BUCKETS) {
            this.discards.overflow += b.count;
            continue;
          }
          kept += 1;
          addToFlag(pending, flagKey, b.variationKey, b.hourMs, b.count, b.lastMs);
        }
      }
    }
    for (const [environmentId, buckets] of batch.customEvents) {
      for (const bucket of buckets.values()) {
        this.addCustomEvent(environmentId, bucket.eventKey, bucket.hourMs, bucket.count);
      }
    }
    for (const [table, uses] of Object.entries(batch.lastUses) as [
      LastUseTable,
      Map<string, number>,
    ][])
      for (const [id, atMs] of uses) this.noteLastUse(table, id, atMs);
  }
}

/**
 * The counts in the database: upserts into `flag_usage` and `custom_event_usage` that add to
 * existing counts, and the SDK keys' last uses into `sdk_keys`, in one transaction.
 */
export class DatabaseUsageStore implements UsageStore {
  constructor(private readonly db: Kysely<Schema>) {}

  async prune(beforeHourMs: number): Promise<number> {
    const before = new Date(beforeHourMs).toISOString();
    const hours = await this.db
      .selectFrom('flag_usage')
      .select('hour')
      .distinct()
      .where('hour', '<', before)
      .execute();
    let removed = 0;
    for (const { hour } of hours) {
      const result = await this.db
        .deleteFrom('flag_usage')
        .where('hour', '=', hour)
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('flag_usage as newer')
              .select('newer.hour')
              .whereRef('newer.flag_id', '=', 'flag_usage.flag_id')
              .whereRef('newer.environment_id', '=', 'flag_usage.environment_id')
              .whereRef('newer.last_evaluated_at', '>', 'flag_usage.last_evaluated_at'),
          ),
        )
        .executeTakeFirst();
      removed += Number(result.numDeletedRows);
    }
    const custom = await this.db
      .deleteFrom('custom_event_usage')
      .where('hour', '<', before)
      .executeTakeFirst();
    return removed + Number(custom.numDeletedRows);
  }

  async write(batch: UsageBatch): Promise<void> {
    const usageRows: FlagUsageTable[] = [];
    for (const [environmentId, flags] of batch.evaluations) {
      // Flag keys are unique per project; the environment names the project.
      const known = await this.db
        .selectFrom('flags')
        .innerJoin('environments', 'environments.project_id', 'flags.project_id')
        .select(['flags.id', 'flags.key'])
        .where('environments.id', '=', environmentId)
        .execute();
      const idByKey = new Map(known.map((row) => [row.key, row.id]));
      for (const [flagKey, buckets] of flags) {
        const flagId = idByKey.get(flagKey);
        if (!flagId) continue;
        for (const bucket of buckets.values()) {
          usageRows.push({
            flag_id: flagId,
            environment_id: environmentId,
            variation_key: bucket.variationKey,
            hour: new Date(bucket.hourMs).toISOString(),
            count: bucket.count,
            last_evaluated_at: new Date(bucket.lastMs).toISOString(),
          });
        }
      }
    }
    const customRows: CustomEventUsageTable[] = [];
    if (batch.customEvents.size > 0) {
      const existing = await this.db
        .selectFrom('environments')
        .select('id')
        .where('id', 'in', [...batch.customEvents.keys()])
        .execute();
      for (const { id } of existing) {
        for (const bucket of batch.customEvents.get(id)?.values() ?? []) {
          customRows.push({
            environment_id: id,
            event_key: bucket.eventKey,
            hour: new Date(bucket.hourMs).toISOString(),
            count: bucket.count,
          });
        }
      }
    }
    if (usageRows.length === 0 && customRows.length === 0 && !hasLastUses(batch)) return;
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < usageRows.length; i += ROWS_PER_STATEMENT) {
        await trx
          .insertInto('flag_usage')
          .values(usageRows.slice(i, i + ROWS_PER_STATEMENT))
          .onConflict((conflict) =>
            conflict
              .columns(['flag_id', 'environment_id', 'variation_key', 'hour'])
              .doUpdateSet((eb) => ({
                count: eb('flag_usage.count', '+', eb.ref('excluded.count')),
                // CASE rather than MAX/GREATEST: the one spelling both dialects share.
                last_evaluated_at: eb
                  .case()
                  .when('excluded.last_evaluated_at', '>', eb.ref('flag_usage.last_evaluated_at'))
                  .then(eb.ref('excluded.last_evaluated_at'))
                  .else(eb.ref('flag_usage.last_evaluated_at'))
                  .end(),
              })),
          )
          .execute();
      }
      for (let i = 0; i < customRows.length; i += ROWS_PER_STATEMENT) {
        await trx
          .insertInto('custom_event_usage')
          .values(customRows.slice(i, i + ROWS_PER_STATEMENT))
          .onConflict((conflict) =>
            conflict.columns(['environment_id', 'event_key', 'hour']).doUpdateSet((eb) => ({
              count: eb('custom_event_usage.count', '+', eb.ref('excluded.count')),
            })),
          )
          .execute();
      }
      await writeLastUses(trx, batch.lastUses);
    });
  }
}

/**
 * One short update per credential (or person) used since the last flush; another node may have
 * written a later use already, which is kept.
 */
async function writeLastUses(
  trx: Transaction<Schema>,
  lastUses: UsageBatch['lastUses'],
): Promise<void> {
  for (const [table, uses] of Object.entries(lastUses) as [LastUseTable, Map<string, number>][]) {
    const column = LAST_USE_COLUMNS[table];
    for (const [id, atMs] of uses) {
      const usedAt = new Date(atMs).toISOString();
      await trx
        .updateTable(table)
        .set({ [column]: usedAt })
        .where('id', '=', id)
        .where((eb) => eb.or([eb(column, 'is', null), eb(column, '<', usedAt)]))
        .execute();
    }
  }
}
