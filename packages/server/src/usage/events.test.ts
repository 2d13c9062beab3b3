import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

const HOUR_MS = 3_600_000;

describe.each(testDialects())('usage recording and events intake on %s', (dialect) => {
  let vexil: TestVexil;
  let serverKey: string;
  let clientKey: string;
  const clock = new TestClock();
  const base = '/api/v1/orgs/acme/projects/web';

  async function createFlag(key: string): Promise<void> {
    const response = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key, clientSideVisible: true },
    });
    expect(response.status).toBe(201);
  }

  /** Production counts of a flag by variation, read through the management API. */
  async function productionCounts(flag: string): Promise<Record<string, number>> {
    const response = await call(vexil, 'GET', `${base}/flags/${flag}/usage`, { token: org.token });
    expect(response.status).toBe(200);
    const production = response.body.environments.find(
      (env: { environmentKey: string }) => env.environmentKey === 'production',
    );
    return Object.fromEntries(
      production.variations.map((v: { variation: string; count: number }) => [
        v.variation,
        v.count,
      ]),
    );
  }

  async function customEventCounts(): Promise<Record<string, number>> {
    const rows = await vexil.services.db
      .selectFrom('custom_event_usage')
      .select(['event_key', 'count'])
      .execute();
    const counts: Record<string, number> = {};
    for (const row of rows) counts[row.event_key] = (counts[row.event_key] ?? 0) + row.count;
    return counts;
  }

  const sendEvents = (events: unknown[], key = clientKey, path = '/v1/client/events') =>
    call(vexil, 'POST', path, { token: key, body: { events } });

  let org: Awaited<ReturnType<typeof createOrg>>;
  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    const created = await createProjectWithFlag(vexil, org, { flag: { clientSideVisible: true } });
    serverKey = created.sdkKey;
    const client = await call(vexil, 'POST', `${base}/environments/production/sdk-keys`, {
      token: org.token,
      body: { name: 'client', type: 'ClientSide' },
    });
    clientKey = client.body.key;
  });
  afterAll(() => vexil.close());

  it('rule 1: evaluate, client evaluate and identify count served flags; flushing keeps the totals', async () => {
    await createFlag('served');
    await call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: serverKey,
      body: { flagKey: 'served', context: { userId: 'u1' } },
    });
    await call(vexil, 'POST', '/v1/client/evaluate', {
      token: clientKey,
      body: { context: { userId: 'u1' } },
    });
    await call(vexil, 'POST', '/v1/client/identify', {
      token: clientKey,
      body: { context: { userId: 'u2' } },
    });
    // Unflushed counts are visible to the usage read.
    expect(await productionCounts('served')).toEqual({ false: 3 });
    await vexil.services.usage.flush();
    expect(await productionCounts('served')).toEqual({ false: 3 });
    const rows = await vexil.services.db
      .selectFrom('flag_usage')
      .innerJoin('flags', 'flags.id', 'flag_usage.flag_id')
      .select(['flag_usage.count', 'flag_usage.hour', 'flag_usage.last_evaluated_at'])
      .where('flags.key', '=', 'served')
      .execute();
    expect(rows).toEqual([
      {
        count: 3,
        hour: '2026-06-01T12:00:00.000Z',
        last_evaluated_at: clock.now().toISOString(),
      },
    ]);
    // A second flush adds to the same hourly row.
    await call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: serverKey,
      body: { flagKey: 'served', context: { userId: 'u1' } },
    });
    await vexil.services.usage.flush();
    expect(await productionCounts('served')).toEqual({ false: 4 });
  });

  it('rule 1: with X-Service-Reports-Evaluations: 1 served flags count only when reported', async () => {
    await createFlag('reported');
    const headers = { 'x-service-reports-evaluations': '1' };
    for (const path of ['/v1/client/evaluate', '/v1/client/identify']) {
      const response = await call(vexil, 'POST', path, {
        token: clientKey,
        body: { context: { userId: 'u1' } },
        headers,
      });
      expect(response.status).toBe(200);
      expect(response.body.flags.reported.variation).toBe('false');
    }
    await call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: serverKey,
      body: { flagKey: 'reported', context: {} },
      headers,
    });
    expect(await productionCounts('reported')).toEqual({});
    const reported = await sendEvents([
      { type: 'Evaluation', flagKey: 'reported', userId: 'u1', variation: 'false' },
      { type: 'Evaluation', flagKey: 'reported', variation: 'false', timestamp: clock.now() },
    ]);
    expect(reported.status).toBe(202);
    expect(await productionCounts('reported')).toEqual({ false: 2 });
  });

  it('accepts events with 202 and counts custom events per key and hour', async () => {
    const response = await sendEvents([
      { type: 'Custom', flagKey: 'checkout-completed', userId: 'u1', metadata: { total: 3 } },
      { type: 'Custom', flagKey: 'checkout-completed', timestamp: clock.now().toISOString() },
      { type: 'Custom', flagKey: 'signup', timestamp: new Date(clock.now().getTime() - HOUR_MS) },
    ]);
    expect(response.status).toBe(202);
    expect(response.body).toEqual({ accepted: 3 });
    await vexil.services.usage.flush();
    const counts = await customEventCounts();
    expect(counts['checkout-completed']).toBe(2);
    expect(counts.signup).toBe(1);
  });

  it('server SDKs report through /v1/sdk/events with a server key', async () => {
    await createFlag('server-reported');
    const response = await sendEvents(
      [{ type: 'Evaluation', flagKey: 'server-reported', variation: 'true' }],
      serverKey,
      '/v1/sdk/events',
    );
    expect(response.status).toBe(202);
    expect(await productionCounts('server-reported')).toEqual({ true: 1 });
    const wrongKey = await sendEvents([], clientKey, '/v1/sdk/events');
    expect(wrongKey.status).toBe(403);
  });

  it('rule 5: discards never change the response or the rest of the batch, and are counted', async () => {
    await createFlag('discards');
    const before = vexil.services.usage.discardCounts();
    const now = clock.now().getTime();
    const events = [
      { type: 'Evaluation', flagKey: 'discards', variation: 'true' },
      // Outside ±24 h of the server clock.
      {
        type: 'Evaluation',
        flagKey: 'discards',
        variation: 'true',
        timestamp: new Date(now - 25 * HOUR_MS),
      },
      {
        type: 'Evaluation',
        flagKey: 'discards',
        variation: 'true',
        timestamp: new Date(now + 25 * HOUR_MS),
      },
      // flagKey over 256 characters.
      { type: 'Custom', flagKey: 'k'.repeat(257) },
      // Malformed items and unknown flags.
      { type: 'Pageview', flagKey: 'discards' },
      'not an event',
      { type: 'Evaluation', flagKey: 'no-such-flag', variation: 'true' },
      // Within the window (23 h ago) is kept.
      {
        type: 'Evaluation',
        flagKey: 'discards',
        variation: 'true',
        timestamp: new Date(now - 23 * HOUR_MS),
      },
    ];
    const response = await sendEvents(events);
    expect(response.status).toBe(202);
    expect(response.body).toEqual({ accepted: events.length });
    expect(await productionCounts('discards')).toEqual({ true: 2 });
    const after = vexil.services.usage.discardCounts();
    expect(after.timestamp - before.timestamp).toBe(2);
    expect(after.flagKeyTooLong - before.flagKeyTooLong).toBe(1);
    expect(after.invalid - before.invalid).toBe(2);
    expect(after.unknownFlag - before.unknownFlag).toBe(1);
  });

  it('rule 5: a Custom event introducing a 51st distinct key is discarded; repeats are kept', async () => {
    const before = vexil.services.usage.discardCounts();
    const keys = Array.from({ length: 50 }, (_, i) => `cap-${i}`);
    const events = [
      ...keys.map((flagKey) => ({ type: 'Custom', flagKey })),
      { type: 'Custom', flagKey: 'cap-over-1' },
      { type: 'Custom', flagKey: 'cap-0' },
      { type: 'Custom', flagKey: 'cap-over-2' },
      { type: 'Custom', flagKey: 'cap-49' },
    ];
    const response = await sendEvents(events);
    expect(response.status).toBe(202);
    expect(response.body).toEqual({ accepted: 54 });
    await vexil.services.usage.flush();
    const counts = await customEventCounts();
    expect(counts['cap-0']).toBe(2);
    expect(counts['cap-49']).toBe(2);
    expect(counts['cap-over-1']).toBeUndefined();
    expect(counts['cap-over-2']).toBeUndefined();
    const after = vexil.services.usage.discardCounts();
    expect(after.tooManyEventKeys - before.tooManyEventKeys).toBe(2);
  });

  it('rule 6: more than 1000 events is 413 with a problem body', async () => {
    const events = Array.from({ length: 1001 }, () => ({ type: 'Custom', flagKey: 'bulk' }));
    const response = await sendEvents(events);
    expect(response.status).toBe(413);
    expect(response.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 413, title: 'Too many events', maxEvents: 1000 });
    expect((await customEventCounts()).bulk).toBeUndefined();
    const atCap = await sendEvents(events.slice(0, 1000));
    expect(atCap.status).toBe(202);
  });

  it('rule 6: a body over 512 KiB is 413', async () => {
    const response = await sendEvents([
      { type: 'Custom', flagKey: 'big', metadata: { pad: 'x'.repeat(513 * 1024) } },
    ]);
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ status: 413 });
  });

  it('rule 6: a missing or invalid key is 401', async () => {
    const missing = await call(vexil, 'POST', '/v1/client/events', { body: { events: [] } });
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ status: 401 });
    const invalid = await sendEvents([], 'vxl_c_not-a-key');
    expect(invalid.status).toBe(401);
    const server = await sendEvents([], 'vxl_s_not-a-key', '/v1/sdk/events');
    expect(server.status).toBe(401);
  });
});

describe.each(testDialects())('client events rate limit on %s', (dialect) => {
  let vexil: TestVexil;
  beforeAll(async () => {
    vexil = await createTestVexil(dialect, {
      config: { clientEventsRateLimit: { points: 2, windowSeconds: 60 } },
    });
  });
  afterAll(() => vexil.close());

  it('limits the client events endpoint per client IP with 429 and Retry-After', async () => {
    const send = () => call(vexil, 'POST', '/v1/client/events', { body: { events: [] } });
    // Counted before authentication: guessing keys spends the same quota.
    expect((await send()).status).toBe(401);
    expect((await send()).status).toBe(401);
    const limited = await send();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.body).toMatchObject({ status: 429, title: 'Too Many Requests' });
    // The server endpoint is not limited per IP.
    const server = await call(vexil, 'POST', '/v1/sdk/events', { body: { events: [] } });
    expect(server.status).toBe(401);
  });
});
