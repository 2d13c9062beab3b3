import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

const CONNECTION = '0190f5a0-0000-7000-8000-00000000c0de';

describe.each(testDialects())('organizations on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    await createOrg(vexil, 'other');
    const now = vexil.services.clock.now().toISOString();
    await vexil.services.db
      .insertInto('sso_connections')
      .values({
        id: CONNECTION,
        organization_id: org.orgId,
        name: 'IdP',
        issuer: 'https://idp.acme.test',
        client_id: 'vexil',
        client_secret: vexil.services.signingSecrets.seal(`sso_connection:${CONNECTION}`, 's'),
        allowed_domains: '[]',
        default_role: 'Viewer',
        auto_create_users: 0,
        enabled: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
  });
  afterAll(() => vexil.close());

  it('list shows only the caller’s organizations; get by slug or id', async () => {
    const list = await call(vexil, 'GET', '/api/v1/orgs', { token: org.token });
    expect(list.body.items.map((o: { slug: string }) => o.slug)).toEqual(['acme']);
    expect(list.body.next_cursor).toBeNull();
    for (const ref of ['acme', org.orgId]) {
      const got = await call(vexil, 'GET', `/api/v1/orgs/${ref}`, { token: org.token });
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ id: org.orgId, slug: 'acme', plan: 'Enterprise' });
      expect(got.body._actions.update).toEqual({ allowed: true, reason: null });
    }
    expect((await call(vexil, 'GET', '/api/v1/orgs/other', { token: org.token })).status).toBe(404);
  });

  it('update is Owner only and checks the plan enum', async () => {
    const admin = await createMember(vexil, org.orgId, 'Admin');
    const refused = await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: admin.token,
      body: { name: 'Hijacked' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    const adminView = await call(vexil, 'GET', '/api/v1/orgs/acme', { token: admin.token });
    expect(adminView.body._actions.update.allowed).toBe(false);
    expect(adminView.body._actions.manageMembers.allowed).toBe(true);
    const member = await createMember(vexil, org.orgId, 'Member');
    const memberView = await call(vexil, 'GET', '/api/v1/orgs/acme', { token: member.token });
    expect(memberView.body._actions.manageMembers).toEqual({
      allowed: false,
      reason: 'requires the Admin role',
    });

    const updated = await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { name: 'Acme Inc', plan: 'Team' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Acme Inc', plan: 'Team' });
    const badPlan = await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { plan: 'Free' },
    });
    expect(badPlan.status).toBe(400);
    expect(badPlan.body.fields).toHaveProperty('plan');
  });

  it('ssoRequired needs a connection id', async () => {
    const response = await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { ssoRequired: true },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields).toHaveProperty('ssoConnectionId');
  });

  it("ssoConnectionId must name one of the org's connections", async () => {
    const response = await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { ssoRequired: true, ssoConnectionId: '0190f5a0-0000-7000-8000-00000000beef' },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields).toHaveProperty('ssoConnectionId');
  });

  it('SSO required: members without SSO get 403 sso_required; Owners and service tokens still work', async () => {
    const member = await createMember(vexil, org.orgId, 'Member');
    const service = await call(vexil, 'POST', '/api/v1/orgs/acme/service-tokens', {
      token: org.token,
      body: { name: 'automation', role: 'Member' },
    });
    const enabled = await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { ssoRequired: true, ssoConnectionId: CONNECTION },
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ ssoRequired: true, ssoConnectionId: CONNECTION });

    const blocked = await call(vexil, 'GET', '/api/v1/orgs/acme/projects', {
      token: member.token,
    });
    expect(blocked.status).toBe(403);
    expect(blocked.body).toMatchObject({ error: 'sso_required', connection_id: CONNECTION });
    expect(blocked.body.docs_url).toMatch(/#sso_required$/);

    expect(
      (await call(vexil, 'GET', '/api/v1/orgs/acme/projects', { token: org.token })).status,
    ).toBe(200);
    const viaService = await call(vexil, 'GET', '/api/v1/orgs/acme/projects', {
      headers: { authorization: `Bearer ${service.body.token}` },
    });
    expect(viaService.status).toBe(200);

    const disabled = await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { ssoRequired: false },
    });
    expect(disabled.body.ssoRequired).toBe(false);
    expect(
      (await call(vexil, 'GET', '/api/v1/orgs/acme/projects', { token: member.token })).status,
    ).toBe(200);
  });
});
