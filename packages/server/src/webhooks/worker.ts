import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from 'undici';
import { v7 as uuid } from 'uuid';
import { isDatabaseUnavailable } from '../db/availability.js';
import type { WebhookDeliveriesTable } from '../db/schema.js';
import type { Services } from '../services.js';
import { createGuardedAgent } from '../http/safe-target.js';
import { traceAttempt } from './attempt-span.js';
import { sendAttempt, type AttemptOutcome } from './sender.js';
import { deliveryHeaders } from './signing.js';

/** A run of this many dead-lettered deliveries in a row disables a subscription (spec: Limits). */
export const AUTO_DISABLE_AFTER = 20;

/** How long past the attempt time-out a lease lasts, covering the bookkeeping around it. */
const LEASE_MARGIN_MS = 5_000;
/** Deliveries claimed per pass. */
const BATCH_SIZE = 20;
/** How often finished deliveries past their retention are removed. */
const PRUNE_INTERVAL_MS = 60 * 60_000;
/** Deliveries removed per statement, so that no prune holds its locks for long. */
const PRUNE_BATCH_SIZE = 1_000;

type Logger = Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;

/**
 * The webhook delivery worker (spec: Webhook delivery status; design record 005). The delivery
 * table is the queue: each pass claims due `Pending` deliveries with a lease, sends one signed
 * attempt per delivery, and records the outcome. No transaction is held across the HTTP call;
 * a worker that dies mid-attempt leaves a lease that expires, and another worker retries
 * (at-least-once delivery, deduplicated by receivers through `webhook-id`). A commit that queues
 * deliveries wakes the worker ({@link wake}); polling finds retries as they fall due. Once an
 * hour a pass also removes the deliveries finished longer ago than their retention ({@link prune}).
 */
export class DeliveryWorker {
  /** Identifies this worker's leases. */
  readonly owner = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  private readonly agent: Agent;
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<number> | null = null;
  /** Set by a wake-up during a pass: deliveries may have been queued after its claim. */
  private passAgain = false;
  /** Set while passes fail because the database is unreachable (design record 019). */
  private paused = false;
  /** When the next pass prunes the delivery log (epoch ms): an hour after start, then hourly. */
  private nextPruneAtMs = 0;

  constructor(
    private readonly services: Services,
    private readonly log: Logger,
  ) {
    this.agent = createGuardedAgent(services.config.webhooks);
  }

  /** Starts polling in the background. The loop logs database errors and keeps going. */
  start(): void {
    if (this.running) return;
    if (this.services.config.webhooks.allowPrivateTargets) {
      this.log.warn(
        'VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhooks may target http:// and private-network addresses. Never use this in production.',
      );
    }
    this.running = true;
    // Not at start-up: a node starting adds no delete to its first second.
    this.nextPruneAtMs = this.services.clock.now().getTime() + PRUNE_INTERVAL_MS;
    this.schedule(0);
  }

  /** Stops polling, waits for the pass in flight to finish recording, and closes connections. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.pass;
    await this.agent.close();
  }

  /** Runs a pass now instead of at the next poll: deliveries have just been queued. */
  wake(): void {
    if (!this.running) return;
    if (this.pass) {
      this.passAgain = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.schedule(0);
  }

  /**
   * One pass: claims up to a batch of due deliveries and attempts each once, concurrently.
   * @returns how many deliveries were claimed.
   * @throws when claiming fails (a database error); failures of single deliveries are logged.
   */
  async runOnce(): Promise<number> {
    const claimed = await this.claim();
    await Promise.all(
      claimed.map((delivery) =>
        this.attempt(delivery).catch((error: unknown) =>
          this.log.error(
            { err: error, deliveryId: delivery.id },
            'webhook attempt failed to record',
          ),
        ),
      ),
    );
    return claimed.length;
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  /**
   * Removes the deliveries, with their attempts, whose last attempt finished longer ago than
   * `VEXIL_WEBHOOK_DELIVERY_RETENTION`. Pending deliveries stay, as do all events (the audit log).
   * @returns how many deliveries were removed
   */
  async prune(): Promise<number> {
    const { db, clock, config } = this.services;
    const cutoff = new Date(
      clock.now().getTime() - config.webhooks.deliveryRetentionMs,
    ).toISOString();
    let removed = 0;
    for (;;) {
      const result = await db
        .deleteFrom('webhook_deliveries')
        .where('id', 'in', (eb) =>
          eb
            .selectFrom('webhook_deliveries')
            .select('id')
            // Set when a delivery finishes; a redelivery clears it.
            .where('completed_at', '<', cutoff)
            .limit(PRUNE_BATCH_SIZE),
        )
        .executeTakeFirst();
      const count = Number(result.numDeletedRows);
      removed += count;
      if (count < PRUNE_BATCH_SIZE) return removed;
    }
  }

  private async pruneWhenDue(): Promise<void> {
    const nowMs = this.services.clock.now().getTime();
    if (nowMs < this.nextPruneAtMs) return;
    this.nextPruneAtMs = nowMs + PRUNE_INTERVAL_MS;
    await this.prune().catch((error: unknown) =>
      this.log.error({ err: error }, 'webhook delivery log pruning failed; retrying in an hour'),
    );
  }

  private async tick(): Promise<void> {
    this.pass = this.runOnce()
      .then((claimed) => {
        if (this.paused) this.log.info('webhook worker resumed: the database answers again');
        this.paused = false;
        return claimed;
      })
      .catch((error: unknown) => {
        // An outage pauses the worker, said once; it resumes with the first pass that claims.
        if (!isDatabaseUnavailable(error))
          this.log.error({ err: error }, 'webhook worker pass failed; retrying');
        else if (!this.paused)
          this.log.warn({ err: error }, 'webhook worker paused: database unavailable');
        this.paused ||= isDatabaseUnavailable(error);
        return 0;
      })
      .then(async (claimed) => {
        await this.pruneWhenDue();
        return claimed;
      });
    const claimed = await this.pass;
    this.pass = null;
    // A full batch suggests a backlog: go again at once, as after a wake-up during the pass.
    const again = claimed >= BATCH_SIZE || this.passAgain;
    this.passAgain = false;
    this.schedule(again ? 0 : this.services.config.webhooks.pollIntervalMs);
  }

  /**
   * Leases due deliveries: `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING *`
   * on PostgreSQL, so concurrent workers never take the same row; SQLite runs the same single
   * statement atomically without the lock clause.
   */
  private async claim(): Promise<WebhookDeliveriesTable[]> {
    const { db, dialect, clock, config } = this.services;
    const now = clock.now();
    const nowIso = now.toISOString();
    const leaseUntil = new Date(
      now.getTime() + config.webhooks.timeoutMs + LEASE_MARGIN_MS,
    ).toISOString();
    return db
      .updateTable('webhook_deliveries')
      .set({ lease_until: leaseUntil, lease_owner: this.owner })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('status', '=', 'Pending')
          .where('next_attempt_at', '<=', nowIso)
          .where((inner) =>
            inner.or([inner('lease_until', 'is', null), inner('lease_until', '<', nowIso)]),
          )
          .orderBy('next_attempt_at')
          .limit(BATCH_SIZE)
          .$if(dialect === 'postgres', (q) => q.forUpdate().skipLocked()),
      )
      .returningAll()
      .execute();
  }

  /** Sends one attempt of a leased delivery and records it. */
  private async attempt(delivery: WebhookDeliveriesTable): Promise<void> {
    const { db, clock, config, signingSecrets } = this.services;
    const event = await db
      .selectFrom('webhook_events')
      .select(['id', 'type', 'payload'])
      .where('id', '=', delivery.event_id)
      .executeTakeFirstOrThrow();
    const subscription = await db
      .selectFrom('webhook_subscriptions')
      .select(['id', 'url'])
      .where('id', '=', delivery.subscription_id)
      .executeTakeFirstOrThrow();
    const secrets = await db
      .selectFrom('webhook_secrets')
      .select(['id', 'secret'])
      .where('subscription_id', '=', subscription.id)
      .where('retired_at', 'is', null)
      .orderBy('created_at')
      .execute();

    const sentAt = clock.now();
    const outcome: AttemptOutcome =
      secrets.length === 0
        ? {
            statusCode: null,
            error: 'the subscription has no active signing secret',
            durationMs: 0,
          }
        : await traceAttempt(
            { delivery, eventType: event.type, url: subscription.url },
            (traceparent) =>
              sendAttempt(
                this.agent,
                subscription.url,
                {
                  ...deliveryHeaders(
                    event.id,
                    sentAt,
                    event.payload,
                    secrets.map((row) => signingSecrets.open(row.id, row.secret)),
                  ),
                  ...traceparent,
                },
                event.payload,
                config.webhooks.timeoutMs,
              ),
          );
    await this.record(delivery, sentAt, outcome);
  }

  /**
   * Records an attempt and moves the delivery on: 2xx → `Succeeded`; otherwise `Pending` with
   * the next retry per the schedule, or `DeadLettered` after the last attempt, which counts as
   * one failed delivery round for auto-disabling.
   */
  private async record(
    delivery: WebhookDeliveriesTable,
    sentAt: Date,
    outcome: AttemptOutcome,
  ): Promise<void> {
    const { db, clock, config } = this.services;
    const schedule = config.webhooks.retryScheduleMs;
    const attemptCount = delivery.attempt_count + 1;
    const succeeded =
      outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
    const retryDelay = schedule[attemptCount - 1];
    const status = succeeded ? 'Succeeded' : retryDelay === undefined ? 'DeadLettered' : 'Pending';
    const now = clock.now().toISOString();

    await db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('webhook_deliveries')
        .set({
          status,
          attempt_count: attemptCount,
          next_attempt_at:
            status === 'Pending'
              ? new Date(sentAt.getTime() + (retryDelay ?? 0)).toISOString()
              : delivery.next_attempt_at,
          last_response_status_code: outcome.statusCode,
          last_error: outcome.error,
          completed_at: status === 'Pending' ? null : now,
          lease_until: null,
          lease_owner: null,
        })
        .where('id', '=', delivery.id)
        .where('lease_owner', '=', this.owner)
        .where('status', '=', 'Pending')
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0) {
        // The lease ran out and another worker took over, or the subscription was deleted.
        this.log.warn(
          { deliveryId: delivery.id },
          'webhook delivery lease lost; attempt not recorded',
        );
        return;
      }
      await trx
        .insertInto('webhook_attempts')
        .values({
          id: uuid(),
          delivery_id: delivery.id,
          attempt_number: attemptCount,
          attempted_at: sentAt.toISOString(),
          response_status_code: outcome.statusCode,
          duration_ms: outcome.durationMs,
          error: outcome.error,
        })
        .execute();
      if (status === 'Succeeded') {
        await trx
          .updateTable('webhook_subscriptions')
          .set({ consecutive_failures: 0 })
          .where('id', '=', delivery.subscription_id)
          .where('consecutive_failures', '>', 0)
          .execute();
      } else if (status === 'DeadLettered') {
        await trx
          .updateTable('webhook_subscriptions')
          .set((eb) => ({ consecutive_failures: eb('consecutive_failures', '+', 1) }))
          .where('id', '=', delivery.subscription_id)
          .execute();
        await trx
          .updateTable('webhook_subscriptions')
          .set({
            enabled: 0,
            disabled_reason: `disabled automatically after ${AUTO_DISABLE_AFTER} dead-lettered deliveries in a row`,
            updated_at: now,
          })
          .where('id', '=', delivery.subscription_id)
          .where('enabled', '=', 1)
          .where('consecutive_failures', '>=', AUTO_DISABLE_AFTER)
          .execute();
      }
    });
  }
}
