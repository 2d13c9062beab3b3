import type { FastifyReply } from 'fastify';
import { Redis } from 'ioredis';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import { ApiError } from './errors.js';

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

/** A limiter and how to release what it holds (the Redis connection, if any). */
export interface RateLimiterHandle {
  limiter: ManagementRateLimiter;
  close: () => Promise<void>;
}

/**
 * Builds the management rate limiter. Without `redisUrl` each node counts on its own (memory);
 * with it, every node shares one quota per caller in Redis, falling back to per-node memory
 * counting while Redis is unreachable (availability over an exact global quota; design record 004).
 * @throws when `redisUrl` is set but Redis cannot be reached at start-up.
 */
export async function createManagementRateLimiter(
  rateLimit: { points: number; windowSeconds: number },
  redisUrl: string | null,
): Promise<RateLimiterHandle> {
  const { points, windowSeconds: duration } = rateLimit;
  const memory = new RateLimiterMemory({ points, duration });
  if (!redisUrl)
    return { limiter: new ManagementRateLimiter(points, duration, memory), close: async () => {} };
  const client = new Redis(redisUrl, { lazyConnect: true, enableOfflineQueue: false });
  await client.connect();
  const redis = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: 'vexil:management',
    points,
    duration,
    insuranceLimiter: memory,
  });
  return {
    limiter: new ManagementRateLimiter(points, duration, redis),
    close: async () => {
      await client.quit();
    },
  };
}
