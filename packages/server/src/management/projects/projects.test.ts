import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

describe.each(testDialects())('projects and environments on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const projects = '/api/v1/orgs/acme/projects';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
  });
  afterAll(() => vexil.close());

  it('project create: default environments development and production', async () => {
    const created = await call(vexil, 'POST', projects, {
      token: org.token,
      body: { key: 'shop', name: 'Shop' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ key: 'shop', name: 'Shop', description: null });
    expect(created.body._actions.delete).toEqual({ allowed: true, reason: null });
    const environments = await call(vexil, 'GET', `${projects}/shop/environments`, {
      token: org.token,
    });
    expect(environments.body.items.map((e: { key: string }) => e.key)).toEqual([
      'development',
      'production',
    ]);
    expect(environments.body.next_cursor).toBeNull();
    // Production is critical from the start; development is not (design record 025).
    expect(environments.body.items.map((e: { critical: boolean }) => e.critical)).toEqual([
      false,
      true,
    ]);
  });

  it('project create: named environments, stored as given', async () => {
    const created = await call(vexil, 'POST', projects, {
      token: org.token,
      body: {
        key: 'api',
        name: 'API',
        environments: [{ key: 'staging', name: 'Staging', color: '#00ff00' }],
      },
    });
    expect(created.status).toBe(201);
    const env = await call(vexil, 'GET', `${projects}/api/environments/staging`, {
      token: org.token,
    });
    expect(env.body).toMatchObject({
      key: 'staging',
      name: 'Staging',
      color: '#00ff00',
      sortOrder: 0,
      critical: false,
    });
  });

  it('project create: critical as given; an environment keyed production is critical unless told', async () => {
    const created = await call(vexil, 'POST', projects, {
      token: org.token,
      body: {
        key: 'marked',
        name: 'Marked',
        environments: [
          { key: 'production' },
          { key: 'edge', critical: true },
          { key: 'preview', critical: false },
        ],
      },
    });
    expect(created.status).toBe(201);
    const listed = await call(vexil, 'GET', `${projects}/marked/environments`, {
      token: org.token,
    });
    expect(
      listed.body.items.map((e: { key: string; critical: boolean }) => [e.key, e.critical]),
    ).toEqual([
      ['production', true],
      ['edge', true],
      ['preview', false],
    ]);
    const unmarked = await call(vexil, 'POST', projects, {
      token: org.token,
      body: {
        key: 'unmarked',
        name: 'Unmarked',
        environments: [{ key: 'production', critical: false }],
      },
    });
    expect(unmarked.status).toBe(201);
    const production = await call(vexil, 'GET', `${projects}/unmarked/environments/production`, {
      token: org.token,
    });
    expect(production.body.critical).toBe(false);
  });

  it('project create: bad input is 400 with field detail and creates nothing', async () => {
    const cases: [unknown, string][] = [
      [{ key: 'has space', name: 'x' }, 'key'],
      [{ name: 'no key' }, 'key'],
      [{ key: 'ok', name: 'x', unknown: 1 }, 'unknown'],
      [{ key: '0190a9b2-0000-7000-8000-000000000000', name: 'uuid-shaped' }, 'key'],
      [
        { key: 'dup-env', name: 'x', environments: [{ key: 'a' }, { key: 'a' }] },
        'environments.1.key',
      ],
    ];
    for (const [body, field] of cases) {
      const response = await call(vexil, 'POST', projects, { token: org.token, body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error).toBe('validation_failed');
      expect(Object.keys(response.body.fields)).toContain(field);
    }
    const list = await call(vexil, 'GET', projects, { token: org.token });
    expect(list.body.items.map((p: { key: string }) => p.key)).not.toContain('dup-env');
  });

  it('project key is unique per org: 409 conflict', async () => {
    await call(vexil, 'POST', projects, { token: org.token, body: { key: 'twice', name: 'x' } });
    const again = await call(vexil, 'POST', projects, {
      token: org.token,
      body: { key: 'twice', name: 'y' },
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'conflict', fields: { key: ['already exists'] } });
    const other = await createOrg(vexil, 'other-org');
    const elsewhere = await call(vexil, 'POST', '/api/v1/orgs/other-org/projects', {
      token: other.token,
      body: { key: 'twice', name: 'z' },
    });
    expect(elsewhere.status).toBe(201);
  });

  it('project get by key or id, update, delete', async () => {
    const created = await call(vexil, 'POST', projects, {
      token: org.token,
      body: { key: 'temp', name: 'Temp' },
    });
    const byId = await call(vexil, 'GET', `${projects}/${created.body.id}`, { token: org.token });
    expect(byId.body.key).toBe('temp');
    const updated = await call(vexil, 'PATCH', `${projects}/temp`, {
      token: org.token,
      body: { name: 'Renamed', description: 'd' },
    });
    expect(updated.body).toMatchObject({ name: 'Renamed', description: 'd' });
    expect((await call(vexil, 'DELETE', `${projects}/temp`, { token: org.token })).status).toBe(
      204,
    );
    expect((await call(vexil, 'GET', `${projects}/temp`, { token: org.token })).status).toBe(404);
  });

  it('roles: a Member cannot create projects (403); a Viewer can read', async () => {
    const member = await createMember(vexil, org.orgId, 'Member');
    const viewer = await createMember(vexil, org.orgId, 'Viewer');
    expect(
      (await call(vexil, 'POST', projects, { token: member.token, body: { key: 'm', name: 'm' } }))
        .status,
    ).toBe(403);
    expect((await call(vexil, 'GET', `${projects}/shop`, { token: viewer.token })).status).toBe(
      200,
    );
    const asViewer = await call(vexil, 'GET', `${projects}/shop`, { token: viewer.token });
    expect(asViewer.body._actions.update).toEqual({
      allowed: false,
      reason: 'requires the Admin role',
    });
  });

  it('another org cannot see the project: 404', async () => {
    const other = await createOrg(vexil, 'intruder');
    const response = await call(vexil, 'GET', `${projects}/shop`, { token: other.token });
    expect(response.status).toBe(404);
    expect(response.body.error).toBe('not_found');
  });

  it('environment create, update, duplicate key, delete', async () => {
    const base = `${projects}/shop/environments`;
    const created = await call(vexil, 'POST', base, {
      token: org.token,
      body: { key: 'qa', name: 'QA', color: '#123456', sortOrder: 5 },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ key: 'qa', name: 'QA', color: '#123456', sortOrder: 5 });
    const duplicate = await call(vexil, 'POST', base, { token: org.token, body: { key: 'qa' } });
    expect(duplicate.status).toBe(409);
    const badColor = await call(vexil, 'POST', base, {
      token: org.token,
      body: { key: 'qa2', color: 'red' },
    });
    expect(badColor.status).toBe(400);
    expect(badColor.body.fields).toHaveProperty('color');
    const updated = await call(vexil, 'PATCH', `${base}/qa`, {
      token: org.token,
      body: { name: 'Quality' },
    });
    expect(updated.body).toMatchObject({ name: 'Quality', color: '#123456', critical: false });
    const marked = await call(vexil, 'PATCH', `${base}/qa`, {
      token: org.token,
      body: { critical: true },
    });
    expect(marked.body).toMatchObject({ name: 'Quality', critical: true });
    const event = await vexil.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('type', '=', 'environment.updated')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(event.payload).changes).toEqual([
      { property: 'Critical', from: 'false', to: 'true' },
    ]);
    const notBoolean = await call(vexil, 'PATCH', `${base}/qa`, {
      token: org.token,
      body: { critical: 'yes' },
    });
    expect(notBoolean.status).toBe(400);
    expect(notBoolean.body.fields).toHaveProperty('critical');
    expect((await call(vexil, 'DELETE', `${base}/qa`, { token: org.token })).status).toBe(204);
    const gone = await call(vexil, 'GET', `${base}/qa`, { token: org.token });
    expect(gone.status).toBe(404);
    expect(gone.body.next_actions).toEqual([
      { method: 'GET', path: '/api/v1/orgs/acme/projects/shop/environments' },
    ]);
  });

  it('environments list: paged by sortOrder with opaque cursors', async () => {
    await call(vexil, 'POST', projects, {
      token: org.token,
      body: {
        key: 'paged',
        name: 'p',
        environments: [{ key: 'e1' }, { key: 'e2' }, { key: 'e3' }],
      },
    });
    const first = await call(vexil, 'GET', `${projects}/paged/environments?limit=2`, {
      token: org.token,
    });
    expect(first.body.items.map((e: { key: string }) => e.key)).toEqual(['e1', 'e2']);
    const second = await call(
      vexil,
      'GET',
      `${projects}/paged/environments?limit=2&cursor=${first.body.next_cursor}`,
      { token: org.token },
    );
    expect(second.body.items.map((e: { key: string }) => e.key)).toEqual(['e3']);
    expect(second.body.next_cursor).toBeNull();
  });

  it('a new environment gives every existing flag a disabled configuration', async () => {
    await call(vexil, 'POST', `${projects}/shop/flags`, {
      token: org.token,
      body: { key: 'banner' },
    });
    await call(vexil, 'POST', `${projects}/shop/environments`, {
      token: org.token,
      body: { key: 'preview' },
    });
    const configs = await call(vexil, 'GET', `${projects}/shop/flags/banner/environments`, {
      token: org.token,
    });
    expect(configs.body.map((c: { environmentKey: string }) => c.environmentKey)).toContain(
      'preview',
    );
    expect(configs.body.every((c: { isEnabled: boolean }) => !c.isEnabled)).toBe(true);
  });
});
