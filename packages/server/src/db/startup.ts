import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from './availability.js';

/** How often a node started without its database tries again (ms). */
const RETRY_INTERVAL_MS = 2_000;

/**
 * Prepares the database a node needs (migrations applied, stored secrets sealed) without making
 * it a condition of serving (design record 019): when the database cannot be reached at start,
 * the node starts all the same, serves evaluations from what it holds (its snapshot copies on
 * disk), answers management requests with 503, and keeps trying in the background.
 */
export class DatabaseStartup {
  private prepared = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly prepare: () => Promise<void>,
    private readonly log: Pick<FastifyBaseLogger, 'warn' | 'info' | 'error'>,
  ) {}

  /** Whether the database has been prepared: until then the management API answers 503. */
  get ready(): boolean {
    return this.prepared;
  }

  /**
   * Tries once; on success calls `onReady` at once. When the database is unreachable, returns
   * and keeps trying every {@link RETRY_INTERVAL_MS}, calling `onReady` once it succeeds.
   * @throws any other failure (a migration that fails, a wrong secrets key): a node must not
   *   serve from a database it cannot use
   */
  async start(onReady: () => void): Promise<void> {
    try {
      await this.prepare();
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      this.log.warn(
        { err: error },
        'database unavailable at start: serving evaluations from snapshot copies, management API answers 503; retrying',
      );
      this.retry(onReady);
      return;
    }
    this.prepared = true;
    onReady();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private retry(onReady: () => void): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.prepare().then(
        () => {
          if (this.stopped) return;
          this.prepared = true;
          this.log.info('database available: switching from snapshot copies to the database');
          onReady();
        },
        (error: unknown) => {
          if (!isDatabaseUnavailable(error))
            this.log.error({ err: error }, 'database preparation failed; retrying');
          this.retry(onReady);
        },
      );
    }, RETRY_INTERVAL_MS);
    this.timer.unref();
  }
}
