import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { bootstrap } from '../management/orgs/bootstrap.js';
import {
  call,
  createOrg,
  createTestVexil,
  TestClock,
  testDialects,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';

const PASSWORD = 'correct horse battery staple';

function cookiesOf(response: TestResponse): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const header of [response.headers['set-cookie'] ?? []].flat().map(String)) {
    const [pair, ...attributes] = header.split(';').map((part) => part.trim());
    const [name, value] = pair!.split('=');
    cookies[name!] = value!;
    cookies[`${name!} attributes`] = attributes.join('; ');
  }
  return cookies;
}

describe.each(testDialects())('password sign-in and sessions on %s', (dialect) => {
  const clock = new TestClock();
  let vexil: TestVexil;
  let origin: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock, env: { VEXIL_SIGN_IN_RATE_LIMIT: '5' } });
    origin = new URL(vexil.config.publicUrl).origin;
    await createOrg(vexil);
    // `vexil bootstrap` can set the first Owner's password.
    await bootstrap(vexil.services.db, {
      slug: 'acme',
      email: 'owner@acme.test',
      password: PASSWORD,
      plan: 'Enterprise',
      now: clock.now(),
    });
  });
  afterAll(() => vexil.close());

  async function signIn(email = 'owner@acme.test') {
    const response = await call(vexil, 'POST', '/auth/password', {
      body: { email, password: PASSWORD },
    });
    expect(response.status, response.text).toBe(204);
    const cookies = cookiesOf(response);
    return {
      cookies,
      headers: { cookie: `vexil_session=${cookies.vexil_session}` },
    };
  }

  it('signs in: an HttpOnly, SameSite=Lax session cookie; /me answers as for a token', async () => {
    const { cookies, headers } = await signIn();
    expect(cookies.vexil_session).toMatch(/^vxl_ses_/);
    expect(cookies['vexil_session attributes']).toContain('HttpOnly');
    expect(cookies['vexil_session attributes']).toContain('SameSite=Lax');
    expect(cookies['vexil_session attributes']).toContain('Path=/');
    expect(cookies['vexil_session attributes']).not.toContain('Secure');
    expect(cookies['vexil_csrf attributes']).not.toContain('HttpOnly');
    const me = await call(vexil, 'GET', '/api/v1/me', { headers });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ type: 'user', email: 'owner@acme.test' });
    const stored = await vexil.services.db.selectFrom('sessions').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain(cookies.vexil_session);
  });

  it('a wrong password and an unknown address give the same 401', async () => {
    const wrong = await call(vexil, 'POST', '/auth/password', {
      body: { email: 'owner@acme.test', password: 'not the password at all' },
    });
    const unknown = await call(vexil, 'POST', '/auth/password', {
      body: { email: 'nobody@acme.test', password: 'not the password at all' },
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('failed attempts are limited per address', async () => {
    const attempt = () =>
      call(vexil, 'POST', '/auth/password', {
        body: { email: 'target@acme.test', password: 'guess guess guess' },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await attempt()).status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    const limited = await attempt();
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('rate_limited');
  });

  it('cookie-authenticated changes need the console origin or the CSRF token; GETs and bearer do not', async () => {
    const { cookies, headers } = await signIn();
    const body = { key: 'csrf', name: 'CSRF' };
    const url = '/api/v1/orgs/acme/projects';
    const bare = await call(vexil, 'POST', url, { headers, body });
    expect(bare.status).toBe(403);
    expect(bare.body.error).toBe('csrf_rejected');
    const foreign = await call(vexil, 'POST', url, {
      headers: { ...headers, origin: 'https://evil.example' },
      body,
    });
    expect(foreign.status).toBe(403);
    const wrongToken = await call(vexil, 'POST', url, {
      headers: { ...headers, 'x-csrf-token': 'nope' },
      body,
    });
    expect(wrongToken.status).toBe(403);
    expect((await call(vexil, 'GET', url, { headers })).status).toBe(200);
    const withToken = await call(vexil, 'POST', url, {
      headers: { ...headers, 'x-csrf-token': cookies.vexil_csrf! },
      body,
    });
    expect(withToken.status).toBe(201);
    const withOrigin = await call(vexil, 'POST', url, {
      headers: { ...headers, origin },
      body: { key: 'csrf2', name: 'CSRF 2' },
    });
    expect(withOrigin.status).toBe(201);
    const projects = await vexil.services.db
      .selectFrom('projects')
      .select('key')
      .where('key', 'like', 'csrf%')
      .execute();
    expect(projects.map((row) => row.key).sort()).toEqual(['csrf', 'csrf2']);
  });

  it('lists own sessions, revokes one, and signs out', async () => {
    const first = await signIn();
    const second = await signIn();
    const list = await call(vexil, 'GET', '/api/v1/me/sessions', { headers: first.headers });
    const current = list.body.items.filter((item: { current: boolean }) => item.current);
    expect(current).toHaveLength(1);
    expect(list.body.items.length).toBeGreaterThanOrEqual(2);
    expect(list.text).not.toContain(first.cookies.vexil_session);
    const other = (list.body.items as { id: string; current: boolean }[]).find(
      (item) => !item.current,
    )!;
    // Revoke every other session, so the second one is among them.
    for (const item of list.body.items as { id: string; current: boolean }[]) {
      if (item.current) continue;
      const revoke = await call(vexil, 'DELETE', `/api/v1/me/sessions/${item.id}`, {
        headers: { ...first.headers, origin },
      });
      expect(revoke.status).toBe(204);
    }
    expect(other).toBeDefined();
    expect((await call(vexil, 'GET', '/api/v1/me', { headers: second.headers })).status).toBe(401);

    const logout = await call(vexil, 'POST', '/auth/logout', {
      headers: { ...first.headers, origin },
    });
    expect(logout.status).toBe(204);
    expect(cookiesOf(logout).vexil_session).toBe('');
    expect((await call(vexil, 'GET', '/api/v1/me', { headers: first.headers })).status).toBe(401);
  });

  it('a session ends after the idle time, and after the absolute lifetime even when used', async () => {
    const idle = await signIn();
    clock.advance(vexil.config.signIn.sessionIdleMs + 1000);
    const expired = await call(vexil, 'GET', '/api/v1/me', { headers: idle.headers });
    expect(expired.status).toBe(401);
    expect(expired.body.message).toMatch(/expired/);

    const busy = await signIn();
    const step = vexil.config.signIn.sessionIdleMs / 2;
    for (let used = 0; used < vexil.config.signIn.sessionLifetimeMs - step; used += step) {
      clock.advance(step);
      expect((await call(vexil, 'GET', '/api/v1/me', { headers: busy.headers })).status).toBe(200);
    }
    clock.advance(step);
    expect((await call(vexil, 'GET', '/api/v1/me', { headers: busy.headers })).status).toBe(401);
  });

  it('a personal token made in a session is an ordinary token; service tokens have no sessions', async () => {
    const { headers } = await signIn();
    const created = await call(vexil, 'POST', '/api/v1/me/tokens', {
      headers: { ...headers, origin },
      body: { name: 'from the console' },
    });
    expect(created.status).toBe(201);
    expect((await call(vexil, 'GET', '/api/v1/me', { token: created.body.token })).status).toBe(
      200,
    );
  });
});

describe('password sign-in switched off', () => {
  it('refuses with 403 sign_in_disabled', async () => {
    const vexil = await createTestVexil('sqlite', { env: { VEXIL_PASSWORD_SIGN_IN: 'false' } });
    await bootstrap(vexil.services.db, {
      slug: 'acme',
      email: 'owner@acme.test',
      password: PASSWORD,
      plan: 'Enterprise',
      now: new Date(),
    });
    const response = await call(vexil, 'POST', '/auth/password', {
      body: { email: 'owner@acme.test', password: PASSWORD },
    });
    expect(response.status).toBe(403);
    expect(response.body.error).toBe('sign_in_disabled');
    await vexil.close();
  });
});

describe('sign-in input', () => {
  it.each(testDialects())('on %s: a form post is 415, a NUL character 400', async (dialect) => {
    const vexil = await createTestVexil(dialect);
    const form = await vexil.app.inject({
      method: 'POST',
      url: '/auth/password',
      headers: { 'content-type': 'text/plain' },
      payload: '{"email":"a@b.test","password":"x"}',
    });
    expect(form.statusCode).toBe(415);
    const nul = await call(vexil, 'POST', '/auth/password', {
      body: { email: 'a\u0000@b.test', password: 'whatever whatever' },
    });
    expect(nul.status).toBe(400);
    await vexil.close();
  });
});

const REDIS_URL = process.env.VEXIL_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe.each([
  { store: 'sqlite', dialect: 'sqlite', redisUrl: null },
  { store: 'postgres', dialect: 'postgres', redisUrl: null },
  { store: 'redis', dialect: 'sqlite', redisUrl: REDIS_URL },
] as const)('password attempts in parallel, counted in $store', ({ dialect, redisUrl }) => {
  it('cannot pass the limit: some are 429, and the right password after the limit does not sign in', async () => {
    if (redisUrl) {
      // Redis keeps its counts between runs: this test's client IP starts afresh.
      const redis = new Redis(redisUrl);
      await redis.del('vexil:attempts:ip:password:127.0.0.1');
      redis.disconnect();
    }
    const vexil = await createTestVexil(dialect, { config: { redisUrl } });
    const email = `victim-${randomUUID()}@acme.test`;
    await bootstrap(vexil.services.db, {
      slug: 'acme',
      email,
      password: PASSWORD,
      plan: 'Enterprise',
      now: new Date(),
    });
    const attempts = Array.from({ length: 30 }, (_, i) =>
      call(vexil, 'POST', '/auth/password', {
        body: { email, password: i === 29 ? PASSWORD : `wrong guess number ${i}` },
      }),
    );
    const statuses = (await Promise.all(attempts)).map((response) => response.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
    expect(statuses[29]).toBe(429);
    expect(await vexil.services.db.selectFrom('sessions').selectAll().execute()).toEqual([]);
    await vexil.close();
  });
});
