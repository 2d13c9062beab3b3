import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

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

describe('operations metrics and probes', () => {
  it('exposes snapshot versions and ages, delivery states, flush lag and discards; probes answer', async () => {
    const vexil = await createTestVexil('sqlite');
    try {
      const org = await createOrg(vexil);
      const { sdkKey } = await createProjectWithFlag(vexil, org);
      await call(vexil, 'GET', '/v1/sdk/flags', { token: sdkKey });
      const metrics = (await call(vexil, 'GET', '/metrics')).text;
      expect(metrics).toMatch(/^vexil_snapshot_version\{environment_id="[0-9a-f-]+"\} \d+$/m);
      expect(metrics).toMatch(
        /^vexil_snapshot_age_seconds\{environment_id="[0-9a-f-]+"\} [\d.e-]+$/m,
      );
      expect(metrics).toMatch(/^vexil_webhook_deliveries\{status="Pending"\} 0$/m);
      expect(metrics).toMatch(/^vexil_usage_flush_lag_seconds [\d.e-]+$/m);
      expect(metrics).toMatch(/^vexil_events_discarded\{reason="[a-zA-Z]+"\} 0$/m);
      expect((await call(vexil, 'GET', '/healthz')).status).toBe(200);
      expect((await call(vexil, 'GET', '/readyz')).status).toBe(200);
    } finally {
      await vexil.close();
    }
  });
});
