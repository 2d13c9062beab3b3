import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { startMailbox, type Mailbox } from '../test-support/mailbox.js';

/** Issue 31, findings 6 and 7: password changes, strength, and reset by e-mail (design record 034). */

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a fresh passphrase for spring';

describe.each(testDialects())('passwords on %s', (dialect) => {
  const clock = new TestClock();
  let vexil: TestVexil;
  let mailbox: Mailbox;
  let origin: string;

  beforeAll(async () => {
    mailbox = await startMailbox();
    vexil = await createTestVexil(dialect, {
      clock,
      env: { VEXIL_SMTP_URL: mailbox.url, VEXIL_PASSWORD_RESET_LIFETIME: '30m' },
    });
    origin = new URL(vexil.config.publicUrl).origin;
    await createOrg(vexil);
  });
  afterAll(async () => {
    await vexil.close();
    await mailbox.close();
  });

  /** A person with `password`, as `vexil bootstrap --password-stdin` makes them. */
  async function person(email: string, password = PASSWORD) {
    return bootstrap(vexil.services.db, {
      slug: 'acme',
      email,
      password,
      plan: 'Enterprise',
      now: clock.now(),
    });
  }

  function signIn(email: string, password: string): Promise<TestResponse> {
    return call(vexil, 'POST', '/auth/password', { body: { email, password } });
  }

  /** Signs in and returns the headers a console request sends (cookie and Origin). */
  async function session(email: string, password = PASSWORD): Promise<Record<string, string>> {
    const response = await signIn(email, password);
    expect(response.status, response.text).toBe(204);
    const cookie = [response.headers['set-cookie'] ?? []]
      .flat()
      .map(String)
      .find((header) => header.startsWith('vexil_session='))!;
    return { cookie: cookie.split(';')[0]!, origin };
  }

  const me = (headers: Record<string, string>) =>
    call(vexil, 'GET', '/api/v1/me', { headers }).then((response) => response.status);

  it('a new password through vexil bootstrap ends the sessions started with the old one', async () => {
    await person('boot@acme.test');
    const before = await session('boot@acme.test');
    await person('boot@acme.test', NEW_PASSWORD);
    expect(await me(before)).toBe(401);
    expect((await signIn('boot@acme.test', PASSWORD)).status).toBe(401);
    expect(await me(await session('boot@acme.test', NEW_PASSWORD))).toBe(200);
  });

  it('common and guessable passwords are refused with a field error, wherever one is set', async () => {
    for (const weak of ['password1234', 'qwertyuiop123', 'iloveyou2026', 'weak@acme.test1']) {
      await expect(person('weak@acme.test', weak), weak).rejects.toMatchObject({
        code: 'validation_failed',
        detail: { fields: { '--password-stdin': [expect.stringContaining('too easy to guess')] } },
      });
    }
    await person('weak@acme.test');
    const changed = await call(vexil, 'POST', '/api/v1/me/password', {
      headers: await session('weak@acme.test'),
      body: { currentPassword: PASSWORD, newPassword: 'password1234' },
    });
    expect(changed.status).toBe(400);
    expect(changed.body.fields.newPassword[0]).toContain('too easy to guess');
  });

  it('a person changes their own password: the current one is checked, their other sessions end, this one stays', async () => {
    await person('ada@acme.test');
    const here = await session('ada@acme.test');
    const elsewhere = await session('ada@acme.test');
    const change = (currentPassword: string) =>
      call(vexil, 'POST', '/api/v1/me/password', {
        headers: here,
        body: { currentPassword, newPassword: NEW_PASSWORD },
      });
    const wrong = await change('not my password at all');
    expect(wrong.status).toBe(400);
    expect(wrong.body.fields).toEqual({ currentPassword: ['is not your current password'] });
    expect(await me(elsewhere)).toBe(200);

    expect((await change(PASSWORD)).status).toBe(204);
    expect(await me(here)).toBe(200);
    expect(await me(elsewhere)).toBe(401);
    expect((await signIn('ada@acme.test', PASSWORD)).status).toBe(401);
    expect((await signIn('ada@acme.test', NEW_PASSWORD)).status).toBe(204);
  });

  it('guesses at the current password are limited as sign-ins are', async () => {
    await person('guessed@acme.test');
    const headers = await session('guessed@acme.test');
    const statuses = [];
    for (let i = 0; i < vexil.config.signIn.attempts.points + 1; i++) {
      const response = await call(vexil, 'POST', '/api/v1/me/password', {
        headers,
        body: { currentPassword: `guess number ${i}`, newPassword: NEW_PASSWORD },
      });
      statuses.push(response.status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 400)).toBe(true);
  });

  /** The reset link's token from the newest mail to `to`. */
  async function linkTokenFor(to: string, after: number): Promise<string> {
    await expect
      .poll(() => mailbox.mails.slice(after).find((mail) => mail.to === to))
      .toBeDefined();
    const mail = mailbox.mails.slice(after).find((m) => m.to === to)!;
    const link = /(http\S+\/reset-password#token=(vxl_pwr_[\w-]+))/.exec(mail.body);
    expect(link?.[1]).toMatch(new RegExp(`^${vexil.config.publicUrl}/reset-password#token=`));
    return link![2]!;
  }

  it('a forgotten password is reset through a single-use link sent by e-mail; every session ends', async () => {
    await person('grace@acme.test');
    const before = await session('grace@acme.test');
    const sent = mailbox.mails.length;
    const known = await call(vexil, 'POST', '/auth/password-reset', {
      body: { email: 'Grace@acme.test' },
    });
    const unknown = await call(vexil, 'POST', '/auth/password-reset', {
      body: { email: 'nobody@acme.test' },
    });
    // The same answer whether or not the address belongs to anyone.
    expect([known.status, known.text]).toEqual([202, '']);
    expect([unknown.status, unknown.text]).toEqual([202, '']);
    const token = await linkTokenFor('grace@acme.test', sent);
    expect(mailbox.mails.slice(sent).some((mail) => mail.to === 'nobody@acme.test')).toBe(false);
    // Stored as its hash only.
    const rows = await vexil.services.db.selectFrom('password_resets').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(token);

    const complete = (newPassword: string) =>
      call(vexil, 'POST', '/auth/password-reset/complete', { body: { token, newPassword } });
    const weak = await complete('password1234');
    expect(weak.status).toBe(400);
    expect(weak.body.fields).toHaveProperty('newPassword');
    // A refused password does not use the link up.
    expect((await complete(NEW_PASSWORD)).status).toBe(204);
    expect(await me(before)).toBe(401);
    expect((await signIn('grace@acme.test', PASSWORD)).status).toBe(401);
    expect((await signIn('grace@acme.test', NEW_PASSWORD)).status).toBe(204);

    const again = await complete('yet another fine passphrase');
    expect(again.status).toBe(400);
    expect(again.body.fields).toHaveProperty('token');
  });

  it('a reset link expires, and a newer one replaces it', async () => {
    await person('late@acme.test');
    const request = () =>
      call(vexil, 'POST', '/auth/password-reset', { body: { email: 'late@acme.test' } });
    let sent = mailbox.mails.length;
    await request();
    const first = await linkTokenFor('late@acme.test', sent);
    sent = mailbox.mails.length;
    await request();
    const second = await linkTokenFor('late@acme.test', sent);
    const complete = (token: string) =>
      call(vexil, 'POST', '/auth/password-reset/complete', {
        body: { token, newPassword: NEW_PASSWORD },
      });
    expect((await complete(first)).status).toBe(400);
    clock.advance(31 * 60_000);
    const expired = await complete(second);
    expect(expired.status).toBe(400);
    expect(expired.body.fields.token[0]).toContain('expired');
    expect((await signIn('late@acme.test', PASSWORD)).status).toBe(204);
  });

  it('reset requests are limited per address, known or not', async () => {
    const statuses = [];
    for (let i = 0; i < vexil.config.signIn.attempts.points + 1; i++)
      statuses.push(
        (await call(vexil, 'POST', '/auth/password-reset', { body: { email: 'spam@acme.test' } }))
          .status,
      );
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 202)).toBe(true);
  });
});

describe('password reset without SMTP', () => {
  it('answers as with it, and stores and sends nothing (the link can reach nobody else)', async () => {
    const vexil = await createTestVexil('sqlite');
    await createOrg(vexil);
    const response = await call(vexil, 'POST', '/auth/password-reset', {
      body: { email: 'owner@acme.test' },
    });
    expect([response.status, response.text]).toEqual([202, '']);
    expect(await vexil.services.db.selectFrom('password_resets').selectAll().execute()).toEqual([]);
    await vexil.close();
  });
});
