import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database, type Dialect } from '../db/database.js';
import { createPostgresDatabase, testDialects } from '../test-support/harness.js';
import {
  Browser,
  CLIENT_SECRET,
  TestProvider,
  throughProvider,
  throwAwayCertificate,
} from '../test-support/identity-provider.js';
import { bootstrapWithCli, ServeProcess } from '../test-support/processes.js';

/**
 * Identity providers bind to one organization (design record 032), tried end to end as an
 * attacker would: two organizations, `acme` (the victim) and `evil`, each with its own real
 * OpenID Connect provider over HTTPS. Evil's Owner controls evil's provider, which asserts
 * whatever address it likes, verified.
 */
describe.each(testDialects())('SSO across organizations on %s', (dialect: Dialect) => {
  const folder = mkdtempSync(join(tmpdir(), 'vexil-sso-binding-'));
  const tls = throwAwayCertificate(folder);
  const acmeIdp = new TestProvider(tls, {
    alice: { email: 'alice@acme.test', email_verified: true, name: 'Alice' },
    'another-alice': { email: 'alice@acme.test', email_verified: true, name: 'Not Alice' },
    'acme-pat': { email: 'pat@acme.test', email_verified: true, name: 'Pat' },
    'acme-mallory': { email: 'mallory@evil.test', email_verified: true, name: 'Mallory' },
    legacy: { email: 'legacy@acme.test', email_verified: true, name: 'Legacy' },
  });
  const evilIdp = new TestProvider(tls, {
    'as-owner': { email: 'owner@acme.test', email_verified: true, name: 'Owner' },
    'as-owner-upper-case': { email: 'OWNER@Acme.Test', email_verified: true, name: 'Owner' },
    'as-alice': { email: 'alice@acme.test', email_verified: true, name: 'Alice' },
    'as-pat': { email: 'pat@acme.test', email_verified: true, name: 'Pat' },
    'as-legacy': { email: 'legacy@acme.test', email_verified: true, name: 'Legacy' },
    mallory: { email: 'mallory@evil.test', email_verified: true, name: 'Mallory' },
    silent: { email: 'silent@evil.test', name: 'Says nothing of verification' },
  });
  const dispatcher = new Agent({ connect: { ca: tls.cert } });
  let vexil: ServeProcess;
  let database: Database;
  let dropDatabase: (() => Promise<void>) | undefined;
  const owners = { acme: '', evil: '' };
  const connections = { acme: '', evil: '' };

  beforeAll(async () => {
    let databaseUrl = join(folder, 'vexil.db');
    if (dialect === 'postgres') {
      const postgres = await createPostgresDatabase();
      databaseUrl = postgres.url;
      dropDatabase = postgres.drop;
    }
    await Promise.all([acmeIdp.listen(), evilIdp.listen()]);
    const env = {
      VEXIL_DATABASE_URL: databaseUrl,
      NODE_EXTRA_CA_CERTS: tls.certPath,
      VEXIL_SSO_ALLOW_PRIVATE_ISSUERS: 'true',
      // Refusals are logged at info: the test reads the log for addresses.
      VEXIL_LOG_LEVEL: 'info',
    };
    owners.acme = (await bootstrapWithCli(env, 'acme')).token;
    owners.evil = (await bootstrapWithCli(env, 'evil')).token;
    vexil = await ServeProcess.start(env);
    acmeIdp.configure(`${vexil.baseUrl}/auth/sso/callback`);
    evilIdp.configure(`${vexil.baseUrl}/auth/sso/callback`);
    database = openDatabase(databaseUrl);
    for (const [org, idp, allowedDomains] of [
      ['acme', acmeIdp, ['acme.test']],
      // The attacker's connection: adds anyone, as Admin, from any domain.
      ['evil', evilIdp, []],
    ] as const) {
      const created = await vexil.request('POST', `/api/v1/orgs/${org}/sso-connections`, {
        token: owners[org],
        body: {
          name: `${org} IdP`,
          issuer: idp.issuer,
          clientId: 'vexil',
          clientSecret: CLIENT_SECRET,
          allowedDomains,
          defaultRole: org === 'evil' ? 'Admin' : 'Member',
          autoCreateUsers: true,
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      connections[org] = created.body.id;
    }
  }, 90_000);

  afterAll(async () => {
    await vexil?.stop();
    await database?.close();
    await dropDatabase?.();
    await dispatcher.close();
    await Promise.all([acmeIdp.close(), evilIdp.close()]);
    rmSync(folder, { recursive: true, force: true });
  });

  const signInPageSaying = (reason: string) => `${vexil.baseUrl}/sign-in?error=${reason}`;

  /** Signs `sub` in through `org`'s provider in `browser`; returns where the callback sent it. */
  async function ssoThrough(
    org: 'acme' | 'evil',
    sub: string,
    browser = new Browser(dispatcher),
    accept?: string,
  ) {
    const idp = org === 'acme' ? acmeIdp : evilIdp;
    idp.next = sub;
    const callback = await throughProvider(
      browser,
      `${vexil.baseUrl}/auth/sso/${org}`,
      vexil.baseUrl,
    );
    const finished = await browser.get(callback, accept);
    return { browser, finished, session: browser.cookie('vexil_session') };
  }

  /** A successful SSO sign-in: the session cookie's value. */
  async function signedIn(org: 'acme' | 'evil', sub: string, browser?: Browser) {
    const { finished, session } = await ssoThrough(org, sub, browser);
    expect(finished.location, finished.text).toBe(`${vexil.baseUrl}/`);
    expect(session).toMatch(/^vxl_ses_/);
    return session!;
  }

  const asSession = (session: string, method: string, path: string, body?: unknown) =>
    vexil.request(method, path, {
      headers: { cookie: `vexil_session=${session}`, origin: vexil.baseUrl },
      ...(body !== undefined ? { body } : {}),
    });

  const userId = async (email: string) =>
    (
      await database.db
        .selectFrom('users')
        .select('id')
        .where('email', '=', email)
        .executeTakeFirst()
    )?.id;

  const memberOf = async (org: string, email: string) =>
    database.db
      .selectFrom('memberships')
      .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select('memberships.role')
      .where('organizations.slug', '=', org)
      .where('users.email', '=', email)
      .executeTakeFirst();

  /** Invites `email` to `org` as `role` and accepts in `browser` (signing up when it has no session). */
  async function inviteAndAccept(
    org: 'acme' | 'evil',
    email: string,
    role: string,
    browser: Browser,
  ) {
    const invitation = await vexil.request('POST', `/api/v1/orgs/${org}/invitations`, {
      token: owners[org],
      body: { email, role },
    });
    expect(invitation.status, JSON.stringify(invitation.body)).toBe(201);
    const token = new URL(invitation.body.acceptUrl).hash.replace('#token=', '');
    return {
      token,
      accept: () =>
        browser.post(`${vexil.baseUrl}/api/v1/invitations/accept`, {
          token,
          name: 'Pat',
          password: 'a password of pat',
        }),
    };
  }

  it("another organization's provider asserting an Owner's address signs nobody in, whatever the case", async () => {
    const ownerId = await userId('owner@acme.test');
    for (const sub of ['as-owner', 'as-owner-upper-case']) {
      const { finished, session } = await ssoThrough('evil', sub);
      expect(finished.location, sub).toBe(signInPageSaying('sso_account_exists'));
      expect(session, sub).toBeUndefined();
      const asJson = await ssoThrough('evil', sub, undefined, 'application/json');
      expect(asJson.finished.status, sub).toBe(403);
      expect(JSON.parse(asJson.finished.text)).toMatchObject({ error: 'sso_failed' });
    }
    expect(await memberOf('evil', 'owner@acme.test')).toBeUndefined();
    const links = await database.db
      .selectFrom('sso_identities')
      .selectAll()
      .where('user_id', '=', ownerId!)
      .execute();
    expect(links).toEqual([]);
    // Not a second account under another spelling either.
    const owners = await database.db
      .selectFrom('users')
      .select('email')
      .where('email', 'like', '%wner@%cme.%est')
      .execute();
    expect(owners).toEqual([{ email: 'owner@acme.test' }]);
  });

  it("an address in one of the victim's domains, allowed by the attacker's connection, signs nobody in", async () => {
    // Alice joined acme through acme's provider.
    await signedIn('acme', 'alice');
    const evilConnection = `/api/v1/orgs/evil/sso-connections/${connections.evil}`;
    await vexil.request('PATCH', evilConnection, {
      token: owners.evil,
      body: { allowedDomains: ['acme.test'] },
    });
    try {
      const { finished, session } = await ssoThrough('evil', 'as-alice');
      expect(finished.location).toBe(signInPageSaying('sso_account_exists'));
      expect(session).toBeUndefined();
      expect(await memberOf('evil', 'alice@acme.test')).toBeUndefined();
    } finally {
      await vexil.request('PATCH', evilConnection, {
        token: owners.evil,
        body: { allowedDomains: [] },
      });
    }
  });

  it('returning people are found by (connection, sub): another sub asserting their address is refused', async () => {
    const alice = await signedIn('acme', 'alice');
    const me = await asSession(alice, 'GET', '/api/v1/me');
    expect(me.body).toMatchObject({ email: 'alice@acme.test', organizationId: expect.any(String) });
    const { finished, session } = await ssoThrough('acme', 'another-alice');
    expect(finished.location).toBe(signInPageSaying('sso_account_exists'));
    expect(session).toBeUndefined();
  });

  it('a person in both organizations links each provider by signing in first; each SSO session counts in its own organization only', async () => {
    // Pat signs up through evil's invitation (with a password), then joins acme as Owner.
    const browser = new Browser(dispatcher);
    const toEvil = await inviteAndAccept('evil', 'pat@acme.test', 'Member', browser);
    expect((await toEvil.accept()).status).toBe(200);
    const patPassword = browser.cookie('vexil_session')!;
    expect(patPassword).toMatch(/^vxl_ses_/);

    // Not signed in: evil's provider asserting Pat's address is refused, nothing linked.
    const unproven = await ssoThrough('evil', 'as-pat');
    expect(unproven.finished.location).toBe(signInPageSaying('sso_account_exists'));
    // Signed in with the password in the same browser: linked.
    const patEvil = await signedIn('evil', 'as-pat', browser);
    // From then on the link finds Pat in any browser.
    await signedIn('evil', 'as-pat');

    // An invitation to acme cannot be accepted with evil's SSO session.
    const toAcme = await inviteAndAccept('acme', 'pat@acme.test', 'Owner', browser);
    const refused = await asSession(patEvil, 'POST', '/api/v1/invitations/accept', {
      token: toAcme.token,
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    const accepted = await asSession(patPassword, 'POST', '/api/v1/invitations/accept', {
      token: toAcme.token,
    });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(await memberOf('acme', 'pat@acme.test')).toEqual({ role: 'Owner' });

    // Acme requires its own connection; Pat, an Owner there, would be exempt.
    await vexil.request('PATCH', '/api/v1/orgs/acme', {
      token: owners.acme,
      body: { ssoRequired: true, ssoConnectionId: connections.acme },
    });
    try {
      const evilOrg = await vexil.request('GET', '/api/v1/orgs/evil', { token: owners.evil });
      const me = await asSession(patEvil, 'GET', '/api/v1/me');
      expect(me.body).toMatchObject({
        email: 'pat@acme.test',
        organizationId: evilOrg.body.id,
        ssoConnectionId: connections.evil,
      });
      const orgs = await asSession(patEvil, 'GET', '/api/v1/orgs');
      expect(orgs.body.items.map((org: { slug: string }) => org.slug)).toEqual(['evil']);
      expect((await asSession(patEvil, 'GET', '/api/v1/orgs/evil/projects')).status).toBe(200);
      for (const path of [
        '/api/v1/orgs/acme',
        '/api/v1/orgs/acme/projects',
        '/api/v1/orgs/acme/sso-connections',
        '/api/v1/orgs/acme/members',
      ])
        expect((await asSession(patEvil, 'GET', path)).status, path).toBe(404);

      // A token made in evil's SSO session is bound the same way.
      const pat = await asSession(patEvil, 'POST', '/api/v1/me/tokens', { name: 'cli' });
      expect(pat.status).toBe(201);
      const withToken = (path: string) => vexil.request('GET', path, { token: pat.body.token });
      expect((await withToken('/api/v1/orgs/evil/projects')).status).toBe(200);
      expect((await withToken('/api/v1/orgs/acme/sso-connections')).status).toBe(404);
      expect((await withToken('/api/v1/orgs')).body.items).toHaveLength(1);
      const created = await vexil.request('POST', '/api/v1/me/tokens', {
        token: pat.body.token,
        body: { name: 'made with the bound token' },
      });
      expect(
        (await vexil.request('GET', '/api/v1/orgs/acme', { token: created.body.token })).status,
      ).toBe(404);

      // Its own sessions and tokens only: the password session and its tokens stay out of reach.
      const sessions = await asSession(patEvil, 'GET', '/api/v1/me/sessions');
      expect(
        sessions.body.items.every(
          (item: { ssoConnectionId: string }) => item.ssoConnectionId === connections.evil,
        ),
      ).toBe(true);
      const passwordToken = await asSession(patPassword, 'POST', '/api/v1/me/tokens', {
        name: 'not through SSO',
      });
      const tokens = await asSession(patEvil, 'GET', '/api/v1/me/tokens');
      expect(tokens.body.items.map((item: { id: string }) => item.id)).not.toContain(
        passwordToken.body.id,
      );
      expect(
        (await asSession(patEvil, 'DELETE', `/api/v1/me/tokens/${passwordToken.body.id}`)).status,
      ).toBe(404);

      // Acme's own provider, linked the same way (signed in with the password again), satisfies
      // acme's sso_required.
      browser.setCookie('vexil_session', patPassword);
      const patAcme = await signedIn('acme', 'acme-pat', browser);
      expect((await asSession(patAcme, 'GET', '/api/v1/orgs/acme/projects')).status).toBe(200);
      expect((await asSession(patAcme, 'GET', '/api/v1/orgs/evil')).status).toBe(404);
    } finally {
      await vexil.request('PATCH', '/api/v1/orgs/acme', {
        token: owners.acme,
        body: { ssoRequired: false },
      });
    }
  });

  it('login CSRF: a finished callback opened in another browser signs nobody in', async () => {
    evilIdp.next = 'mallory';
    const attacker = new Browser(dispatcher);
    const callback = await throughProvider(
      attacker,
      `${vexil.baseUrl}/auth/sso/evil`,
      vexil.baseUrl,
    );
    const victim = new Browser(dispatcher);
    const opened = await victim.get(callback);
    expect(opened.location).toBe(signInPageSaying('sso_other_browser'));
    expect(victim.cookie('vexil_session')).toBeUndefined();
    expect(await userId('mallory@evil.test')).toBeUndefined();
    // The browser that started it still finishes it.
    const finished = await attacker.get(callback);
    expect(finished.location).toBe(`${vexil.baseUrl}/`);
  });

  it('an ID token without email_verified is not taken as verified', async () => {
    const { finished, session } = await ssoThrough('evil', 'silent');
    expect(finished.location).toBe(signInPageSaying('sso_email_unverified'));
    expect(session).toBeUndefined();
    expect(await userId('silent@evil.test')).toBeUndefined();
  });

  it('an account that only its organization reaches (no password, no link) is claimed by that organization alone', async () => {
    // As single sign-on created people before links were kept.
    const acme = await vexil.request('GET', '/api/v1/orgs/acme', { token: owners.acme });
    const id = '0190f5a0-0000-7000-8000-00000000abcd';
    const now = new Date().toISOString();
    await database.db
      .insertInto('users')
      .values({ id, email: 'legacy@acme.test', name: 'Legacy', email_verified: 1, created_at: now })
      .execute();
    await database.db
      .insertInto('memberships')
      .values({
        organization_id: acme.body.id,
        user_id: id,
        role: 'Member',
        project_ids: null,
        created_at: now,
      })
      .execute();
    expect((await ssoThrough('evil', 'as-legacy')).finished.location).toBe(
      signInPageSaying('sso_account_exists'),
    );
    const legacy = await signedIn('acme', 'legacy');
    expect((await asSession(legacy, 'GET', '/api/v1/me')).body.id).toBe(id);
  });

  it('refusals do not log the refused address', async () => {
    const { finished } = await ssoThrough('acme', 'acme-mallory');
    expect(finished.location).toBe(signInPageSaying('sso_domain_not_allowed'));
    const log = vexil.output.join('');
    expect(log).toContain('SSO sign-in refused');
    for (const address of ['mallory@evil.test', 'owner@acme.test', 'OWNER@Acme.Test', 'silent@'])
      expect(log).not.toContain(address);
  });

  it('connections are audited: created, updated (the secret never shown), deleted with their sessions and tokens', async () => {
    const patEvil = await signedIn('evil', 'as-pat');
    const token = (await asSession(patEvil, 'POST', '/api/v1/me/tokens', { name: 'bound' })).body
      .token as string;
    const path = `/api/v1/orgs/evil/sso-connections/${connections.evil}`;
    await vexil.request('PATCH', path, {
      token: owners.evil,
      body: { name: 'Renamed', clientSecret: 'a-new-secret-value' },
    });
    expect((await vexil.request('DELETE', path, { token: owners.evil })).status).toBe(204);
    const audit = await vexil.request('GET', '/api/v1/orgs/evil/audit-log?type=sso_connection.', {
      token: owners.evil,
    });
    expect(audit.text).not.toContain('a-new-secret-value');
    expect(audit.text).not.toContain(CLIENT_SECRET);
    const events: { type: string; changes: unknown[] }[] = audit.body.items;
    expect(new Set(events.map((event) => event.type))).toEqual(
      new Set(['sso_connection.created', 'sso_connection.updated', 'sso_connection.deleted']),
    );
    expect(events.flatMap((event) => event.changes)).toEqual(
      expect.arrayContaining([
        { property: 'Name', from: 'evil IdP', to: 'Renamed' },
        { property: 'ClientSecret', from: null, to: '(replaced)' },
      ]),
    );
    expect((await asSession(patEvil, 'GET', '/api/v1/me')).status).toBe(401);
    expect((await vexil.request('GET', '/api/v1/me', { token })).status).toBe(401);
  });
});
