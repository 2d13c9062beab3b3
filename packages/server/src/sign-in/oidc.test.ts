import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueToken } from '../auth/tokens.js';
import { openDatabase, type Database, type Dialect } from '../db/database.js';
import { createPostgresDatabase, testDialects } from '../test-support/harness.js';
import {
  Browser,
  CLIENT_SECRET,
  TestProvider,
  throwAwayCertificate,
  type AccountClaims,
} from '../test-support/identity-provider.js';
import { bootstrapWithCli, ServeProcess } from '../test-support/processes.js';

/**
 * OpenID Connect sign-in against a real provider (`oidc-provider`) over HTTPS with a throw-away
 * certificate, which the `vexil serve` process trusts through NODE_EXTRA_CA_CERTS as it would a
 * company CA. The browser's round trip is driven over HTTP: start → provider → callback →
 * session → API.
 */

const ACCOUNTS: Record<string, AccountClaims> = {
  alice: { email: 'alice@acme.test', email_verified: true, name: 'Alice' },
  bob: { email: 'bob@acme.test', email_verified: true, name: 'Bob' },
  mallory: { email: 'mallory@evil.test', email_verified: true, name: 'Mallory' },
};

describe.each(testDialects())('OpenID Connect sign-in on %s', (dialect: Dialect) => {
  const folder = mkdtempSync(join(tmpdir(), 'vexil-oidc-'));
  const tls = throwAwayCertificate(folder);
  const idp = new TestProvider(tls, ACCOUNTS);
  const dispatcher = new Agent({ connect: { ca: tls.cert } });
  let vexil: ServeProcess;
  let database: Database;
  let dropDatabase: (() => Promise<void>) | undefined;
  let owner: string;
  let connectionId: string;

  beforeAll(async () => {
    let databaseUrl = join(folder, 'vexil.db');
    if (dialect === 'postgres') {
      const postgres = await createPostgresDatabase();
      databaseUrl = postgres.url;
      dropDatabase = postgres.drop;
    }
    await idp.listen();
    const env = {
      VEXIL_DATABASE_URL: databaseUrl,
      NODE_EXTRA_CA_CERTS: tls.certPath,
      // The test provider listens on loopback, which the SSRF guard refuses unless allowed.
      VEXIL_SSO_ALLOW_PRIVATE_ISSUERS: 'true',
    };
    owner = (await bootstrapWithCli(env)).token;
    vexil = await ServeProcess.start(env);
    idp.configure(`${vexil.baseUrl}/auth/sso/callback`);
    database = openDatabase(databaseUrl);

    const created = await vexil.request('POST', '/api/v1/orgs/acme/sso-connections', {
      token: owner,
      body: {
        name: 'Test IdP',
        issuer: idp.issuer,
        clientId: 'vexil',
        clientSecret: CLIENT_SECRET,
        allowedDomains: ['acme.test'],
        defaultRole: 'Member',
        autoCreateUsers: true,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.callbackUrl).toBe(`${vexil.baseUrl}/auth/sso/callback`);
    expect(JSON.stringify(created.body)).not.toContain(CLIENT_SECRET);
    connectionId = created.body.id;
    const stored = await database.db
      .selectFrom('sso_connections')
      .select('client_secret')
      .executeTakeFirstOrThrow();
    expect(stored.client_secret).not.toContain(CLIENT_SECRET);
  }, 60_000);

  afterAll(async () => {
    await vexil?.stop();
    await database?.close();
    await dropDatabase?.();
    await dispatcher.close();
    await idp.close();
    rmSync(folder, { recursive: true, force: true });
  });

  /** Start → provider → back to the callback address; returns the browser and that address. */
  async function throughProvider(account: string, beforeProvider?: () => Promise<void>) {
    idp.next = account;
    const browser = new Browser(dispatcher);
    const start = await browser.get(`${vexil.baseUrl}/auth/sso/acme`);
    expect(start.status, start.text).toBe(302);
    const authorize = new URL(start.location!);
    expect(authorize.origin).toBe(idp.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('state')).toEqual(expect.any(String));
    expect(authorize.searchParams.get('nonce')).toEqual(expect.any(String));
    await beforeProvider?.();
    let next = start.location!;
    while (!next.startsWith(vexil.baseUrl)) {
      const step = await browser.get(next);
      if (!step.location)
        throw new Error(`provider stopped at ${next}: ${step.status} ${step.text}`);
      next = step.location;
    }
    return { browser, callback: next };
  }

  async function signIn(account: string) {
    const { browser, callback } = await throughProvider(account);
    const finished = await browser.get(callback);
    expect(finished.status, finished.text).toBe(302);
    expect(finished.location).toBe(`${vexil.baseUrl}/`);
    const session = browser.cookie('vexil_session')!;
    expect(session).toMatch(/^vxl_ses_/);
    return { session, callback, browser };
  }

  const withSession = async (session: string, path: string, method = 'GET', body?: unknown) => {
    const response = await fetch(`${vexil.baseUrl}${path}`, {
      method,
      headers: {
        cookie: `vexil_session=${session}`,
        origin: vexil.baseUrl,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    // Tests read arbitrary JSON; asserting on it is the point.
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };

  const usersNamed = async (email: string) =>
    database.db.selectFrom('users').select('id').where('email', '=', email).execute();

  it('signs a new person in through the provider: user and membership created, session works', async () => {
    const { session } = await signIn('alice');
    const me = await withSession(session, '/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ type: 'user', email: 'alice@acme.test', name: 'Alice' });
    const projects = await withSession(session, '/api/v1/orgs/acme/projects');
    expect(projects.status).toBe(200);
    const member = await vexil.request('GET', `/api/v1/orgs/acme/members/${me.body.id}`, {
      token: owner,
    });
    expect(member.body).toMatchObject({ role: 'Member', email: 'alice@acme.test' });
    const audit = await vexil.request('GET', '/api/v1/orgs/acme/audit-log', { token: owner });
    expect(audit.body.items.map((event: { type: string }) => event.type)).toContain(
      'member.created',
    );
  });

  /** Where a browser is sent when the callback refuses it: the console's sign-in page. */
  const signInPageSaying = (reason: string) => `${vexil.baseUrl}/sign-in?error=${reason}`;

  it('a replayed callback, and a wrong state, are refused: a browser sees why on the sign-in page', async () => {
    const { callback, browser } = await signIn('alice');
    // Even with the state cookie back, the state and its code worked once.
    const state = new URL(callback).searchParams.get('state')!;
    browser.setCookie('vexil_sso_state', state);
    const replay = await browser.get(callback);
    expect(replay.status).toBe(302);
    expect(replay.location).toBe(signInPageSaying('sso_expired'));
    const wrongState = new URL(callback);
    wrongState.searchParams.set('state', 'not-the-state');
    const stranger = new Browser(dispatcher);
    stranger.setCookie('vexil_sso_state', 'not-the-state');
    const refused = await stranger.get(wrongState.href);
    expect(refused.location).toBe(signInPageSaying('sso_expired'));
    // An API client that asks for JSON gets the error envelope.
    stranger.setCookie('vexil_sso_state', 'not-the-state');
    const asJson = await stranger.get(wrongState.href, 'application/json');
    expect(asJson.status).toBe(400);
    expect(JSON.parse(asJson.text).error).toBe('sso_failed');
  });

  it('an error from the identity provider is shown on the sign-in page', async () => {
    const { browser, callback } = await throughProvider('alice');
    const denied = new URL(callback);
    denied.searchParams.delete('code');
    denied.searchParams.set('error', 'access_denied');
    const refused = await browser.get(denied.href);
    expect(refused.status).toBe(302);
    expect(refused.location).toBe(signInPageSaying('sso_provider_error'));
    expect(browser.cookie('vexil_session')).toBeUndefined();
  });

  it('a person who is not a member, where the connection adds nobody, is sent back to sign-in', async () => {
    const path = `/api/v1/orgs/acme/sso-connections/${connectionId}`;
    await vexil.request('PATCH', path, { token: owner, body: { autoCreateUsers: false } });
    try {
      const { browser, callback } = await throughProvider('bob');
      const refused = await browser.get(callback);
      expect(refused.location).toBe(signInPageSaying('sso_not_member'));
      expect(await usersNamed('bob@acme.test')).toEqual([]);
    } finally {
      await vexil.request('PATCH', path, { token: owner, body: { autoCreateUsers: true } });
    }
  });

  it('a wrong nonce is refused and nothing is written', async () => {
    const { browser, callback } = await throughProvider('bob', async () => {
      // What the callback will expect differs from what the provider put in the ID token.
      await database.db.updateTable('sso_sign_ins').set({ nonce: 'another-nonce' }).execute();
    });
    const refused = await browser.get(callback, 'application/json');
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text).message).toMatch(/nonce/);
    expect(browser.cookie('vexil_session')).toBeUndefined();
    expect(await usersNamed('bob@acme.test')).toEqual([]);
  });

  it('an address outside the allowed domains is refused and nothing is written', async () => {
    const { browser, callback } = await throughProvider('mallory');
    const refused = await browser.get(callback, 'application/json');
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.text)).toMatchObject({ error: 'sso_failed' });
    expect(JSON.parse(refused.text).message).toMatch(/allowed domain/);
    expect(await usersNamed('mallory@evil.test')).toEqual([]);
    const again = await throughProvider('mallory');
    const shown = await again.browser.get(again.callback);
    expect(shown.location).toBe(signInPageSaying('sso_domain_not_allowed'));
  });

  it('a disabled connection is refused', async () => {
    const path = `/api/v1/orgs/acme/sso-connections/${connectionId}`;
    await vexil.request('PATCH', path, { token: owner, body: { enabled: false } });
    const start = await new Browser(dispatcher).get(`${vexil.baseUrl}/auth/sso/acme`);
    expect(start.status).toBe(403);
    expect(JSON.parse(start.text).error).toBe('sign_in_disabled');
    await vexil.request('PATCH', path, { token: owner, body: { enabled: true } });
  });

  it('sso_required: the SSO session and tokens made in it pass; other credentials get 403', async () => {
    const { session } = await signIn('alice');
    const me = await withSession(session, '/api/v1/me');
    const viaSso = await withSession(session, '/api/v1/me/tokens', 'POST', { name: 'cli' });
    expect(viaSso.status).toBe(201);
    const outside = await issueToken(database.db, {
      kind: 'personal',
      userId: me.body.id,
      name: 'not through SSO',
      expiresAt: null,
      now: new Date().toISOString(),
    });
    const required = await vexil.request('PATCH', '/api/v1/orgs/acme', {
      token: owner,
      body: { ssoRequired: true, ssoConnectionId: connectionId },
    });
    expect(required.status, JSON.stringify(required.body)).toBe(200);

    expect((await withSession(session, '/api/v1/orgs/acme/projects')).status).toBe(200);
    const token = await vexil.request('GET', '/api/v1/orgs/acme/projects', {
      token: viaSso.body.token,
    });
    expect(token.status).toBe(200);
    const refused = await vexil.request('GET', '/api/v1/orgs/acme/projects', {
      token: outside.token,
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: 'sso_required', connection_id: connectionId });

    await vexil.request('PATCH', '/api/v1/orgs/acme', {
      token: owner,
      body: { ssoRequired: false },
    });
  });

  it('expired, revoked and removed: the session stops working', async () => {
    const expired = await signIn('alice');
    await database.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('revoked_at', 'is', null)
      .execute();
    expect((await withSession(expired.session, '/api/v1/me')).status).toBe(401);

    const revoked = await signIn('alice');
    const sessions = await withSession(revoked.session, '/api/v1/me/sessions');
    const current = sessions.body.items.find((item: { current: boolean }) => item.current);
    expect(current.ssoConnectionId).toBe(connectionId);
    const revoke = await withSession(
      revoked.session,
      `/api/v1/me/sessions/${current.id}`,
      'DELETE',
    );
    expect(revoke.status).toBe(204);
    expect((await withSession(revoked.session, '/api/v1/me')).status).toBe(401);

    const removed = await signIn('alice');
    const me = await withSession(removed.session, '/api/v1/me');
    const remove = await vexil.request('DELETE', `/api/v1/orgs/acme/members/${me.body.id}`, {
      token: owner,
    });
    expect(remove.status).toBe(204);
    expect((await withSession(removed.session, '/api/v1/orgs/acme/projects')).status).toBe(404);
  });
});
