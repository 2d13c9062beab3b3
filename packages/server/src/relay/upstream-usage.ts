import { schemaCompiler } from '../http/schema-validator.js';
import type { Clock } from '../clock.js';
import type { UsageBatch, UsageStore } from '../usage/aggregator.js';
import {
  MAX_EVENTS_PER_USER,
  type ExperimentEventRow,
  type ExperimentExposureRow,
  type ExperimentWrite,
  type RunningExperiment,
} from '../usage/experiment-exposures.js';
import type { ActiveGuardedPlan, ExposureRow, ExposureStore } from '../usage/exposures.js';
import {
  MAX_RELAY_USAGE_ROWS,
  RELAY_USAGE_PATH,
  RelayUsageResponse,
  type RelayUsageBody,
} from '../relay-feed/protocol.js';

const validateAnswer = schemaCompiler({ coerceTypes: false, useDefaults: false })(
  RelayUsageResponse,
);

/** How long a failed send waits before the next at most (ms); it doubles from the flush interval. */
const MAX_BACKOFF_MS = 5 * 60_000;

/** A flush skipped while the upstream is backed off: counts wait, nothing is logged again. */
export class UpstreamBackingOff extends Error {}

/**
 * A relay's usage store (design record 044): each flush of its aggregator is sent to the
 * upstream's `POST /v1/relay/usage` (in bodies of at most {@link MAX_RELAY_USAGE_ROWS} rows of
 * each kind), where it is added into the upstream's counts as direct SDK traffic would be, so
 * the archive guard, removal candidates and usage charts count relay traffic. Events received on
 * the relay were checked and counted there exactly as the upstream's intake would, so they go up
 * as counts too. A failed send keeps the counts in the aggregator (bounded: past the bound they
 * are dropped and counted as `overflow` discards) and backs off, doubling up to
 * {@link MAX_BACKOFF_MS}; an answer that refuses the batch itself (4xx but 429) drops it and
 * counts it in {@link refusedCounts}.
 *
 * It is the relay's exposure store too (design record 045): the upstream's answers name the
 * active guarded release plans of the key's environments, which the relay's `ExposureRecorder`
 * records exposures of, and whose rows go up in bodies of their own after the counts.
 */
export class UpstreamUsageStore implements UsageStore, ExposureStore {
  private failures = 0;
  private retryAtMs = 0;
  /** The guarded plans the upstream named last; none until it has answered a flush. */
  private plans: ActiveGuardedPlan[] = [];
  /** The running experiments the upstream named last. */
  private experiments: RunningExperiment[] = [];
  /** Counts the upstream refused (evaluations and custom events), for `/metrics`. */
  refusedCounts = 0;

  constructor(
    private readonly options: {
      upstreamUrl: string;
      relayKey: string;
      /** The aggregator's flush interval: the first back-off (ms). */
      intervalMs: number;
      /** When a failed flush may be retried is reckoned on it. */
      clock: Clock;
      onRefused: (status: number, detail: string) => void;
    },
  ) {}

  write(batch: UsageBatch): Promise<void> {
    return this.sendAll(usageBodies(batch));
  }

  activePlans(): Promise<ActiveGuardedPlan[]> {
    return Promise.resolve(this.plans);
  }

  async writeExposures(rows: ExposureRow[]): Promise<ReadonlySet<string>> {
    await this.sendAll(exposureBodies(rows));
    // The upstream drops rows of plans it no longer has; each is sent once either way.
    return new Set(rows.map((row) => row.planId));
  }

  runningExperiments(): Promise<RunningExperiment[]> {
    return Promise.resolve(this.experiments);
  }

  /**
   * Sends the rows upstream, where they are counted as the upstream's own (design record 064):
   * the upstream holds events whose user's exposure it has not stored yet, so none wait here.
   * A relay reads no stored exposures, so its events are never counted on arrival and `counts`
   * is always empty.
   */
  async writeExperimentRows(
    exposures: ExperimentExposureRow[],
    events: ExperimentEventRow[],
  ): Promise<ExperimentWrite> {
    await this.sendAll(experimentBodies(exposures, events));
    return { unmatched: [], stored: [] };
  }

  /** Sends `bodies` in order, unless backed off; a failure backs off and throws. */
  private async sendAll(bodies: Iterable<RelayUsageBody>): Promise<void> {
    const nowMs = this.options.clock.now().getTime();
    if (nowMs < this.retryAtMs)
      throw new UpstreamBackingOff('usage not sent: the upstream is backed off');
    try {
      for (const body of bodies) await this.send(body);
      this.failures = 0;
    } catch (error) {
      this.failures += 1;
      const delay = Math.min(MAX_BACKOFF_MS, this.options.intervalMs * 2 ** this.failures);
      this.retryAtMs = this.options.clock.now().getTime() + delay;
      throw error;
    }
  }

  /** Nothing is kept on a relay: its upstream prunes. */
  prune(): Promise<number> {
    return Promise.resolve(0);
  }

  private async send(body: RelayUsageBody): Promise<void> {
    const response = await fetch(new URL(`/v1${RELAY_USAGE_PATH}`, this.options.upstreamUrl), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.options.relayKey}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
      // Well within VEXIL_SHUTDOWN_TIMEOUT: the last flush on SIGTERM must not hold the exit.
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (response.ok) {
      const answer = usageAnswer(response.status, text);
      this.plans = answer.plans;
      this.experiments = answer.experiments ?? [];
      return;
    }
    if (response.status >= 400 && response.status < 500 && response.status !== 429) {
      // Retrying would be refused again: the batch is dropped, and said so.
      this.refusedCounts +=
        body.evaluations.reduce((sum, row) => sum + row.count, 0) +
        body.customEvents.reduce((sum, row) => sum + row.count, 0);
      this.options.onRefused(response.status, text);
      return;
    }
    throw new Error(`the upstream answered ${response.status} to the usage sent: ${text}`);
  }
}

/**
 * The guarded plans and running experiments an answer names: none in a 204 (an upstream of a
 * version without exposures from relays), nor in an answer this relay cannot read.
 */
function usageAnswer(status: number, text: string): RelayUsageResponse {
  if (status !== 200) return { plans: [] };
  try {
    const answer: unknown = JSON.parse(text);
    return validateAnswer(answer) ? (answer as RelayUsageResponse) : { plans: [] };
  } catch {
    return { plans: [] };
  }
}

/** Experiment rows as protocol bodies of their own, at most {@link MAX_RELAY_USAGE_ROWS} of each kind. */
function* experimentBodies(
  exposures: ExperimentExposureRow[],
  events: ExperimentEventRow[],
): Generator<RelayUsageBody> {
  const rows = Math.max(exposures.length, events.length);
  for (let start = 0; start < rows; start += MAX_RELAY_USAGE_ROWS) {
    const end = start + MAX_RELAY_USAGE_ROWS;
    yield {
      evaluations: [],
      customEvents: [],
      keyUses: [],
      experimentExposures: exposures.slice(start, end),
      experimentEvents: events
        .slice(start, end)
        // A relay in a chain merges its own events with its relays': the protocol's bound holds.
        .map(({ experimentId, metricId, userHash, times, values, windowMs }) => ({
          experimentId,
          metricId,
          userHash,
          times: times.slice(0, MAX_EVENTS_PER_USER),
          values: values.slice(0, MAX_EVENTS_PER_USER),
          windowMs,
        })),
    };
  }
}

/** Exposure rows as protocol bodies of their own, at most {@link MAX_RELAY_USAGE_ROWS} each. */
function* exposureBodies(rows: ExposureRow[]): Generator<RelayUsageBody> {
  for (let start = 0; start < rows.length; start += MAX_RELAY_USAGE_ROWS)
    yield {
      evaluations: [],
      customEvents: [],
      keyUses: [],
      exposures: rows.slice(start, start + MAX_RELAY_USAGE_ROWS).map((row) => ({
        ...row,
        side: row.side === 1 ? 1 : row.side === 0 ? 0 : null,
      })),
    };
}

/** A batch as protocol bodies, at most {@link MAX_RELAY_USAGE_ROWS} rows of each kind in each. */
function* usageBodies(batch: UsageBatch): Generator<RelayUsageBody> {
  const evaluations: RelayUsageBody['evaluations'] = [];
  for (const [environmentId, flags] of batch.evaluations)
    for (const [flagKey, buckets] of flags)
      for (const bucket of buckets.values())
        evaluations.push({
          environmentId,
          flagKey,
          variation: bucket.variationKey,
          hourMs: bucket.hourMs,
          count: bucket.count,
          lastAtMs: bucket.lastMs,
        });
  const customEvents: RelayUsageBody['customEvents'] = [];
  for (const [environmentId, buckets] of batch.customEvents)
    for (const bucket of buckets.values())
      customEvents.push({
        environmentId,
        eventKey: bucket.eventKey,
        hourMs: bucket.hourMs,
        count: bucket.count,
      });
  const keyUses = [...batch.lastUses.sdk_keys].map(([keyId, atMs]) => ({ keyId, atMs }));
  const rows = Math.max(evaluations.length, customEvents.length, keyUses.length);
  for (let start = 0; start < rows; start += MAX_RELAY_USAGE_ROWS) {
    const end = start + MAX_RELAY_USAGE_ROWS;
    yield {
      evaluations: evaluations.slice(start, end),
      customEvents: customEvents.slice(start, end),
      keyUses: keyUses.slice(start, end),
    };
  }
}
