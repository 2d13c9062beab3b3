import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil } from '../node/full-node.js';
import { openDatabase } from '../db/database.js';
import {
  call,
  createOrg,
  createTestVexil,
  TestClock,
  testDialects,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';

const REDIS_URL = process.env.VEXIL_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function expectRateLimitHeaders(response: TestResponse, limit: number, now: Date): void {
  expect(response.headers['x-ratelimit-limit']).toBe(String(limit));
  expect(response.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
  const reset = Number(response.headers['x-ratelimit-reset']);
  expect(Number.isInteger(reset)).toBe(true);
  // Unix seconds (not seconds-until-reset): within the window that starts now.
  expect(reset * 1000).toBeGreaterThanOrEqual(now.getTime());
  expect(reset * 1000).toBeLessThanOrEqual(now.getTime() + 61_000);
}

describe.each(testDialects())('management rate limits on %s', (dialect) => {
  const clock = new TestClock();
  const points = 3;
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, {
      clock,
      config: { rateLimit: { points, windowSeconds: 60 } },
    });
    org = await createOrg(vexil);
  });
  afterAll(() => vexil.close());

  it('headers accompany success, 401 and 404; a spent quota is 429 with Retry-After', async () => {
    const ok = await call(vexil, 'GET', '/api/v1/me', { token: org.token });
    expect(ok.status).toBe(200);
    expectRateLimitHeaders(ok, points, clock.now());
    expect(ok.headers['x-ratelimit-remaining']).toBe('2');

    const missing = await call(vexil, 'GET', '/api/v1/orgs/nowhere', { token: org.token });
    expect(missing.status).toBe(404);
    expectRateLimitHeaders(missing, points, clock.now());

    await call(vexil, 'GET', '/api/v1/me', { token: org.token });
    const limited = await call(vexil, 'GET', '/api/v1/me', { token: org.token });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('rate_limited');
    expect(limited.body.docs_url).toMatch(/\/docs\/errors#rate_limited$/);
    expect(limited.body.retry_after).toBeGreaterThanOrEqual(1);
    expect(limited.headers['retry-after']).toBe(String(limited.body.retry_after));
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expectRateLimitHeaders(limited, points, clock.now());
  });

  it('unauthenticated requests are limited per client IP', async () => {
    const anonymous = (remoteAddress: string) =>
      vexil.app.inject({ method: 'GET', url: '/api/v1/me', remoteAddress });
    for (let i = 0; i < points; i++) {
      const response = await anonymous('203.0.113.7');
      expect(response.statusCode).toBe(401);
      expect(response.headers['x-ratelimit-limit']).toBe(String(points));
    }
    const limited = await anonymous('203.0.113.7');
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    // Another address has its own quota.
    expect((await anonymous('203.0.113.8')).statusCode).toBe(401);
  });
});

describe('management rate limits with Redis', () => {
  let first: TestVexil;
  let second: Awaited<ReturnType<typeof createVexil>>;

  beforeAll(async () => {
    first = await createTestVexil('postgres', {
      config: { redisUrl: REDIS_URL, rateLimit: { points: 4, windowSeconds: 60 } },
    });
    second = await createVexil(first.config, {
      database: openDatabase(first.databaseUrl),
      logger: false,
    });
  });
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  it('two instances share one quota per caller', async () => {
    const org = await createOrg(first);
    const remaining: string[] = [];
    for (const instance of [first, second, first, second]) {
      const response = await call(instance, 'GET', '/api/v1/me', { token: org.token });
      expect(response.status).toBe(200);
      remaining.push(String(response.headers['x-ratelimit-remaining']));
    }
    expect(remaining).toEqual(['3', '2', '1', '0']);
    const limited = await call(second, 'GET', '/api/v1/me', { token: org.token });
    expect(limited.status).toBe(429);
    expect(limited.body.retry_after).toBeGreaterThanOrEqual(1);
  });
});
