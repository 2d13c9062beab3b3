import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { isDatabaseUnavailable } from '../db/availability.js';

/** How often each node looks for work that has fallen due (ms); the contract allows 5 s. */
export const DUE_WORK_INTERVAL_MS = 1_000;

type Logger = Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;

/**
 * Work that falls due at a time stored in the database: a scheduled change request, a release
 * plan's next step (design record 041). Every node with the worker role runs every kind on each
 * pass, so `run` must claim what it does: inside the transaction that does the work, a
 * conditional update from the due state (`… WHERE id = ? AND state = 'scheduled'`) that goes
 * ahead only when it changed one row. Two nodes passing at once then do the work exactly once,
 * and a node that dies mid-way leaves the row due for the next pass.
 */
export interface DueWork {
  /** Names the work in logs, e.g. `scheduled change requests`. */
  readonly name: string;
  /**
   * Does what is due at `now` and returns how many items it did. Throws only when it could not
   * look (a database error): the failure of one item is that item's business (recorded on it).
   */
  run(now: Date): Promise<number>;
}

/**
 * Runs every registered {@link DueWork} once a second on the nodes with the worker role. The
 * schedule lives in the database, not in a timer, so it survives restarts: an overdue item is
 * done by the first pass of the first node that can (spec: change requests, section 3).
 */
export class DueWorkRunner {
  private readonly works: DueWork[] = [];
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;
  private running = false;
  /** Kinds whose last pass failed because the database is unreachable: said once, not each second. */
  private readonly paused = new Set<string>();

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly intervalMs = DUE_WORK_INTERVAL_MS,
  ) {}

  /** Adds a kind of work; registered before {@link start}. */
  register(work: DueWork): void {
    this.works.push(work);
  }

  /** Starts passing in the background. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  /** Stops passing and waits for the pass in flight. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.pass;
  }

  /**
   * One pass over every kind at the clock's `now`; tests call it instead of waiting. A kind that
   * fails is logged and does not stop the others.
   */
  async runOnce(): Promise<void> {
    const now = this.clock.now();
    for (const work of this.works) {
      try {
        await work.run(now);
        if (this.paused.delete(work.name))
          this.log.info({ work: work.name }, 'due work resumed: the database answers again');
      } catch (error) {
        if (!isDatabaseUnavailable(error))
          this.log.error({ err: error, work: work.name }, 'due work pass failed; retrying');
        else if (!this.paused.has(work.name))
          this.log.warn({ err: error, work: work.name }, 'due work paused: database unavailable');
        if (isDatabaseUnavailable(error)) this.paused.add(work.name);
      }
    }
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.pass = this.runOnce().finally(() => {
        this.pass = null;
        this.schedule(this.intervalMs);
      });
    }, delayMs);
    this.timer.unref();
  }
}
