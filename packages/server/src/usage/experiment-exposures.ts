import { bucketingIdentity, type EvaluationContext, type EvaluationReason } from '@vexil/engine';
import { userHash } from './user-hash.js';

/** Users (exposures and event senders, per experiment) held between two flushes; beyond, dropped. */
const MAX_HELD_USERS = 200_000;
/** Users per experiment whose exposure this process remembers having written (and when it was). */
const MAX_KNOWN_USERS = 200_000;
/**
 * Events of one user and metric held between two flushes; beyond, dropped (and counted): a user
 * sending more in one flush interval is a script, and the relay protocol bounds a row to it.
 */
export const MAX_EVENTS_PER_USER = 10_000;
/**
 * Flushes an event waits for its user's exposure to be stored (by another node, or in the same
 * flush window) before it is dropped as the event of a user never exposed.
 */
const MAX_WAITS = 2;

/** A metric of a running experiment, as the hot path needs it: which events it reads, and how. */
export interface ExperimentMetricReading {
  metricId: string;
  eventKey: string;
  /** The `metadata` member holding the event's number, or null (`conversion`, `count`). */
  valueProperty: string | null;
  /** Events count within this long after the user's first exposure (ms). */
  windowMs: number;
}

/**
 * A running experiment (contract `experiments.md`, section 3; design record 064), as a process
 * recording exposures needs it.
 */
export interface RunningExperiment {
  experimentId: string;
  environmentId: string;
  flagKey: string;
  metrics: ExperimentMetricReading[];
}

/** One user's first exposure to a running experiment, as stored: by the user's hash. */
export interface ExperimentExposureRow {
  experimentId: string;
  userHash: string;
  variation: string;
  exposedMs: number;
}

/**
 * One user's events of one experiment metric seen since the last flush: they count when they
 * came within the metric's window after the user's first exposure, which the store knows.
 */
export interface ExperimentEventRow {
  experimentId: string;
  metricId: string;
  userHash: string;
  /** Epoch ms of each event. */
  times: number[];
  /** Each event's number, in step with `times` (null: the property was missing or not finite). */
  values: (number | null)[];
  windowMs: number;
  /** Flushes this row has waited for its user's exposure to be stored. */
  waited: number;
}

/** Events of one user and metric that count: how many, how many held a number, their sum. */
export interface EventSums {
  events: number;
  withValue: number;
  valueSum: number;
}

/**
 * One user's events of one experiment metric, counted as they came: the user's stored first
 * exposure was known, so each event was judged against the metric's window on arrival. The
 * store adds them on the variation of the stored first exposure.
 */
export interface ExperimentCountRow extends EventSums {
  experimentId: string;
  metricId: string;
  userHash: string;
}

/** A user's first exposure to an experiment as stored (the earliest any process wrote). */
export interface StoredExposure {
  experimentId: string;
  userHash: string;
  exposedMs: number;
}

/** What a write of experiment rows answers. */
export interface ExperimentWrite {
  /** The event rows whose user has no stored exposure yet (they may wait a flush). */
  unmatched: ExperimentEventRow[];
  /**
   * The stored first exposures of the users the rows named, read after the write; empty where
   * the store cannot read them (a relay's, whose upstream judges the events).
   */
  stored: StoredExposure[];
}

/**
 * A user whose first exposure this process has written: a later exposure changes nothing. Once
 * the stored first exposure has been read back (`exposedMs`), the user's events are counted on
 * arrival (`counted`, per metric, since the last flush) instead of held until the flush.
 */
interface KnownUser {
  hash: string;
  exposedMs: number | null;
  counted: CountedEvents[] | null;
}

/** A user's events of one metric counted on arrival since the last flush. */
interface CountedEvents extends EventSums {
  metricId: string;
}

/** What this process holds of one running experiment's users, kept while it runs. */
interface TrackedExperiment {
  experimentId: string;
  /** identity → what this process knows of the user's stored exposure */
  known: Map<string, KnownUser>;
  /** The known users with events counted since the last flush. */
  counting: KnownUser[];
}

interface HeldExposure {
  variation: string;
  exposedMs: number;
}

/** A user's events of one metric since the last flush: times (epoch ms) and numbers, in step. */
type HeldEvents = Pick<ExperimentEventRow, 'times' | 'values'>;

/** One running experiment's metric, as the events intake meets it, with its held users. */
interface EventReading {
  experimentId: string;
  metric: ExperimentMetricReading;
  tracked: TrackedExperiment;
  /** identity → the user's events since the last flush, held for the store to judge */
  users: Map<string, HeldEvents>;
}

/**
 * Exposures and metric events of running experiments (contract `experiments.md`, section 3;
 * design record 064), held in memory between flushes as the guard's are (design record 046) and
 * written through the same `ExposureStore`. An exposure counts only when the experiment's
 * split served the user (reason `SPLIT`: the fallthrough's rollout, which is the experiment's
 * while it runs); an `Evaluation` event without a reason counts as one. The hot path costs a map
 * lookup per evaluated flag while an experiment runs in the environment, and nothing otherwise.
 */
export class ExperimentExposures {
  /** Whether any experiment runs; the record calls return at once when not. */
  active = false;
  /** environment id → flag key → experiment */
  private byFlag = new Map<string, Map<string, TrackedExperiment>>();
  /** environment id → event key → the running experiments' metrics reading it */
  private byEvent = new Map<string, Map<string, EventReading[]>>();
  /** Every reading of {@link byEvent}, for the flush. */
  private readings: EventReading[] = [];
  /** experiment id → identity → first exposure seen */
  private exposures = new Map<string, Map<string, HeldExposure>>();
  /** Event rows whose user had no stored exposure at the last flush. */
  private waiting: ExperimentEventRow[] = [];
  /** What relays saw (design record 045), by user hash, written with the next flush. */
  private relayedExposures: ExperimentExposureRow[] = [];
  private relayedEvents: ExperimentEventRow[] = [];
  private held = 0;
  /** experiment id → what this process holds of its users */
  private tracked = new Map<string, TrackedExperiment>();
  /** The running experiments, as last read. */
  private running: readonly RunningExperiment[] = [];
  /** Exposures and events dropped because {@link MAX_HELD_USERS} was reached. */
  dropped = 0;

  /** Notes that `context` was served `variation` of `flagKey` for `reason`, if an experiment runs on it. */
  recordEvaluation(
    environmentId: string,
    flagKey: string,
    variation: string,
    reason: EvaluationReason | undefined,
    context: EvaluationContext,
    atMs: number,
  ): void {
    const experiment = this.byFlag.get(environmentId)?.get(flagKey);
    if (experiment !== undefined && (reason === undefined || reason === 'SPLIT'))
      this.expose(experiment, variation, context, atMs);
  }

  /** Whether an experiment runs in the environment. */
  watches(environmentId: string): boolean {
    return this.byFlag.has(environmentId);
  }

  /** {@link recordEvaluation} for each result of one client evaluation. */
  recordEvaluations(
    environmentId: string,
    results: readonly { key: string; variation: string | null; reason?: EvaluationReason }[],
    context: EvaluationContext,
    atMs: number,
  ): void {
    const experiments = this.byFlag.get(environmentId);
    if (experiments === undefined) return;
    for (const { key, variation, reason } of results) {
      if (variation === null || reason !== 'SPLIT') continue;
      const experiment = experiments.get(key);
      if (experiment !== undefined) this.expose(experiment, variation, context, atMs);
    }
  }

  private expose(
    experiment: TrackedExperiment,
    variation: string,
    context: EvaluationContext,
    atMs: number,
  ): void {
    const identity = bucketingIdentity(context, null);
    if (identity === undefined || experiment.known.has(identity)) return;
    let users = this.exposures.get(experiment.experimentId);
    if (users === undefined) {
      users = new Map();
      this.exposures.set(experiment.experimentId, users);
    }
    const seen = users.get(identity);
    if (seen === undefined) {
      if (this.held >= MAX_HELD_USERS) {
        this.dropped += 1;
        return;
      }
      users.set(identity, { variation, exposedMs: atMs });
      this.held += 1;
    } else if (atMs < seen.exposedMs) {
      seen.variation = variation;
      seen.exposedMs = atMs;
    }
  }

  /**
   * Notes a `Custom` event `eventKey` from `identity` at `atMs`, for each running experiment
   * metric reading it: counted at once when the user's stored first exposure is known, else held
   * for the store to judge at the flush.
   */
  recordEvent(
    environmentId: string,
    eventKey: string,
    identity: string,
    metadata: unknown,
    atMs: number,
  ): void {
    const readings = this.byEvent.get(environmentId)?.get(eventKey);
    if (readings === undefined || identity === '') return;
    // An experiment's readings are adjacent: its user is looked up once.
    let tracked: TrackedExperiment | undefined;
    let user: KnownUser | undefined;
    for (const reading of readings) {
      if (reading.tracked !== tracked) {
        tracked = reading.tracked;
        user = tracked.known.get(identity);
      }
      const value = eventValue(metadata, reading.metric.valueProperty);
      // An event before the known first exposure is held: another process may yet store an
      // earlier one. After the window it never counts, as a first exposure only moves earlier.
      if (user !== undefined && user.exposedMs !== null && atMs >= user.exposedMs) {
        if (atMs <= user.exposedMs + reading.metric.windowMs) this.count(reading, user, value);
        continue;
      }
      let held = reading.users.get(identity);
      if (held === undefined) {
        if (this.held >= MAX_HELD_USERS) {
          this.dropped += 1;
          continue;
        }
        held = { times: [], values: [] };
        reading.users.set(identity, held);
        this.held += 1;
      }
      if (held.times.length >= MAX_EVENTS_PER_USER) {
        this.dropped += 1;
        continue;
      }
      held.times.push(atMs);
      held.values.push(value);
    }
  }

  private count(reading: EventReading, user: KnownUser, value: number | null): void {
    const { metricId } = reading.metric;
    if (user.counted === null) {
      if (this.held >= MAX_HELD_USERS) {
        this.dropped += 1;
        return;
      }
      user.counted = [];
      reading.tracked.counting.push(user);
      this.held += 1;
    }
    let sums: CountedEvents | undefined;
    for (const counted of user.counted) if (counted.metricId === metricId) sums = counted;
    if (sums === undefined) {
      sums = { metricId, events: 0, withValue: 0, valueSum: 0 };
      user.counted.push(sums);
    }
    if (sums.events >= MAX_EVENTS_PER_USER) {
      this.dropped += 1;
      return;
    }
    sums.events += 1;
    if (value === null) return;
    sums.withValue += 1;
    sums.valueSum += value;
  }

  /**
   * The running experiments, of the environments `covered` when given: what a relay covering them
   * is to record.
   */
  runningIn(covered?: ReadonlySet<string>): RunningExperiment[] {
    return covered === undefined
      ? [...this.running]
      : this.running.filter((experiment) => covered.has(experiment.environmentId));
  }

  /**
   * Adds rows a relay saw, written with the next flush beside this process's own; rows of
   * experiments this process does not know as running are dropped.
   */
  addRelayed(
    exposures: readonly ExperimentExposureRow[],
    events: readonly Omit<ExperimentEventRow, 'waited'>[],
  ): void {
    const running = new Set(this.running.map((experiment) => experiment.experimentId));
    for (const row of [...exposures, ...events]) {
      if (!running.has(row.experimentId)) continue;
      if (this.held >= MAX_HELD_USERS) {
        this.dropped += 1;
        continue;
      }
      this.held += 1;
      if ('variation' in row) this.relayedExposures.push(row);
      else this.relayedEvents.push({ ...row, waited: 0 });
    }
  }

  /** Takes the running experiments, as last read. */
  update(experiments: readonly RunningExperiment[]): void {
    this.running = experiments;
    const heldUsers = new Map(
      this.readings.map((reading) => [readingKey(reading), reading.users] as const),
    );
    const byFlag = new Map<string, Map<string, TrackedExperiment>>();
    const byEvent = new Map<string, Map<string, EventReading[]>>();
    const readings: EventReading[] = [];
    const trackedById = new Map<string, TrackedExperiment>();
    for (const experiment of experiments) {
      const { experimentId, environmentId } = experiment;
      const tracked = this.tracked.get(experimentId) ?? {
        experimentId,
        known: new Map<string, KnownUser>(),
        counting: [],
      };
      trackedById.set(experimentId, tracked);
      const flags = byFlag.get(environmentId) ?? new Map<string, TrackedExperiment>();
      flags.set(experiment.flagKey, tracked);
      byFlag.set(environmentId, flags);
      const events = byEvent.get(environmentId) ?? new Map<string, EventReading[]>();
      for (const metric of experiment.metrics) {
        const reading: EventReading = { experimentId, metric, tracked, users: new Map() };
        reading.users = heldUsers.get(readingKey(reading)) ?? reading.users;
        readings.push(reading);
        events.set(metric.eventKey, [...(events.get(metric.eventKey) ?? []), reading]);
      }
      byEvent.set(environmentId, events);
    }
    this.byFlag = byFlag;
    this.byEvent = byEvent;
    this.readings = readings;
    // Experiments no longer running are forgotten.
    this.tracked = trackedById;
    this.active = experiments.length > 0;
  }

  /**
   * Writes what was seen since the last flush: exposures first, then events, which count only
   * for users with a stored exposure. Events of users without one wait up to {@link MAX_WAITS}
   * flushes (their exposure may be in another node's next flush). The stored first exposures
   * read back are remembered, so those users' next events are counted on arrival. A failed write
   * keeps nothing.
   */
  async flush(
    write: (
      exposures: ExperimentExposureRow[],
      events: ExperimentEventRow[],
      counts: ExperimentCountRow[],
    ) => Promise<ExperimentWrite>,
  ): Promise<void> {
    const exposures = this.exposures;
    // This process's users by hash, to remember what the store answers; each hashed once.
    const identities = new Map<string, string>();
    const hashOf = (identity: string, known?: Map<string, KnownUser>) => {
      const hash = known?.get(identity)?.hash ?? userHash(identity);
      identities.set(hash, identity);
      return hash;
    };
    const events: ExperimentEventRow[] = [];
    for (const reading of this.readings) {
      const { experimentId, metric, tracked } = reading;
      for (const [identity, held] of reading.users)
        events.push({
          experimentId,
          metricId: metric.metricId,
          userHash: hashOf(identity, tracked.known),
          times: held.times,
          values: held.values,
          windowMs: metric.windowMs,
          waited: 0,
        });
      reading.users = new Map();
    }
    const counts: ExperimentCountRow[] = [];
    /** `experiment\0hash` → the known user whose events were counted on arrival */
    const countingUsers = new Map<string, KnownUser>();
    for (const { experimentId, counting } of this.tracked.values()) {
      for (const user of counting) {
        countingUsers.set(`${experimentId}\u0000${user.hash}`, user);
        for (const sums of user.counted ?? [])
          counts.push({ experimentId, userHash: user.hash, ...sums });
        user.counted = null;
      }
      counting.length = 0;
    }
    const taken = [...this.waiting, ...this.relayedEvents];
    const relayedExposures = this.relayedExposures;
    this.exposures = new Map();
    this.waiting = [];
    this.relayedExposures = [];
    this.relayedEvents = [];
    this.held = 0;
    if (
      exposures.size === 0 &&
      events.length === 0 &&
      counts.length === 0 &&
      taken.length === 0 &&
      relayedExposures.length === 0
    )
      return;
    // One row per experiment and user: an upsert statement may not name a row twice.
    const exposureRows = new Map<string, ExperimentExposureRow>();
    const addExposure = (row: ExperimentExposureRow) => {
      const key = `${row.experimentId}\u0000${row.userHash}`;
      const seen = exposureRows.get(key);
      if (seen === undefined || row.exposedMs < seen.exposedMs) exposureRows.set(key, row);
    };
    for (const row of relayedExposures) addExposure(row);
    for (const [experimentId, users] of exposures)
      for (const [identity, { variation, exposedMs }] of users)
        addExposure({ experimentId, userHash: hashOf(identity), variation, exposedMs });
    const eventRows = new Map<string, ExperimentEventRow>();
    // Every row here is this process's own (held, waiting, or parsed from a relay's body), so
    // rows of one user and metric merge into the first in place.
    for (const row of [...taken, ...events]) {
      const key = `${row.experimentId}\u0000${row.metricId}\u0000${row.userHash}`;
      const seen = eventRows.get(key);
      if (seen === undefined) eventRows.set(key, row);
      else {
        seen.times.push(...row.times);
        seen.values.push(...row.values);
      }
    }
    const { unmatched, stored } = await write(
      [...exposureRows.values()],
      [...eventRows.values()],
      counts,
    );
    this.waiting = unmatched
      .filter((row) => row.waited < MAX_WAITS)
      .map((row) => ({ ...row, waited: row.waited + 1 }));
    for (const [experimentId, users] of exposures) {
      const known = this.tracked.get(experimentId)?.known;
      if (known === undefined) continue;
      for (const identity of users.keys())
        if (known.size < MAX_KNOWN_USERS && !known.has(identity))
          known.set(identity, { hash: hashOf(identity), exposedMs: null, counted: null });
    }
    for (const { experimentId, userHash: hash, exposedMs } of stored) {
      const counting = countingUsers.get(`${experimentId}\u0000${hash}`);
      if (counting !== undefined) {
        counting.exposedMs = exposedMs;
        continue;
      }
      const identity = identities.get(hash);
      const known = this.tracked.get(experimentId)?.known;
      if (identity === undefined || known === undefined) continue;
      const user = known.get(identity);
      if (user !== undefined) user.exposedMs = exposedMs;
      else if (known.size < MAX_KNOWN_USERS)
        known.set(identity, { hash, exposedMs, counted: null });
    }
  }
}

/** The number an event holds in `property` of its metadata; null when missing or not finite. */
function eventValue(metadata: unknown, property: string | null): number | null {
  if (property === null || typeof metadata !== 'object' || metadata === null) return null;
  const value = (metadata as Record<string, unknown>)[property];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function readingKey(reading: Pick<EventReading, 'experimentId' | 'metric'>): string {
  return `${reading.experimentId}\u0000${reading.metric.metricId}`;
}
