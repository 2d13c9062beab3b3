import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const base = '/api/v1/orgs/acme/projects/web';

/** A project with server keys for both environments and a client key for production. */
async function setUp(vexil: TestVexil) {
  const org = await createOrg(vexil);
  const { sdkKey: production } = await createProjectWithFlag(vexil, org, {
    flag: { clientSideVisible: true },
  });
  const keyFor = async (env: string, type: 'ServerSide' | 'ClientSide') => {
    const response = await call(vexil, 'POST', `${base}/environments/${env}/sdk-keys`, {
      token: org.token,
      body: { name: `${env}-${type}`, type },
    });
    return response.body.key as string;
  };
  return {
    org,
    keys: {
      production,
      development: await keyFor('development', 'ServerSide'),
      client: await keyFor('production', 'ClientSide'),
    },
  };
}

describe.each(testDialects())('flag lifecycle on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let keys: Awaited<ReturnType<typeof setUp>>['keys'];
  const clock = new TestClock();

  const createFlag = async (key: string, extra: Record<string, unknown> = {}) => {
    const response = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key, clientSideVisible: true, ...extra },
    });
    expect(response.status).toBe(201);
  };
  const evaluate = (flagKey: string, key = keys.production) =>
    call(vexil, 'POST', '/v1/sdk/evaluate', { token: key, body: { flagKey, context: {} } });
  const archive = (flag: string, query = '') =>
    call(vexil, 'POST', `${base}/flags/${flag}/archive${query}`, { token: org.token });
  const eventsOf = async (type: string) =>
    vexil.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('type', '=', type)
      .execute()
      .then((rows) => rows.map((row) => JSON.parse(row.payload)));

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    ({ org, keys } = await setUp(vexil));
  });
  afterAll(() => vexil.close());

  it('usage read: counts by environment and variation, unflushed counts included, range applied', async () => {
    await createFlag('usage-read');
    await evaluate('usage-read');
    await evaluate('usage-read', keys.development);
    clock.advance(2 * DAY_MS);
    await evaluate('usage-read');
    await evaluate('usage-read');
    const read = async (query = '') => {
      const response = await call(vexil, 'GET', `${base}/flags/usage-read/usage${query}`, {
        token: org.token,
      });
      expect(response.status).toBe(200);
      return response.body;
    };
    const expected = {
      flagKey: 'usage-read',
      environments: [
        {
          environmentKey: 'development',
          total: 1,
          variations: [{ variation: 'false', count: 1 }],
          lastEvaluatedAt: new Date(clock.now().getTime() - 2 * DAY_MS).toISOString(),
        },
        {
          environmentKey: 'production',
          total: 3,
          variations: [{ variation: 'false', count: 3 }],
          lastEvaluatedAt: clock.now().toISOString(),
        },
      ],
    };
    expect(await read()).toMatchObject(expected);
    await vexil.services.usage.flush();
    expect(await read()).toMatchObject(expected);
    // Only the last day: the two recent evaluations; last-evaluated times are not range-bound.
    const from = new Date(clock.now().getTime() - DAY_MS).toISOString();
    const recent = await read(`?from=${from}`);
    expect(recent.environments[0]).toMatchObject({ total: 0, variations: [] });
    expect(recent.environments[1]).toMatchObject({ total: 2 });
    expect(recent.environments[0].lastEvaluatedAt).not.toBeNull();
    const inverted = await call(
      vexil,
      'GET',
      `${base}/flags/usage-read/usage?from=${clock.now().toISOString()}&to=${from}`,
      { token: org.token },
    );
    expect(inverted.status).toBe(400);
    expect(inverted.body.fields).toHaveProperty('from');
  });

  it('rule 8: archive is refused while environments evaluate the flag, naming them; force archives', async () => {
    await createFlag('guarded');
    await evaluate('guarded');
    await evaluate('guarded', keys.development);
    // Unflushed traffic is enough for the guard.
    const refused = await archive('guarded');
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('FLAG_RECENTLY_EVALUATED');
    expect(refused.body.message).toContain('development, production');
    expect(refused.body.fields).toEqual({ environments: ['development', 'production'] });
    expect(refused.body.next_actions[0].path).toMatch(/\/archive\?force=true$/);
    expect((await archive('guarded', '?force=false')).status).toBe(400);
    await vexil.services.usage.flush();
    expect((await archive('guarded')).status).toBe(400);

    const forced = await archive('guarded', '?force=true');
    expect(forced.status).toBe(204);
    const detail = await call(vexil, 'GET', `${base}/flags/guarded`, { token: org.token });
    expect(detail.body.isArchived).toBe(true);
    const archived = (await eventsOf('flag.archived')).filter(
      (event) => event.entity.id === detail.body.id,
    );
    expect(archived).toHaveLength(1);
    expect(archived[0].changes).toEqual([{ property: 'IsArchived', from: 'false', to: 'true' }]);
    // Archiving again changes nothing.
    expect((await archive('guarded')).status).toBe(204);
  });

  it('rule 8: traffic older than the guard window does not block archiving', async () => {
    await createFlag('old-traffic');
    await evaluate('old-traffic');
    clock.advance(7 * DAY_MS + 1);
    expect((await archive('old-traffic')).status).toBe(204);
    // A flag never evaluated archives without force.
    await createFlag('never-evaluated');
    expect((await archive('never-evaluated')).status).toBe(204);
  });

  it('archived flags leave the SDK configuration and client evaluations; restore brings them back', async () => {
    await createFlag('to-archive');
    const sdkFlagKeys = async () => {
      const response = await call(vexil, 'GET', '/v1/sdk/flags', { token: keys.production });
      return response.body.flags.map((flag: { key: string }) => flag.key);
    };
    const clientFlagKeys = async () => {
      const response = await call(vexil, 'POST', '/v1/client/evaluate', {
        token: keys.client,
        body: { context: { userId: 'u1' } },
      });
      return Object.keys(response.body.flags);
    };
    expect(await sdkFlagKeys()).toContain('to-archive');
    expect(await clientFlagKeys()).toContain('to-archive');
    expect((await archive('to-archive', '?force=true')).status).toBe(204);
    expect(await sdkFlagKeys()).not.toContain('to-archive');
    expect(await clientFlagKeys()).not.toContain('to-archive');
    expect((await evaluate('to-archive')).status).toBe(404);

    const restored = await call(vexil, 'POST', `${base}/flags/to-archive/restore`, {
      token: org.token,
    });
    expect(restored.status).toBe(204);
    expect(await sdkFlagKeys()).toContain('to-archive');
    expect(await clientFlagKeys()).toContain('to-archive');
    const detail = await call(vexil, 'GET', `${base}/flags/to-archive`, { token: org.token });
    expect(detail.body.isArchived).toBe(false);
    const events = (await eventsOf('flag.restored')).filter(
      (event) => event.entity.id === detail.body.id,
    );
    expect(events).toHaveLength(1);
    // Restoring a live flag changes nothing.
    expect(
      (await call(vexil, 'POST', `${base}/flags/to-archive/restore`, { token: org.token })).status,
    ).toBe(204);
    expect(await eventsOf('flag.restored')).toHaveLength(1);
  });

  it('rule 7: deleting the expiry clears it and emits flag.updated; always allowed', async () => {
    await createFlag('expiring', { expiresAtUtc: '2026-01-01T00:00:00.000Z' });
    const removed = await call(vexil, 'DELETE', `${base}/flags/expiring/expiry`, {
      token: org.token,
    });
    expect(removed.status).toBe(204);
    const detail = await call(vexil, 'GET', `${base}/flags/expiring`, { token: org.token });
    expect(detail.body.expiresAtUtc).toBeNull();
    const updates = (await eventsOf('flag.updated')).filter(
      (event) => event.entity.id === detail.body.id,
    );
    expect(updates).toHaveLength(1);
    expect(updates[0].changes).toEqual([
      { property: 'ExpiresAtUtc', from: '2026-01-01T00:00:00.000Z', to: null },
    ]);
    const again = await call(vexil, 'DELETE', `${base}/flags/expiring/expiry`, {
      token: org.token,
    });
    expect(again.status).toBe(204);
  });
});

describe.each(testDialects())('removal candidates on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let keys: Awaited<ReturnType<typeof setUp>>['keys'];
  const clock = new TestClock();

  const createFlag = async (key: string, extra: Record<string, unknown> = {}) => {
    const response = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key, ...extra },
    });
    expect(response.status).toBe(201);
  };
  const toggle = async (flag: string, env: string, enabled: boolean) => {
    const response = await call(vexil, 'POST', `${base}/flags/${flag}/environments/${env}/toggle`, {
      token: org.token,
      body: { enabled },
    });
    expect(response.status).toBe(204);
  };
  const evaluate = async (flagKey: string, key = keys.production) => {
    const response = await call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: key,
      body: { flagKey, context: {} },
    });
    expect(response.status).toBe(200);
  };
  const candidates = async (query = '') => {
    const response = await call(vexil, 'GET', `${base}/flags/removal-candidates${query}`, {
      token: org.token,
    });
    expect(response.status).toBe(200);
    return response.body;
  };
  /** Evaluates every flag that should keep traffic (the stale period is 30 days). */
  const keepTraffic = async () => {
    for (const flag of ['rolled-out', 'rolled-back', 'divergent', 'permanent']) {
      await evaluate(flag);
    }
    await evaluate('divergent', keys.development);
    // An archived flag is no longer served; stale SDK caches may still report reading it.
    const production = await vexil.services.db
      .selectFrom('environments')
      .select('id')
      .where('key', '=', 'production')
      .executeTakeFirstOrThrow();
    vexil.services.usage.recordEvaluation(
      production.id,
      'archived',
      'false',
      clock.now().getTime(),
    );
  };

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    ({ org, keys } = await setUp(vexil));
    // Day 0: the configurations that will stay unchanged.
    await createFlag('rolled-out');
    await toggle('rolled-out', 'production', true);
    await createFlag('rolled-back');
    await createFlag('divergent');
    await toggle('divergent', 'production', true);
    await createFlag('permanent', { isPermanent: true });
    await createFlag('archived');
    await createFlag('created-unused');
    await createFlag('zero-traffic');
    await evaluate('zero-traffic');
    await keepTraffic();
    const archived = await call(vexil, 'POST', `${base}/flags/archived/archive?force=true`, {
      token: org.token,
    });
    expect(archived.status).toBe(204);
  });
  afterAll(() => vexil.close());

  it('the route is not captured by /flags/:flag', async () => {
    const body = await candidates();
    expect(body).toMatchObject({ items: [], next_cursor: null });
    expect(body).toHaveProperty('_actions');
  });

  it('rule 9: nothing is a candidate before the stale period', async () => {
    clock.advance(29 * DAY_MS);
    await keepTraffic();
    expect((await candidates('?staleness=stale')).items).toEqual([]);
  });

  it('rule 9: after the stale period stuck flags are Stale; only with staleness=stale', async () => {
    clock.advance(2 * DAY_MS); // day 31
    await keepTraffic();
    const stale = await candidates('?staleness=stale');
    expect(stale.items).toEqual([
      {
        key: 'rolled-back',
        reason: expect.stringMatching(/^Stuck rolled back/),
        treatment: false,
        status: 'Stale',
        codeReferences: null,
      },
      {
        key: 'rolled-out',
        reason: expect.stringMatching(/^Stuck rolled out: serves "true" to everyone in production/),
        treatment: true,
        status: 'Stale',
        codeReferences: null,
      },
    ]);
    // The flag list filters by the same status.
    const listed = async (lifecycle: string) =>
      (
        await call(vexil, 'GET', `${base}/flags?sort=key&lifecycle=${lifecycle}`, {
          token: org.token,
        })
      ).body.items.map((flag: { key: string }) => flag.key);
    expect(await listed('Stale')).toEqual(['rolled-back', 'rolled-out']);
    expect(await listed('Dead')).toEqual([]);
    // Omitted or unrecognised staleness means dead.
    expect((await candidates()).items).toEqual([]);
    expect((await candidates('?staleness=dead')).items).toEqual([]);
    expect((await candidates('?staleness=bogus')).items).toEqual([]);
  });

  it('rule 9: after the dead period they are Dead; pages follow the cursor', async () => {
    for (let day = 31; day < 91; day += 20) {
      clock.advance(20 * DAY_MS);
      await keepTraffic();
    }
    const dead = await candidates('?staleness=dead&limit=1');
    expect(dead.items).toEqual([expect.objectContaining({ key: 'rolled-back', status: 'Dead' })]);
    expect(dead.next_cursor).toEqual(expect.any(String));
    const next = await candidates(`?staleness=dead&limit=1&cursor=${dead.next_cursor}`);
    expect(next.items).toEqual([
      expect.objectContaining({ key: 'rolled-out', status: 'Dead', treatment: true }),
    ]);
    expect(next.next_cursor).toBeNull();
    expect((await candidates('?staleness=stale')).items.map((c: { key: string }) => c.key)).toEqual(
      ['rolled-back', 'rolled-out'],
    );
  });

  it('rule 9: a change restarts the clock; traffic ending drops the flag', async () => {
    await toggle('rolled-out', 'production', false);
    await toggle('rolled-out', 'production', true);
    await keepTraffic();
    expect((await candidates('?staleness=stale')).items.map((c: { key: string }) => c.key)).toEqual(
      ['rolled-back'],
    );
    // 31 days without any evaluation: zero traffic, so not a candidate.
    clock.advance(31 * DAY_MS);
    expect((await candidates('?staleness=stale')).items).toEqual([]);
  });

  it('rejects a cursor it did not issue', async () => {
    const response = await call(vexil, 'GET', `${base}/flags/removal-candidates?cursor=abc`, {
      token: org.token,
    });
    expect(response.status).toBe(400);
  });
});
