import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

describe.each(testDialects())('SDK keys on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const keys = '/api/v1/orgs/acme/projects/web/environments/production/sdk-keys';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  it('create: type is checked by name; "0" and other values are refused', async () => {
    for (const type of ['0', 'serverside', 'Server', '']) {
      const response = await call(vexil, 'POST', keys, {
        token: org.token,
        body: { name: 'k', type },
      });
      expect(response.status, type).toBe(400);
      expect(response.body.fields).toHaveProperty('type');
    }
    const numeric = await call(vexil, 'POST', keys, {
      token: org.token,
      body: { name: 'k', type: 0 },
    });
    expect(numeric.status).toBe(400);
  });

  it('create returns the plaintext once; list and get show only the last four characters', async () => {
    const created = await call(vexil, 'POST', keys, {
      token: org.token,
      body: { name: 'mobile', description: 'iOS', type: 'ClientSide' },
    });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^vxl_cli_/);
    expect(created.body.lastFourCharacters).toBe(created.body.key.slice(-4));
    expect(created.body.warning).toMatch(/only once/);
    const list = await call(vexil, 'GET', keys, { token: org.token });
    expect(list.text).not.toContain(created.body.key);
    expect(list.body.items.find((k: { id: string }) => k.id === created.body.id)).toMatchObject({
      lastFourCharacters: created.body.lastFourCharacters,
      type: 'ClientSide',
    });
    const one = await call(vexil, 'GET', `${keys}/${created.body.id}`, { token: org.token });
    expect(one.body).not.toHaveProperty('key');
    const stored = await vexil.services.db
      .selectFrom('sdk_keys')
      .selectAll()
      .where('id', '=', created.body.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(created.body.key);
  });

  it('revoke: the key stops working at once', async () => {
    const created = await call(vexil, 'POST', keys, {
      token: org.token,
      body: { name: 'srv', type: 'ServerSide' },
    });
    const download = () => call(vexil, 'GET', '/v1/sdk/flags', { token: created.body.key });
    expect((await download()).status).toBe(200);
    expect(
      (await call(vexil, 'DELETE', `${keys}/${created.body.id}`, { token: org.token })).status,
    ).toBe(204);
    const after = await download();
    expect(after.status).toBe(401);
    expect(after.headers['content-type']).toMatch(/application\/problem\+json/);
  });

  it('a Viewer cannot create keys', async () => {
    const viewer = await createMember(vexil, org.orgId, 'Viewer');
    expect(
      (
        await call(vexil, 'POST', keys, {
          token: viewer.token,
          body: { name: 'x', type: 'ServerSide' },
        })
      ).status,
    ).toBe(403);
  });
});

describe.each(testDialects())('SDK keys: last used, on %s', (dialect) => {
  const clock = new TestClock();
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const keys = '/api/v1/orgs/acme/projects/web/environments/production/sdk-keys';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  const createKey = async (name: string, type: 'ServerSide' | 'ClientSide') => {
    const created = await call(vexil, 'POST', keys, { token: org.token, body: { name, type } });
    expect(created.status).toBe(201);
    return { id: created.body.id as string, key: created.body.key as string };
  };
  const lastUsed = async (id: string) => {
    const list = await call(vexil, 'GET', keys, { token: org.token });
    return list.body.items.find((item: { id: string }) => item.id === id)?.lastUsedAt as
      string | null;
  };

  it('shows when each key was last used, written at the usage flush, not per request', async () => {
    const used = await createKey('used', 'ServerSide');
    const unused = await createKey('unused', 'ServerSide');
    const first = clock.now();
    // The first request resolves the key from the database, the next one from the cache.
    expect((await call(vexil, 'GET', '/v1/sdk/flags', { token: used.key })).status).toBe(200);
    clock.advance(2_000);
    const latest = clock.now();
    expect((await call(vexil, 'GET', '/v1/sdk/flags', { token: used.key })).status).toBe(200);
    expect(await lastUsed(used.id)).toBeNull();

    await vexil.services.usage.flush();
    expect(await lastUsed(used.id)).toBe(latest.toISOString());
    expect(latest > first).toBe(true);
    expect(await lastUsed(unused.id)).toBeNull();
  });

  it('OFREP and the events intake count as uses too', async () => {
    const client = await createKey('browser', 'ClientSide');
    clock.advance(60_000);
    const ofrepAt = clock.now().toISOString();
    const ofrep = await call(vexil, 'POST', '/ofrep/v1/evaluate/flags', {
      token: client.key,
      body: { context: { targetingKey: 'u1' } },
    });
    expect(ofrep.status).toBe(200);
    await vexil.services.usage.flush();
    expect(await lastUsed(client.id)).toBe(ofrepAt);

    clock.advance(60_000);
    const eventsAt = clock.now().toISOString();
    const events = await call(vexil, 'POST', '/v1/client/events', {
      token: client.key,
      body: { events: [{ type: 'Custom', flagKey: 'signup' }] },
    });
    expect(events.status).toBe(202);
    await vexil.services.usage.flush();
    expect(await lastUsed(client.id)).toBe(eventsAt);
  });

  it('a later use already written (by another node) is kept', async () => {
    const key = await createKey('shared', 'ServerSide');
    const later = new Date(clock.now().getTime() + 3_600_000).toISOString();
    await vexil.services.db
      .updateTable('sdk_keys')
      .set({ last_used_at: later })
      .where('id', '=', key.id)
      .execute();
    expect((await call(vexil, 'GET', '/v1/sdk/flags', { token: key.key })).status).toBe(200);
    await vexil.services.usage.flush();
    expect(await lastUsed(key.id)).toBe(later);
  });
});
