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
const DAY_MS = 24 * HOUR_MS;

describe.each(testDialects())('project usage series on %s', (dialect) => {
  const clock = new TestClock(new Date('2026-06-01T12:30:00.000Z'));
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let sdkKey: string;
  const base = '/api/v1/orgs/acme/projects/web';

  const evaluate = (flagKey: string) =>
    call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: sdkKey,
      body: { flagKey, context: { userId: 'u1' } },
    });

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    sdkKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    await call(vexil, 'POST', `${base}/flags`, { token: org.token, body: { key: 'quiet' } });
    // Yesterday once (flushed to the database), today twice (still in this node's memory).
    clock.advance(-DAY_MS);
    await evaluate('new-checkout');
    await vexil.services.usage.flush();
    clock.advance(DAY_MS);
    await evaluate('new-checkout');
    await evaluate('new-checkout');
  });
  afterAll(() => vexil.close());

  it('counts every flag per UTC day in one answer, flushed and unflushed, leaving out the unused', async () => {
    const response = await call(vexil, 'GET', `${base}/usage`, { token: org.token });
    expect(response.status, response.text).toBe(200);
    expect(response.body.interval).toBe('day');
    expect(response.body.buckets).toHaveLength(8);
    expect(response.body.buckets[0]).toBe('2026-05-25T00:00:00.000Z');
    expect(response.body.buckets[7]).toBe('2026-06-01T00:00:00.000Z');
    expect(response.body.flags).toEqual([
      {
        flagKey: 'new-checkout',
        environments: [
          {
            environmentKey: 'production',
            variations: [{ variation: 'false', counts: [0, 0, 0, 0, 0, 0, 1, 2] }],
          },
        ],
      },
    ]);
  });

  it('counts one flag per hour', async () => {
    const from = new Date(clock.now().getTime() - 25 * HOUR_MS).toISOString();
    const response = await call(
      vexil,
      'GET',
      `${base}/usage?interval=hour&flag=new-checkout&from=${from}`,
      { token: org.token },
    );
    expect(response.status, response.text).toBe(200);
    expect(response.body.buckets).toHaveLength(26);
    const [production] = response.body.flags[0].environments;
    const counts: number[] = production.variations[0].counts;
    expect(counts[1]).toBe(1);
    expect(counts[25]).toBe(2);
    expect(counts.reduce((sum, n) => sum + n, 0)).toBe(3);
  });

  it('refuses an unknown flag, a reversed range and too many buckets', async () => {
    const unknown = await call(vexil, 'GET', `${base}/usage?flag=nope`, { token: org.token });
    expect(unknown.status).toBe(404);
    const to = clock.now().toISOString();
    const reversed = await call(
      vexil,
      'GET',
      `${base}/usage?from=${to}&to=${new Date(clock.now().getTime() - HOUR_MS).toISOString()}`,
      { token: org.token },
    );
    expect(reversed.status).toBe(400);
    const long = new Date(clock.now().getTime() - 40 * DAY_MS).toISOString();
    const tooMany = await call(vexil, 'GET', `${base}/usage?interval=hour&from=${long}`, {
      token: org.token,
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.fields.from[0]).toMatch(/at most 744 hours/);
  });
});
