import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestResponse,
  type TestVexil,
} from '../../test-support/harness.js';
import { startMailbox, type Mailbox } from '../../test-support/mailbox.js';

/** The session cookie a response set, as a console request sends it back (with its Origin). */
function sessionOf(vexil: TestVexil, response: TestResponse): Record<string, string> {
  const cookies = [response.headers['set-cookie'] ?? []].flat().map(String);
  const session = cookies.find((cookie) => cookie.startsWith('vexil_session='));
  if (!session) throw new Error(`no session cookie: ${response.status} ${response.text}`);
  return { cookie: session.split(';')[0]!, origin: new URL(vexil.config.publicUrl).origin };
}

const tokenOf = (acceptUrl: string) => new URL(acceptUrl).hash.replace('#token=', '');

describe.each(testDialects())('members and invitations on %s', (dialect) => {
  const clock = new TestClock();
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let mailbox: Mailbox;

  beforeAll(async () => {
    // A real SMTP server receives the invitations.
    mailbox = await startMailbox();
    vexil = await createTestVexil(dialect, {
      clock,
      env: { VEXIL_SMTP_URL: mailbox.url, VEXIL_SMTP_FROM: 'vexil@acme.test' },
    });
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
  });
  afterAll(async () => {
    await vexil.close();
    await mailbox.close();
  });

  const invite = (body: Record<string, unknown>, token = org.token) =>
    call(vexil, 'POST', '/api/v1/orgs/acme/invitations', { token, body });

  it('a person is invited, accepts with a password, signs in, is demoted and removed; all audited', async () => {
    const created = await invite({ email: 'Ada@Acme.test', role: 'Member' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email: 'ada@acme.test', role: 'Member', emailed: true });
    expect(created.body.acceptUrl).toMatch(/^http:\/\/.+\/invitations\/accept#token=vxl_inv_/);
    const token = tokenOf(created.body.acceptUrl);

    const pending = await call(vexil, 'GET', '/api/v1/orgs/acme/invitations', {
      token: org.token,
    });
    expect(pending.body.items.map((item: { id: string }) => item.id)).toContain(created.body.id);
    expect(pending.text).not.toContain(token);

    // The e-mail arrives off the request path, with the link in it.
    await expect
      .poll(() => mailbox.mails.find((mail) => mail.to === 'ada@acme.test'))
      .toBeDefined();
    expect(mailbox.mails.find((mail) => mail.to === 'ada@acme.test')!.body).toContain(token);

    const shortPassword = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      body: { token, name: 'Ada', password: 'short' },
    });
    expect(shortPassword.status).toBe(400);
    expect(shortPassword.body.fields).toHaveProperty('password');

    const accepted = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      body: { token, name: 'Ada', password: 'correct horse battery' },
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ organization: { slug: 'acme' }, role: 'Member' });
    const userId = accepted.body.userId as string;
    const session = sessionOf(vexil, accepted);
    const me = await call(vexil, 'GET', '/api/v1/me', { headers: session });
    expect(me.body).toMatchObject({
      type: 'user',
      id: userId,
      email: 'ada@acme.test',
      name: 'Ada',
    });

    const again = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      body: { token, name: 'Eve', password: 'correct horse battery' },
    });
    expect(again.status).toBe(410);
    expect(again.body.error).toBe('invitation_used');

    // Signing in with the password gives a new session that works like a token.
    const signIn = await call(vexil, 'POST', '/auth/password', {
      body: { email: 'ADA@acme.test', password: 'correct horse battery' },
    });
    expect(signIn.status).toBe(204);
    const second = sessionOf(vexil, signIn);
    const flags = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web/flags', {
      headers: second,
    });
    expect(flags.status).toBe(200);
    const toggle =
      '/api/v1/orgs/acme/projects/web/flags/new-checkout/environments/production/toggle';
    expect(
      (await call(vexil, 'POST', toggle, { headers: second, body: { enabled: true } })).status,
    ).toBe(204);

    const member = await call(vexil, 'GET', `/api/v1/orgs/acme/members/${userId}`, {
      token: org.token,
    });
    expect(member.body).toMatchObject({
      userId,
      email: 'ada@acme.test',
      role: 'Member',
      projectIds: null,
    });
    expect(member.body.lastSeenAt).toEqual(expect.any(String));

    const demoted = await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${userId}`, {
      token: org.token,
      body: { role: 'Viewer' },
    });
    expect(demoted.body.role).toBe('Viewer');
    const refused = await call(vexil, 'POST', toggle, {
      headers: second,
      body: { enabled: false },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');

    const removed = await call(vexil, 'DELETE', `/api/v1/orgs/acme/members/${userId}`, {
      token: org.token,
    });
    expect(removed.status).toBe(204);
    for (const headers of [session, second]) {
      const gone = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web/flags', { headers });
      expect(gone.status).toBe(404);
    }

    const audit = await call(vexil, 'GET', '/api/v1/orgs/acme/audit-log?limit=50', {
      token: org.token,
    });
    const types = (audit.body.items as { type: string; entity: { id: string } }[])
      .filter((event) => [userId, created.body.id].includes(event.entity.id))
      .map((event) => event.type)
      .reverse();
    expect(types).toEqual([
      'invitation.created',
      'invitation.accepted',
      'member.created',
      'member.updated',
      'member.deleted',
    ]);
    expect(audit.text).not.toContain(token);
  });

  it('a revoked link gives 410 invitation_revoked, an expired one 410 invitation_expired', async () => {
    const revoked = await invite({ email: 'rev@acme.test', role: 'Viewer' });
    expect(
      (
        await call(vexil, 'DELETE', `/api/v1/orgs/acme/invitations/${revoked.body.id}`, {
          token: org.token,
        })
      ).status,
    ).toBe(204);
    const useRevoked = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      body: { token: tokenOf(revoked.body.acceptUrl), name: 'R', password: 'a long enough one' },
    });
    expect(useRevoked.status).toBe(410);
    expect(useRevoked.body.error).toBe('invitation_revoked');

    const expiring = await invite({ email: 'late@acme.test', role: 'Viewer' });
    clock.advance(vexil.config.signIn.invitationLifetimeMs + 1000);
    const useExpired = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      body: { token: tokenOf(expiring.body.acceptUrl), name: 'L', password: 'a long enough one' },
    });
    expect(useExpired.status).toBe(410);
    expect(useExpired.body.error).toBe('invitation_expired');
    const users = await vexil.services.db
      .selectFrom('users')
      .select('id')
      .where('email', 'in', ['rev@acme.test', 'late@acme.test'])
      .execute();
    expect(users).toEqual([]);
  });

  it('an invitation is accepted only by its address; a signed-in user joins with it', async () => {
    const other = await createOrg(vexil, 'globex', { email: 'grace@globex.test' });
    const forGrace = await invite({ email: 'grace@globex.test', role: 'Admin' });
    const forSomeoneElse = await invite({ email: 'someone@acme.test', role: 'Admin' });
    const wrong = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      token: other.token,
      body: { token: tokenOf(forSomeoneElse.body.acceptUrl) },
    });
    expect(wrong.status).toBe(403);
    const right = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      token: other.token,
      body: { token: tokenOf(forGrace.body.acceptUrl) },
    });
    expect(right.status).toBe(200);
    expect(right.body).toMatchObject({ userId: other.userId, role: 'Admin' });
    expect(
      (await call(vexil, 'GET', '/api/v1/orgs/acme/service-tokens', { token: other.token })).status,
    ).toBe(200);
  });

  it('the last Owner is kept; only an Owner grants Owner; roles above your own are refused', async () => {
    // Nobody changes their own role (design record 033); the last Owner cannot leave either.
    const ownRole = await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${org.userId}`, {
      token: org.token,
      body: { role: 'Admin' },
    });
    expect(ownRole.status).toBe(403);
    expect(ownRole.body.error).toBe('own_access');
    expect(
      (await call(vexil, 'DELETE', `/api/v1/orgs/acme/members/${org.userId}`, { token: org.token }))
        .status,
    ).toBe(409);

    const admin = await createMember(vexil, org.orgId, 'Admin');
    const viewer = await createMember(vexil, org.orgId, 'Viewer');
    const promote = await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${viewer.userId}`, {
      token: admin.token,
      body: { role: 'Owner' },
    });
    expect(promote.status).toBe(403);
    const inviteOwner = await invite({ email: 'boss@acme.test', role: 'Owner' }, admin.token);
    expect(inviteOwner.status).toBe(403);
    const removeOwner = await call(vexil, 'DELETE', `/api/v1/orgs/acme/members/${org.userId}`, {
      token: admin.token,
    });
    expect(removeOwner.status).toBe(403);

    // With a second Owner, the first may be demoted by the second.
    await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${admin.userId}`, {
      token: org.token,
      body: { role: 'Owner' },
    });
    const stepDown = await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${org.userId}`, {
      token: admin.token,
      body: { role: 'Admin' },
    });
    expect(stepDown.status).toBe(200);
    await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${org.userId}`, {
      token: admin.token,
      body: { role: 'Owner' },
    });
  });

  it("a member's project allowlist limits the projects they reach", async () => {
    const member = await createMember(vexil, org.orgId, 'Member');
    const other = await call(vexil, 'POST', '/api/v1/orgs/acme/projects', {
      token: org.token,
      body: { key: 'mobile', name: 'Mobile' },
    });
    const limited = await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${member.userId}`, {
      token: org.token,
      body: { projectIds: [other.body.id] },
    });
    expect(limited.body.projectIds).toEqual([other.body.id]);
    const web = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web', {
      token: member.token,
    });
    expect(web.status).toBe(404);
    const mobile = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/mobile', {
      token: member.token,
    });
    expect(mobile.status).toBe(200);
    const unknown = await call(vexil, 'PATCH', `/api/v1/orgs/acme/members/${member.userId}`, {
      token: org.token,
      body: { projectIds: ['00000000-0000-7000-8000-000000000000'] },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.fields).toHaveProperty('projectIds');
  });

  it('inviting a member again is a conflict', async () => {
    const again = await invite({ email: 'owner@acme.test', role: 'Viewer' });
    expect(again.status).toBe(409);
    expect(again.body.fields).toHaveProperty('email');
  });
});
