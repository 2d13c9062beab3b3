import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

describe.each(testDialects())('relay keys on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const keys = '/api/v1/orgs/acme/relay-keys';
  const projectIds: Record<string, string> = {};

  const auditTypes = async (): Promise<{ type: string; entity: { id: string } }[]> =>
    (await call(vexil, 'GET', '/api/v1/orgs/acme/audit-log?limit=100', { token: org.token })).body
      .items;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    for (const key of ['web', 'mobile']) {
      const created = await call(vexil, 'POST', '/api/v1/orgs/acme/projects', {
        token: org.token,
        body: { key, name: key },
      });
      projectIds[key] = created.body.id;
    }
  });
  afterAll(() => vexil.close());

  it('create shows the vxr_ secret once, stores only its hash, and is audited', async () => {
    const created = await call(vexil, 'POST', keys, {
      token: org.token,
      body: { name: 'eu-west', projectIds: [projectIds.web], environmentKeys: ['production'] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      name: 'eu-west',
      projectIds: [projectIds.web],
      environmentKeys: ['production'],
      warning: expect.any(String),
    });
    expect(created.body.key).toMatch(/^vxr_[A-Za-z0-9_-]{43}$/);
    expect(created.body.lastFourCharacters).toBe(created.body.key.slice(-4));
    const stored = await vexil.services.db
      .selectFrom('relay_keys')
      .selectAll()
      .where('id', '=', created.body.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(created.body.key);

    const list = await call(vexil, 'GET', keys, { token: org.token });
    expect(list.status).toBe(200);
    expect(list.body.items).toContainEqual({
      id: created.body.id,
      name: 'eu-west',
      lastFourCharacters: created.body.key.slice(-4),
      projectIds: [projectIds.web],
      environmentKeys: ['production'],
      createdAt: expect.any(String),
    });
    expect(list.text).not.toContain(created.body.key);
    expect(await auditTypes()).toContainEqual(
      expect.objectContaining({
        type: 'relay_key.created',
        entity: { type: 'relay_key', id: created.body.id },
      }),
    );
  });

  it('without projectIds a key covers the organization', async () => {
    const created = await call(vexil, 'POST', keys, { token: org.token, body: { name: 'all' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ projectIds: null, environmentKeys: null });
  });

  it('revoking a key removes it from the list, audits it, and a second revoke is 404', async () => {
    const created = await call(vexil, 'POST', keys, { token: org.token, body: { name: 'gone' } });
    const revoked = await call(vexil, 'DELETE', `${keys}/${created.body.id}`, { token: org.token });
    expect(revoked.status).toBe(204);
    const list = await call(vexil, 'GET', keys, { token: org.token });
    expect(list.body.items.map((item: { id: string }) => item.id)).not.toContain(created.body.id);
    expect(await auditTypes()).toContainEqual(
      expect.objectContaining({
        type: 'relay_key.revoked',
        entity: { type: 'relay_key', id: created.body.id },
      }),
    );
    const again = await call(vexil, 'DELETE', `${keys}/${created.body.id}`, { token: org.token });
    expect(again.status).toBe(404);
  });

  it('only Admins manage relay keys', async () => {
    const member = await createMember(vexil, org.orgId, 'Member');
    expect((await call(vexil, 'GET', keys, { token: member.token })).status).toBe(403);
    const created = await call(vexil, 'POST', keys, {
      token: member.token,
      body: { name: 'nope' },
    });
    expect(created.status).toBe(403);
  });

  it('an allowlisted Admin cannot cover more projects than they reach, nor see wider keys', async () => {
    const admin = await createMember(vexil, org.orgId, 'Admin');
    await vexil.services.db
      .updateTable('memberships')
      .set({ project_ids: JSON.stringify([projectIds.web]) })
      .where('user_id', '=', admin.userId)
      .execute();
    const wholeOrg = await call(vexil, 'POST', keys, { token: admin.token, body: { name: 'x' } });
    expect(wholeOrg.status).toBe(400);
    expect(wholeOrg.body.fields).toHaveProperty('projectIds');
    const mobile = await call(vexil, 'POST', keys, {
      token: admin.token,
      body: { name: 'x', projectIds: [projectIds.mobile] },
    });
    expect(mobile.status).toBe(400);
    const web = await call(vexil, 'POST', keys, {
      token: admin.token,
      body: { name: 'web only', projectIds: [projectIds.web] },
    });
    expect(web.status).toBe(201);
    const wide = await call(vexil, 'POST', keys, { token: org.token, body: { name: 'wide' } });
    const seen = await call(vexil, 'GET', keys, { token: admin.token });
    const ids = seen.body.items.map((item: { id: string }) => item.id);
    expect(ids).toContain(web.body.id);
    expect(ids).not.toContain(wide.body.id);
    const revoke = await call(vexil, 'DELETE', `${keys}/${wide.body.id}`, { token: admin.token });
    expect(revoke.status).toBe(404);
  });

  it('unknown project ids are refused', async () => {
    const response = await call(vexil, 'POST', keys, {
      token: org.token,
      body: { name: 'x', projectIds: ['00000000-0000-7000-8000-000000000000'] },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields).toHaveProperty('projectIds');
  });

  it('a relay key reads nothing of the management API', async () => {
    const created = await call(vexil, 'POST', keys, { token: org.token, body: { name: 'reader' } });
    for (const path of ['/api/v1/orgs', '/api/v1/orgs/acme/projects', keys]) {
      const response = await call(vexil, 'GET', path, { token: created.body.key });
      expect(response.status, path).toBe(401);
      expect(response.body.message).toMatch(/relay key/);
    }
    // Nor is it an SDK key.
    const flags = await call(vexil, 'GET', '/v1/sdk/flags', { token: created.body.key });
    expect(flags.status).toBe(401);
    expect(flags.body.detail).toMatch(/relay key, which only the relay routes/);
  });
});
