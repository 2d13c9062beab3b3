import { bucketingIdentity, type EvaluationContext, type EvaluationReason } from '@vexil/engine';
import {
  ExperimentExposures,
  type ExperimentCountRow,
  type ExperimentEventRow,
  type ExperimentExposureRow,
  type ExperimentWrite,
  type RunningExperiment,
} from './experiment-exposures.js';
import { userHash } from './user-hash.js';

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
 * An active guarded release plan, as a process recording exposures needs it; what an upstream
 * tells its relays in its answers to their usage (relay protocol, design record 045).
 */
export interface ActiveGuardedPlan {
  planId: string;
  environmentId: string;
  flagKey: string;
  /** The variation the plan releases: its exposures are side 1, every other variation's 0. */
  targetVariationKey: string;
  /** The `Custom` event key of the plan's guard metric. */
  metric: string;
}

/** One user's exposure and metric event of one plan, as stored: by the user's hash. */
export interface ExposureRow {
  planId: string;
  /** {@link userHash} of the user's identity. */
  userHash: string;
  /** 1: served the plan's variation; 0: served another; null: only a metric event seen. */
  side: number | null;
  /** The earliest exposure seen (epoch ms). */
  exposedMs: number | null;
  /** The latest metric event seen (epoch ms). */
  metricMs: number | null;
}

/**
 * Where an {@link ExposureRecorder} learns the active guarded plans and puts what it saw: the
 * database ({@link DatabaseExposureStore}), or, on a relay, its upstream
 * (`relay/upstream-usage.ts`).
 */
export interface ExposureStore {
  activePlans(): Promise<ActiveGuardedPlan[]>;
  /**
   * Adds the rows to what is stored: the earliest exposure (with its side) and the latest metric
   * event win, whichever process sent them first.
   * @returns the ids of the plans whose rows were taken (rows of plans gone are dropped)
   * @throws when it could not
   */
  writeExposures(rows: ExposureRow[]): Promise<ReadonlySet<string>>;
  /** The running experiments (none on a store that cannot record them). */
  runningExperiments(): Promise<RunningExperiment[]>;
  /**
   * Adds first exposures (the earliest wins) and then metric events: each held event counts for
   * its user when it came within the metric's window after the user's stored first exposure;
   * counted events are added as they are. Both count on the variation of that exposure.
   * @returns the event rows whose user has no stored exposure yet, and the stored first
   *   exposures of the users named
   * @throws when it could not
   */
  writeExperimentRows(
    exposures: ExperimentExposureRow[],
    events: ExperimentEventRow[],
    counts: ExperimentCountRow[],
  ): Promise<ExperimentWrite>;
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
 *
 * On a relay the store is its upstream: the recorder learns the plans from the upstream's usage
 * answers and sends its rows with its usage; the upstream adds them with {@link addRelayed}.
 */
export class ExposureRecorder {
  /** Whether any guarded plan is active or any experiment runs; the record calls return at once when not. */
  active = false;
  /** The running experiments' exposures and metric events, written with the same flush. */
  readonly experiments = new ExperimentExposures();
  /** The active guarded plans, as last read. */
  private plans: readonly ActiveGuardedPlan[] = [];
  /** environment id → flag key → plan */
  private byFlag = new Map<string, Map<string, GuardedPlan>>();
  /** environment id → metric key → plan ids */
  private byMetric = new Map<string, Map<string, string[]>>();
  /** plan id → identity → what was seen */
  private pending = new Map<string, Map<string, PendingUser>>();
  /** plan id → user hash → what relays saw (their rows, {@link addRelayed}) */
  private relayed = new Map<string, Map<string, PendingUser>>();
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

  constructor(private readonly store: ExposureStore) {}

  /**
   * Notes that `context` was served `variationKey` of `flagKey` for `reason` (unknown for a
   * reported `Evaluation` event) at `atMs`, if the flag is guarded or in a running experiment.
   */
  recordEvaluation(
    environmentId: string,
    flagKey: string,
    variationKey: string,
    reason: EvaluationReason | undefined,
    context: EvaluationContext,
    atMs: number,
  ): void {
    const plan = this.byFlag.get(environmentId)?.get(flagKey);
    if (plan !== undefined) this.recordExposure(plan, variationKey, context, atMs);
    if (this.experiments.active)
      this.experiments.recordEvaluation(
        environmentId,
        flagKey,
        variationKey,
        reason,
        context,
        atMs,
      );
  }

  /** Whether an evaluation in the environment can be an exposure: a guarded plan or an experiment is there. */
  watches(environmentId: string): boolean {
    return this.byFlag.has(environmentId) || this.experiments.watches(environmentId);
  }

  /** {@link recordEvaluation} for each served result of one client evaluation. */
  recordEvaluations(
    environmentId: string,
    results: readonly { key: string; variation: string | null; reason?: EvaluationReason }[],
    context: EvaluationContext,
    atMs: number,
  ): void {
    if (this.experiments.active)
      this.experiments.recordEvaluations(environmentId, results, context, atMs);
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
    const user = this.user(this.pending, plan.planId, identity);
    if (user !== undefined)
      exposeEarlier(user, variationKey === plan.targetVariationKey ? 1 : 0, atMs);
  }

  /**
   * Notes a `Custom` event `eventKey` from the user `identity` at `atMs`, if a guard or a running
   * experiment's metric reads it (`metadata`: the event's, where a metric finds its number).
   */
  recordMetric(
    environmentId: string,
    eventKey: string,
    identity: string,
    atMs: number,
    metadata?: unknown,
  ): void {
    if (this.experiments.active)
      this.experiments.recordEvent(environmentId, eventKey, identity, metadata, atMs);
    const planIds = this.byMetric.get(environmentId)?.get(eventKey);
    if (planIds === undefined || identity === '') return;
    for (const planId of planIds) {
      const user = this.user(this.pending, planId, identity);
      if (user !== undefined) metricLater(user, atMs);
    }
  }

  /**
   * Adds rows a relay saw (relay usage intake, design record 045), written with the next flush
   * beside this process's own. Rows of plans this process does not know as active are dropped.
   */
  addRelayed(rows: readonly ExposureRow[]): void {
    const active = new Set(this.plans.map((plan) => plan.planId));
    for (const row of rows) {
      if (!active.has(row.planId)) continue;
      const user = this.user(this.relayed, row.planId, row.userHash);
      if (user === undefined) continue;
      if (row.exposedMs !== null && row.side !== null) exposeEarlier(user, row.side, row.exposedMs);
      if (row.metricMs !== null) metricLater(user, row.metricMs);
    }
  }

  /**
   * The active guarded plans, of the environments `covered` when given: what a relay covering
   * them is to record exposures of.
   */
  activePlansIn(covered?: ReadonlySet<string>): ActiveGuardedPlan[] {
    return covered === undefined
      ? [...this.plans]
      : this.plans.filter((plan) => covered.has(plan.environmentId));
  }

  private user(
    pending: Map<string, Map<string, PendingUser>>,
    planId: string,
    key: string,
  ): PendingUser | undefined {
    let users = pending.get(planId);
    if (users === undefined) {
      users = new Map();
      pending.set(planId, users);
    }
    let user = users.get(key);
    if (user === undefined) {
      if (this.pendingUsers >= MAX_PENDING_USERS) {
        this.dropped += 1;
        return undefined;
      }
      user = { side: null, exposedMs: null, metricMs: null };
      users.set(key, user);
      this.pendingUsers += 1;
    }
    return user;
  }

  /** Reads which guarded plans are active, for the record calls. */
  async refresh(): Promise<void> {
    const [plans, experiments] = await Promise.all([
      this.store.activePlans(),
      this.store.runningExperiments(),
    ]);
    this.experiments.update(experiments);
    const byFlag = new Map<string, Map<string, GuardedPlan>>();
    const byMetric = new Map<string, Map<string, string[]>>();
    const written = new Map<string, Set<string>>();
    for (const plan of plans) {
      const planWritten = this.written.get(plan.planId) ?? new Set<string>();
      written.set(plan.planId, planWritten);
      const flags = byFlag.get(plan.environmentId) ?? new Map<string, GuardedPlan>();
      flags.set(plan.flagKey, {
        planId: plan.planId,
        targetVariationKey: plan.targetVariationKey,
        written: planWritten,
      });
      byFlag.set(plan.environmentId, flags);
      const metrics = byMetric.get(plan.environmentId) ?? new Map<string, string[]>();
      metrics.set(plan.metric, [...(metrics.get(plan.metric) ?? []), plan.planId]);
      byMetric.set(plan.environmentId, metrics);
    }
    this.plans = plans;
    this.byFlag = byFlag;
    this.byMetric = byMetric;
    // Plans no longer active are forgotten.
    this.written = written;
    this.writtenUsers = [...written.values()].reduce((sum, users) => sum + users.size, 0);
    this.active = plans.length > 0 || this.experiments.active;
  }

  /**
   * Writes what was seen since the last flush, then reads the active guarded plans again. A
   * failed write keeps nothing (exposures are a sample, and a retry could double nothing but
   * would grow memory); the error goes to the caller.
   */
  async flush(): Promise<void> {
    const batch = this.pending;
    const relayed = this.relayed;
    this.pending = new Map();
    this.relayed = new Map();
    this.pendingUsers = 0;
    if (batch.size > 0 || relayed.size > 0) {
      const taken = await this.store.writeExposures(exposureRows(batch, relayed));
      this.rememberWritten(batch, taken);
    }
    await this.experiments.flush((exposures, events, counts) =>
      this.store.writeExperimentRows(exposures, events, counts),
    );
    await this.refresh();
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

function exposeEarlier(user: PendingUser, side: number, atMs: number): void {
  if (user.exposedMs === null || atMs < user.exposedMs) {
    user.exposedMs = atMs;
    user.side = side;
  }
}

function metricLater(user: PendingUser, atMs: number): void {
  if (user.metricMs === null || atMs > user.metricMs) user.metricMs = atMs;
}

/**
 * This process's own users (by identity, hashed here) and what relays saw (by hash) as rows, one
 * per plan and user: a user seen both ways is merged as the stored row would merge them (one
 * upsert statement may not name a row twice).
 */
function exposureRows(
  own: Map<string, Map<string, PendingUser>>,
  relayed: Map<string, Map<string, PendingUser>>,
): ExposureRow[] {
  const merged = new Map<string, Map<string, PendingUser>>();
  for (const [planId, users] of relayed) merged.set(planId, new Map(users));
  for (const [planId, users] of own) {
    const hashed = merged.get(planId) ?? new Map<string, PendingUser>();
    merged.set(planId, hashed);
    for (const [identity, user] of users) {
      const hash = userHash(identity);
      const seen = hashed.get(hash);
      if (seen === undefined) hashed.set(hash, user);
      else {
        if (user.exposedMs !== null && user.side !== null)
          exposeEarlier(seen, user.side, user.exposedMs);
        if (user.metricMs !== null) metricLater(seen, user.metricMs);
      }
    }
  }
  const rows: ExposureRow[] = [];
  for (const [planId, users] of merged)
    for (const [hash, user] of users)
      rows.push({
        planId,
        userHash: hash,
        side: user.side,
        exposedMs: user.exposedMs,
        metricMs: user.metricMs,
      });
  return rows;
}
