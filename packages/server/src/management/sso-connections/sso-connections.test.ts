import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSecretBinding } from '../../auth/oidc.js';
import {
  call,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

const ID = '0190f5a0-0000-7000-8000-00000000c0de';

describe.each(testDialects())('SSO connections on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const base = '/api/v1/orgs/acme/sso-connections';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    // Created directly: creating through the API discovers the issuer (sign-in/oidc.test.ts).
    const now = vexil.services.clock.now().toISOString();
    await vexil.services.db
      .insertInto('sso_connections')
      .values({
        id: ID,
        organization_id: org.orgId,
        name: 'IdP',
        issuer: 'https://idp.acme.test',
        client_id: 'vexil',
        client_secret: vexil.services.signingSecrets.seal(clientSecretBinding(ID), 'the-secret'),
        allowed_domains: '["acme.test"]',
        default_role: 'Viewer',
        auto_create_users: 0,
        enabled: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
  });
  afterAll(() => vexil.close());

  it('an issuer that does not answer discovery, or is not https, is a 400 on issuer', async () => {
    for (const issuer of ['https://127.0.0.1:1/', 'http://idp.acme.test']) {
      const response = await call(vexil, 'POST', base, {
        token: org.token,
        body: { name: 'x', issuer, clientId: 'c', clientSecret: 's' },
      });
      expect(response.status, issuer).toBe(400);
      expect(response.body.fields, issuer).toHaveProperty('issuer');
    }
  });

  it('an http:// issuer is refused in words, not with the pattern', async () => {
    const response = await call(vexil, 'POST', base, {
      token: org.token,
      body: { name: 'x', issuer: 'http://idp.acme.test', clientId: 'c', clientSecret: 's' },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields.issuer).toEqual([
      "must be an https:// address (the identity provider's issuer URL)",
    ]);
  });

  it('reads never show the client secret; a PATCH keeps what it does not name', async () => {
    const list = await call(vexil, 'GET', base, { token: org.token });
    expect(list.body.items).toHaveLength(1);
    expect(list.text).not.toContain('the-secret');
    const patched = await call(vexil, 'PATCH', `${base}/${ID}`, {
      token: org.token,
      body: { name: 'Keycloak', clientSecret: 'a-new-secret', autoCreateUsers: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Keycloak',
      issuer: 'https://idp.acme.test',
      allowedDomains: ['acme.test'],
      autoCreateUsers: true,
      callbackUrl: `${vexil.config.publicUrl}/auth/sso/callback`,
    });
    expect(patched.text).not.toContain('a-new-secret');
    const stored = await vexil.services.db
      .selectFrom('sso_connections')
      .select('client_secret')
      .executeTakeFirstOrThrow();
    expect(vexil.services.signingSecrets.open(clientSecretBinding(ID), stored.client_secret)).toBe(
      'a-new-secret',
    );
  });

  it('the connection an org requires cannot be deleted; another can', async () => {
    await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { ssoRequired: true, ssoConnectionId: ID },
    });
    const refused = await call(vexil, 'DELETE', `${base}/${ID}`, { token: org.token });
    expect(refused.status).toBe(409);
    await call(vexil, 'PATCH', '/api/v1/orgs/acme', {
      token: org.token,
      body: { ssoRequired: false },
    });
    expect((await call(vexil, 'DELETE', `${base}/${ID}`, { token: org.token })).status).toBe(204);
    const after = await call(vexil, 'GET', '/api/v1/orgs/acme', { token: org.token });
    expect(after.body.ssoConnectionId).toBeNull();
  });
});
