import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe.each(testDialects())('caller identity and personal tokens on %s', (dialect) => {
  const clock = new TestClock();
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
  });
  afterAll(() => vexil.close());

  it('GET /me for a user carries only the user fields', async () => {
    const me = await call(vexil, 'GET', '/api/v1/me', { token: org.token });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      type: 'user',
      id: org.userId,
      name: null,
      email: 'owner@acme.test',
      emailVerified: false,
    });
  });

  it('GET /me for a service token omits user fields, and projectScope when unscoped', async () => {
    const created = await call(vexil, 'POST', '/api/v1/orgs/acme/service-tokens', {
      token: org.token,
      body: { name: 'ci', role: 'Member' },
    });
    const me = await call(vexil, 'GET', '/api/v1/me', bearer(created.body.token));
    expect(me.body).toEqual({
      type: 'service_token',
      id: created.body.id,
      name: 'ci',
      organizationId: org.orgId,
      role: 'Member',
    });
    expect(me.body).not.toHaveProperty('projectScope');
  });

  it('personal tokens: create (shown once), list without the secret, revoke', async () => {
    const created = await call(vexil, 'POST', '/api/v1/me/tokens', {
      token: org.token,
      body: { name: 'laptop' },
    });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^vxl_pat_[A-Za-z0-9_-]{43}$/);
    expect(created.body.lastFourCharacters).toBe(created.body.token.slice(-4));
    expect(created.body.warning).toEqual(expect.any(String));
    expect((await call(vexil, 'GET', '/api/v1/me', { token: created.body.token })).status).toBe(
      200,
    );

    const list = await call(vexil, 'GET', '/api/v1/me/tokens', { token: org.token });
    const listed = list.body.items.find((item: { id: string }) => item.id === created.body.id);
    expect(listed).toMatchObject({
      name: 'laptop',
      lastFourCharacters: created.body.token.slice(-4),
    });
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);

    const revoke = await call(vexil, 'DELETE', `/api/v1/me/tokens/${created.body.id}`, {
      token: org.token,
    });
    expect(revoke.status).toBe(204);
    expect((await call(vexil, 'GET', '/api/v1/me', { token: created.body.token })).status).toBe(
      401,
    );
    const again = await call(vexil, 'DELETE', `/api/v1/me/tokens/${created.body.id}`, {
      token: org.token,
    });
    expect(again.status).toBe(404);
  });

  it('a personal token with an expiry stops working when it passes', async () => {
    const expiresAt = new Date(clock.now().getTime() + 60_000).toISOString();
    const created = await call(vexil, 'POST', '/api/v1/me/tokens', {
      token: org.token,
      body: { name: 'short', expiresAt },
    });
    expect(created.body.expiresAt).toBe(expiresAt);
    expect((await call(vexil, 'GET', '/api/v1/me', { token: created.body.token })).status).toBe(
      200,
    );
    clock.advance(61_000);
    const expired = await call(vexil, 'GET', '/api/v1/me', { token: created.body.token });
    expect(expired.status).toBe(401);
    expect(expired.body.error).toBe('unauthorized');
  });

  it('an expiry in the past is refused', async () => {
    const response = await call(vexil, 'POST', '/api/v1/me/tokens', {
      token: org.token,
      body: { name: 'past', expiresAt: '2020-01-01T00:00:00Z' },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields).toHaveProperty('expiresAt');
  });

  it("another user's token cannot be revoked through /me/tokens", async () => {
    const other = await createOrg(vexil, 'other');
    const theirs = await call(vexil, 'POST', '/api/v1/me/tokens', {
      token: other.token,
      body: { name: 'theirs' },
    });
    const attempt = await call(vexil, 'DELETE', `/api/v1/me/tokens/${theirs.body.id}`, {
      token: org.token,
    });
    expect(attempt.status).toBe(404);
    expect((await call(vexil, 'GET', '/api/v1/me', { token: theirs.body.token })).status).toBe(200);
  });
});
