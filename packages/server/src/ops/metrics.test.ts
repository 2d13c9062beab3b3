import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestVexil, testDialects, type TestVexil } from '../test-support/harness.js';

/** The `_count` sample of the request-duration histogram for one label set, or 0. */
function requestCount(metrics: string, method: string, route: string, status: number): number {
  const line = metrics
    .split('\n')
    .find((l) =>
      l.startsWith(
        `vexil_http_request_duration_seconds_count{method="${method}",route="${route}",status="${status}"}`,
      ),
    );
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe.each(testDialects())('request metrics on %s', (dialect) => {
  let vexil: TestVexil;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
  });
  afterAll(() => vexil.close());

  it('counts requests by route pattern, method and status, unmatched ones included', async () => {
    await call(vexil, 'GET', '/v1/sdk/flags');
    await call(vexil, 'GET', '/v1/sdk/flags');
    await call(vexil, 'POST', '/v1/sdk/evaluate', { body: {} });
    await call(vexil, 'GET', '/v1/sdk/flags/some-flag');
    await call(vexil, 'GET', '/healthz');
    await call(vexil, 'GET', '/nowhere');
    const metrics = (await call(vexil, 'GET', '/metrics')).text;
    expect(requestCount(metrics, 'GET', '/v1/sdk/flags', 401)).toBe(2);
    expect(requestCount(metrics, 'POST', '/v1/sdk/evaluate', 400)).toBe(1);
    expect(requestCount(metrics, 'GET', '/v1/sdk/flags/:key', 401)).toBe(1);
    expect(requestCount(metrics, 'GET', '/healthz', 200)).toBe(1);
    expect(requestCount(metrics, 'GET', 'unmatched', 404)).toBe(1);
  });
});
