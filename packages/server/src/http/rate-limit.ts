import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { Redis } from 'ioredis';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import { ApiError } from '../errors.js';

/**
 * Per-caller request accounting for the management API (spec: Limits). Every response carries
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix seconds, UTC).
 */
export class ManagementRateLimiter {
  private readonly limiter: RateLimiterAbstract;

  constructor(
    private readonly points: number,
    windowSeconds: number,
    limiter?: RateLimiterAbstract,
  ) {
    this.limiter = limiter ?? new RateLimiterMemory({ points, duration: windowSeconds });
  }

  /**
   * Counts one request for `key` and sets the headers on `reply`.
   * @throws ApiError `rate_limited` (429, with `retry_after`) when the quota is spent.
   */
  async consume(key: string, reply: FastifyReply, nowMs: number): Promise<void> {
    let result: RateLimiterRes;
    let limited = false;
    try {
      result = await this.limiter.consume(key);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      result = rejection;
      limited = true;
    }
    void reply.header('x-ratelimit-limit', String(this.points));
    void reply.header('x-ratelimit-remaining', String(Math.max(0, result.remainingPoints)));
    void reply.header('x-ratelimit-reset', String(Math.ceil((nowMs + result.msBeforeNext) / 1000)));
    if (limited) {
      const retryAfter = Math.max(1, Math.ceil(result.msBeforeNext / 1000));
      throw new ApiError('rate_limited', `Rate limit exceeded. Retry in ${retryAfter} s.`, {
        retryAfter,
      });
    }
  }
}

/** A limiter, whether it is counting on its own for now, and how to release what it holds. */
export interface RateLimiterHandle {
  limiter: ManagementRateLimiter;
  /** True while Redis is unreachable and each node counts on its own (design record 019). */
  perNodeFallback: () => boolean;
  close: () => Promise<void>;
}

/**
 * Builds the management rate limiter. Without `redisUrl` each node counts on its own (memory);
 * with it, every node shares one quota per caller in Redis, falling back to per-node memory
 * counting while Redis is unreachable, at start or later (availability over an exact global
 * quota; design records 004 and 019). The fall-back and the recovery are logged once each.
 */
export async function createManagementRateLimiter(
  rateLimit: { points: number; windowSeconds: number },
  redisUrl: string | null,
  log: Pick<FastifyBaseLogger, 'warn' | 'info'>,
): Promise<RateLimiterHandle> {
  const { points, windowSeconds: duration } = rateLimit;
  const memory = new RateLimiterMemory({ points, duration });
  if (!redisUrl) {
    return {
      limiter: new ManagementRateLimiter(points, duration, memory),
      perNodeFallback: () => false,
      close: async () => {},
    };
  }
  // No offline queue: while Redis is away a count fails at once and the memory limiter answers.
  const client = new Redis(redisUrl, { lazyConnect: true, enableOfflineQueue: false });
  let fallback = false;
  let closing = false;
  const lost = (error?: Error) => {
    if (closing) return;
    if (!fallback)
      log.warn({ err: error }, 'Redis unavailable: management rate limits counted per node');
    fallback = true;
  };
  client.on('error', lost);
  client.on('close', () => lost());
  client.on('ready', () => {
    if (fallback) log.info('Redis available again: management rate limits shared');
    fallback = false;
  });
  // ioredis keeps reconnecting on its own; a node need not wait for Redis to start.
  await client.connect().catch(() => undefined);
  const redis = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: 'vexil:management',
    points,
    duration,
    insuranceLimiter: memory,
  });
  return {
    limiter: new ManagementRateLimiter(points, duration, redis),
    perNodeFallback: () => fallback,
    close: () => {
      closing = true;
      client.disconnect();
      return Promise.resolve();
    },
  };
}
