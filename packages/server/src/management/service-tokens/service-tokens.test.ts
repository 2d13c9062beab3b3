import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe.each(testDialects())('service tokens on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const tokens = '/api/v1/orgs/acme/service-tokens';
  const projectIds: Record<string, string> = {};

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

  it('create returns the token once; list shows only its last four characters', async () => {
    const created = await call(vexil, 'POST', tokens, {
      token: org.token,
      body: { name: 'deploy', role: 'Admin' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'deploy', role: 'Admin', expiresAt: null });
    expect(created.body.token).toMatch(/^vxl_svc_[A-Za-z0-9_-]{43}$/);
    expect(created.body.warning).toEqual(expect.any(String));
    const list = await call(vexil, 'GET', tokens, { token: org.token });
    expect(list.status).toBe(200);
    expect(list.body.items).toContainEqual(
      expect.objectContaining({
        id: created.body.id,
        lastFourCharacters: created.body.token.slice(-4),
      }),
    );
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);
  });

  it("a token's role cannot exceed its creator's", async () => {
    const admin = await createMember(vexil, org.orgId, 'Admin');
    const response = await call(vexil, 'POST', tokens, {
      token: admin.token,
      body: { name: 'escalate', role: 'Owner' },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields).toHaveProperty('role');
    const same = await call(vexil, 'POST', tokens, {
      token: admin.token,
      body: { name: 'peer', role: 'Admin' },
    });
    expect(same.status).toBe(201);
  });

  it('unknown projectIds are 400', async () => {
    const response = await call(vexil, 'POST', tokens, {
      token: org.token,
      body: { name: 'x', role: 'Viewer', projectIds: ['00000000-0000-7000-8000-000000000000'] },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('validation_failed');
    expect(response.body.fields).toHaveProperty('projectIds');
  });

  it('a project allowlist admits its projects and hides the others (404, not 403)', async () => {
    const created = await call(vexil, 'POST', tokens, {
      token: org.token,
      body: { name: 'web only', role: 'Member', projectIds: [projectIds.web] },
    });
    expect(created.body.projectScope).toEqual([projectIds.web]);
    const headers = bearer(created.body.token);
    const me = await call(vexil, 'GET', '/api/v1/me', { headers });
    expect(me.body.projectScope).toEqual([projectIds.web]);
    expect((await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web', { headers })).status).toBe(
      200,
    );
    const hidden = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/mobile', { headers });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error).toBe('not_found');
    const hiddenById = await call(vexil, 'GET', `/api/v1/orgs/acme/projects/${projectIds.mobile}`, {
      headers,
    });
    expect(hiddenById.status).toBe(404);
    const flag = await call(vexil, 'POST', '/api/v1/orgs/acme/projects/mobile/flags', {
      headers,
      body: { key: 'sneaky' },
    });
    expect(flag.status).toBe(404);
    const list = await call(vexil, 'GET', '/api/v1/orgs/acme/projects', { headers });
    expect(list.body.items.map((p: { key: string }) => p.key)).toEqual(['web']);
  });

  it('revoked tokens stop working at once; revoking twice is 404', async () => {
    const created = await call(vexil, 'POST', tokens, {
      token: org.token,
      body: { name: 'temporary', role: 'Viewer' },
    });
    const headers = bearer(created.body.token);
    expect((await call(vexil, 'GET', '/api/v1/me', { headers })).status).toBe(200);
    const revoke = await call(vexil, 'DELETE', `${tokens}/${created.body.id}`, {
      token: org.token,
    });
    expect(revoke.status).toBe(204);
    expect((await call(vexil, 'GET', '/api/v1/me', { headers })).status).toBe(401);
    const list = await call(vexil, 'GET', tokens, { token: org.token });
    expect(list.body.items.map((item: { id: string }) => item.id)).not.toContain(created.body.id);
    expect(
      (await call(vexil, 'DELETE', `${tokens}/${created.body.id}`, { token: org.token })).status,
    ).toBe(404);
  });

  it('a service token sees only its own organization', async () => {
    const created = await call(vexil, 'POST', tokens, {
      token: org.token,
      body: { name: 'scoped', role: 'Owner' },
    });
    await createOrg(vexil, 'other');
    const headers = bearer(created.body.token);
    const orgs = await call(vexil, 'GET', '/api/v1/orgs', { headers });
    expect(orgs.body.items.map((o: { slug: string }) => o.slug)).toEqual(['acme']);
    expect((await call(vexil, 'GET', '/api/v1/orgs/other', { headers })).status).toBe(404);
  });
});
