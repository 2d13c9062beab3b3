import { createHash } from 'node:crypto';
import { bucketingIdentity, type EvaluationContext } from '@vexil/engine';
import type { Kysely } from 'kysely';
import type { ReleasePlanExposuresTable, Schema } from '../db/schema.js';

/** Rows per upsert statement: far below both dialects' bound-parameter limits. */
const ROWS_PER_STATEMENT = 500;
/** Distinct (plan, user) pairs held between two flushes; beyond it new users wait for the next. */
const MAX_PENDING_USERS = 200_000;
/**
 * (plan, user) pairs whose exposure this process remembers having written; beyond it, further
 * users' exposures are written again at each flush (correct, only costlier).
 */
const MAX_WRITTEN_USERS = 200_000;

/** An active guarded plan as the hot path sees it. */
interface GuardedPlan {
  planId: string;
  targetVariationKey: string;
  /** The plan's identities whose exposure this process has written (shared with `written`). */
  written: ReadonlySet<string>;
}

/** What this process saw of one user of one plan since the last flush. */
interface PendingUser {
  side: number | null;
  exposedMs: number | null;
  metricMs: number | null;
}

/**
 * The stored form of a user's identity: base64url of the first 12 bytes of its SHA-256, 16
 * characters whatever the identity's length (a collision among a million users has a chance
 * near 10⁻¹⁷).
 */
export function userHash(identity: string): string {
  return createHash('sha256').update(identity).digest().subarray(0, 12).toString('base64url');
}

/**
 * Exposures and metric events of guarded release plans (design record 046): which users were
 * served which side of each active guarded plan, and the latest time each sent the plan's metric
 * (a `Custom` event with that key). Fed from every path that counts evaluations and custom
 * events (the {@link UsageAggregator}'s record calls), kept in memory and written with the usage
 * counts' flush as upserts that commute, so every node and worker process adds to the same rows.
 *
 * The hot path's cost: one property read (`active`) while no guarded plan is active; otherwise a
 * map lookup per evaluated flag, and for a guarded flag the context's identity and a set lookup;
 * only a user not yet written by this process costs a map write, once (hashing waits for the
 * flush). So a returning user costs no memory and no write at every flush.
 */
export class ExposureRecorder {
  /** Whether any guarded plan is active; the record calls return at once when not. */
  active = false;
  /** environment id → flag key → plan */
  private byFlag = new Map<string, Map<string, GuardedPlan>>();
  /** environment id → metric key → plan ids */
  private byMetric = new Map<string, Map<string, string[]>>();
  /** plan id → identity → what was seen */
  private pending = new Map<string, Map<string, PendingUser>>();
  private pendingUsers = 0;
  /**
   * plan id → identities whose exposure this process has written. The stored row keeps the
   * earliest exposure, and rows are deleted only with their plan, so a later exposure of one of
   * these users can change nothing: it is not held, and not written again at every flush.
   */
  private written = new Map<string, Set<string>>();
  private writtenUsers = 0;
  /** Exposures and metric events dropped because {@link MAX_PENDING_USERS} was reached. */
  dropped = 0;

  /** (plan, user) pairs held for the next flush. */
  get heldUsers(): number {
    return this.pendingUsers;
  }

  constructor(private readonly db: Kysely<Schema>) {}

  /** Notes that `context` was served `variationKey` of `flagKey` at `atMs`, if the flag is guarded. */
  recordEvaluation(
    environmentId: string,
    flagKey: string,
    variationKey: string,
    context: EvaluationContext,
    atMs: number,
  ): void {
    const plan = this.byFlag.get(environmentId)?.get(flagKey);
    if (plan !== undefined) this.recordExposure(plan, variationKey, context, atMs);
  }

  /** {@link recordEvaluation} for each served result of one client evaluation. */
  recordEvaluations(
    environmentId: string,
    results: readonly { key: string; variation: string | null }[],
    context: EvaluationContext,
    atMs: number,
  ): void {
    const plans = this.byFlag.get(environmentId);
    if (plans === undefined) return;
    for (const { key, variation } of results) {
      if (variation === null) continue;
      const plan = plans.get(key);
      if (plan !== undefined) this.recordExposure(plan, variation, context, atMs);
    }
  }

  private recordExposure(
    plan: GuardedPlan,
    variationKey: string,
    context: EvaluationContext,
    atMs: number,
  ): void {
    const identity = bucketingIdentity(context, null);
    if (identity === undefined || plan.written.has(identity)) return;
    const user = this.user(plan.planId, identity);
    if (user === undefined) return;
    if (user.exposedMs === null || atMs < user.exposedMs) {
      user.exposedMs = atMs;
      user.side = variationKey === plan.targetVariationKey ? 1 : 0;
    }
  }

  /** Notes a `Custom` event `eventKey` from the user `identity` at `atMs`, if a guard watches it. */
  recordMetric(environmentId: string, eventKey: string, identity: string, atMs: number): void {
    const planIds = this.byMetric.get(environmentId)?.get(eventKey);
    if (planIds === undefined || identity === '') return;
    for (const planId of planIds) {
      const user = this.user(planId, identity);
      if (user !== undefined && (user.metricMs === null || atMs > user.metricMs))
        user.metricMs = atMs;
    }
  }

  private user(planId: string, identity: string): PendingUser | undefined {
    let users = this.pending.get(planId);
    if (users === undefined) {
      users = new Map();
      this.pending.set(planId, users);
    }
    let user = users.get(identity);
    if (user === undefined) {
      if (this.pendingUsers >= MAX_PENDING_USERS) {
        this.dropped += 1;
        return undefined;
      }
      user = { side: null, exposedMs: null, metricMs: null };
      users.set(identity, user);
      this.pendingUsers += 1;
    }
    return user;
  }

  /** Reads which guarded plans are active, for the record calls. */
  async refresh(): Promise<void> {
    const rows = await this.db
      .selectFrom('release_plans')
      .innerJoin('flags', 'flags.id', 'release_plans.flag_id')
      .innerJoin('variations', 'variations.id', 'release_plans.variation_id')
      .select([
        'release_plans.id',
        'release_plans.environment_id',
        'release_plans.guard',
        'flags.key as flagKey',
        'variations.key as variationKey',
      ])
      .where('release_plans.state', '=', 'active')
      .where('release_plans.guard', 'is not', null)
      .execute();
    const byFlag = new Map<string, Map<string, GuardedPlan>>();
    const byMetric = new Map<string, Map<string, string[]>>();
    const written = new Map<string, Set<string>>();
    for (const row of rows) {
      const metric = (JSON.parse(row.guard ?? '{}') as { metric?: string }).metric ?? '';
      const planWritten = this.written.get(row.id) ?? new Set<string>();
      written.set(row.id, planWritten);
      const flags = byFlag.get(row.environment_id) ?? new Map<string, GuardedPlan>();
      flags.set(row.flagKey, {
        planId: row.id,
        targetVariationKey: row.variationKey,
        written: planWritten,
      });
      byFlag.set(row.environment_id, flags);
      const metrics = byMetric.get(row.environment_id) ?? new Map<string, string[]>();
      metrics.set(metric, [...(metrics.get(metric) ?? []), row.id]);
      byMetric.set(row.environment_id, metrics);
    }
    this.byFlag = byFlag;
    this.byMetric = byMetric;
    // Plans no longer active are forgotten.
    this.written = written;
    this.writtenUsers = [...written.values()].reduce((sum, users) => sum + users.size, 0);
    this.active = rows.length > 0;
  }

  /**
   * Writes what was seen since the last flush, then reads the active guarded plans again. A
   * failed write keeps nothing (exposures are a sample, and a retry could double nothing but
   * would grow memory); the error goes to the caller.
   */
  async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.pendingUsers = 0;
    if (batch.size > 0) await this.write(batch);
    await this.refresh();
  }

  private async write(batch: Map<string, Map<string, PendingUser>>): Promise<void> {
    const existing = new Set(
      (
        await this.db
          .selectFrom('release_plans')
          .select('id')
          .where('id', 'in', [...batch.keys()])
          .execute()
      ).map((row) => row.id),
    );
    const rows: ReleasePlanExposuresTable[] = [];
    for (const [planId, users] of batch) {
      if (!existing.has(planId)) continue;
      for (const [identity, user] of users)
        rows.push({
          plan_id: planId,
          user_hash: userHash(identity),
          side: user.side,
          exposed_ms: user.exposedMs,
          metric_ms: user.metricMs,
        });
    }
    if (rows.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        await trx
          .insertInto('release_plan_exposures')
          .values(rows.slice(i, i + ROWS_PER_STATEMENT))
          .onConflict((conflict) =>
            conflict.columns(['plan_id', 'user_hash']).doUpdateSet((eb) => {
              // The earliest exposure wins, with its side; the latest metric event wins.
              const earlier = eb.and([
                eb('excluded.exposed_ms', 'is not', null),
                eb.or([
                  eb('release_plan_exposures.exposed_ms', 'is', null),
                  eb('excluded.exposed_ms', '<', eb.ref('release_plan_exposures.exposed_ms')),
                ]),
              ]);
              const later = eb.and([
                eb('excluded.metric_ms', 'is not', null),
                eb.or([
                  eb('release_plan_exposures.metric_ms', 'is', null),
                  eb('excluded.metric_ms', '>', eb.ref('release_plan_exposures.metric_ms')),
                ]),
              ]);
              return {
                side: eb
                  .case()
                  .when(earlier)
                  .then(eb.ref('excluded.side'))
                  .else(eb.ref('release_plan_exposures.side'))
                  .end(),
                exposed_ms: eb
                  .case()
                  .when(earlier)
                  .then(eb.ref('excluded.exposed_ms'))
                  .else(eb.ref('release_plan_exposures.exposed_ms'))
                  .end(),
                metric_ms: eb
                  .case()
                  .when(later)
                  .then(eb.ref('excluded.metric_ms'))
                  .else(eb.ref('release_plan_exposures.metric_ms'))
                  .end(),
              };
            }),
          )
          .execute();
      }
    });
    this.rememberWritten(batch, existing);
  }

  /** Notes the exposures just written, up to {@link MAX_WRITTEN_USERS}. */
  private rememberWritten(
    batch: Map<string, Map<string, PendingUser>>,
    existing: ReadonlySet<string>,
  ): void {
    for (const [planId, users] of batch) {
      const planWritten = this.written.get(planId);
      if (planWritten === undefined || !existing.has(planId)) continue;
      for (const [identity, user] of users) {
        if (this.writtenUsers >= MAX_WRITTEN_USERS) return;
        if (user.exposedMs === null || planWritten.has(identity)) continue;
        planWritten.add(identity);
        this.writtenUsers += 1;
      }
    }
  }
}
