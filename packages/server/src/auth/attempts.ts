import { Redis } from 'ioredis';
import { sql } from 'kysely';
import {
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRedis,
  RateLimiterRes,
  RateLimiterSQLite,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Database } from '../db/database.js';
import { ApiError } from '../errors.js';

/** A client IP may make this many times the per-address allowance (many people share one NAT). */
const IP_ALLOWANCE = 10;

/** How often counts past their window are deleted from the database (ms). */
const PRUNE_INTERVAL_MS = 5 * 60_000;

/** What is being tried: a password (sign-in, or the current one to change it), or reset mails. */
export type AttemptKind = 'password' | 'reset';

/**
 * Attempts at a password, or at sending reset mails, counted per e-mail address and per client IP
 * (design record 034). Each attempt is counted before it is checked, in one atomic write to a
 * store every node shares: Redis when `VEXIL_REDIS_URL` is set (per-node memory while it is
 * unreachable, as the management limits), the database otherwise. So parallel attempts cannot
 * pass the limit (issue 31, finding 3).
 */
export class AttemptCounter {
  constructor(
    private readonly perAddress: RateLimiterAbstract,
    private readonly perIp: RateLimiterAbstract,
    /** Runs a store call where it may use the database's driver directly (see `Database.driver`). */
    private readonly exclusive: <T>(call: () => Promise<T>) => Promise<T>,
    /** Ends what the store holds: a Redis connection, or the pruning of the database table. */
    private readonly release: () => void,
  ) {}

  /**
   * Counts one attempt of `kind` for `email` (lower-case) from `ip`.
   * @throws ApiError `rate_limited` (429, with `retryAfter`) when either has no attempts left.
   */
  async take(kind: AttemptKind, email: string, ip: string): Promise<void> {
    for (const [limiter, key] of [
      [this.perAddress, `${kind}:${email}`],
      [this.perIp, `${kind}:${ip}`],
    ] as const) {
      try {
        await this.exclusive(() => limiter.consume(key));
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        throw new ApiError('rate_limited', `Too many attempts. Retry in ${retryAfter} s.`, {
          retryAfter,
        });
      }
    }
  }

  /** After a correct password: the address starts afresh (its IP's count stays). */
  async forgive(kind: AttemptKind, email: string): Promise<void> {
    await this.exclusive(() => this.perAddress.delete(`${kind}:${email}`));
  }

  /** Releases the Redis connection, or stops pruning the database table. */
  close(): void {
    this.release();
  }
}

/**
 * The attempt counter for `attempts.points` per address and ten times as many per IP in each
 * window, in Redis at `redisUrl` or else in `database` (table `password_attempts`, migration 0009).
 */
export function createAttemptCounter(
  attempts: { points: number; windowSeconds: number },
  database: Database,
  redisUrl: string | null,
): AttemptCounter {
  const { points, windowSeconds: duration } = attempts;
  const perAddress = { keyPrefix: 'address', points, duration };
  const perIp = { keyPrefix: 'ip', points: points * IP_ALLOWANCE, duration };
  if (redisUrl) {
    // No offline queue: while Redis is away a count fails at once and memory counts instead.
    // Its unavailability is logged by the management limiter, which uses the same Redis.
    const client = new Redis(redisUrl, { enableOfflineQueue: false });
    client.on('error', () => undefined);
    const inRedis = (limit: typeof perIp) =>
      new RateLimiterRedis({
        ...limit,
        storeClient: client,
        keyPrefix: `vexil:attempts:${limit.keyPrefix}`,
        insuranceLimiter: new RateLimiterMemory(limit),
      });
    return new AttemptCounter(
      inRedis(perAddress),
      inRedis(perIp),
      (call) => call(),
      () => client.disconnect(),
    );
  }
  const { driver, db } = database;
  const inDatabase = (limit: typeof perIp) => {
    const options = {
      ...limit,
      tableName: 'password_attempts',
      tableCreated: true,
      // Pruned below, through Kysely, rather than by the store's own timer on the driver.
      clearExpiredByTimeout: false,
    };
    return driver.dialect === 'sqlite'
      ? new RateLimiterSQLite({
          ...options,
          storeClient: driver.sqlite,
          storeType: 'better-sqlite3',
        })
      : new RateLimiterPostgres({ ...options, storeClient: driver.pool, storeType: 'pool' });
  };
  const prune = setInterval(() => {
    sql`DELETE FROM password_attempts WHERE expire < ${Date.now()}`
      .execute(db)
      .catch(() => undefined);
  }, PRUNE_INTERVAL_MS).unref();
  // On SQLite the store writes through Kysely's one connection: while holding it, so that the
  // count is never folded into a Kysely transaction open on it at that moment.
  const exclusive =
    driver.dialect === 'sqlite'
      ? <T>(call: () => Promise<T>) => db.connection().execute(call)
      : <T>(call: () => Promise<T>) => call();
  return new AttemptCounter(inDatabase(perAddress), inDatabase(perIp), exclusive, () =>
    clearInterval(prune),
  );
}
