import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { eventually, ServeProcess } from '../test-support/processes.js';
import { openFirstRunSetup } from './first-run.js';

const SETUP = {
  orgSlug: 'acme',
  orgName: 'Acme Inc.',
  email: 'Owner@Acme.test',
  name: 'Ada Owner',
  password: 'correct horse battery staple',
};

/** The session cookie a response set, as a `cookie` header. */
function sessionCookie(headers: TestResponseHeaders): string {
  const cookies = [headers['set-cookie'] ?? []].flat().map(String);
  return cookies.map((cookie) => cookie.split(';')[0]).join('; ');
}
type TestResponseHeaders = Record<string, string | string[] | number | undefined>;

describe.each(testDialects())('first run in the browser on %s', (dialect) => {
  let vexil: TestVexil;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
  });
  afterAll(() => vexil.close());

  it('creates the first organization and its Owner once, with a code printed at start', async () => {
    expect((await call(vexil, 'GET', '/auth/setup')).body).toEqual({ required: true });
    const code = await openFirstRunSetup(vexil.services.db, new Date());
    expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
    const otherNodesCode = await openFirstRunSetup(vexil.services.db, new Date());

    const wrong = await call(vexil, 'POST', '/auth/setup', {
      body: { ...SETUP, setupCode: 'AAAA-AAAA-AAAA' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.fields).toHaveProperty('setupCode');

    const weak = await call(vexil, 'POST', '/auth/setup', {
      body: { ...SETUP, setupCode: code, password: 'short' },
    });
    expect(weak.status).toBe(400);
    expect(weak.body.fields).toHaveProperty('password');

    // Typed as a person reads it off a terminal: lower case, spaces for dashes.
    const typed = code!.toLowerCase().replaceAll('-', ' ');
    const created = await call(vexil, 'POST', '/auth/setup', {
      body: { ...SETUP, setupCode: typed },
    });
    expect(created.status).toBe(201);
    expect(created.body.org.slug).toBe('acme');

    const me = await call(vexil, 'GET', '/api/v1/me', {
      headers: { cookie: sessionCookie(created.headers) },
    });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe('owner@acme.test');
    const org = await call(vexil, 'GET', '/api/v1/orgs/acme', {
      headers: { cookie: sessionCookie(created.headers) },
    });
    expect(org.status).toBe(200);
    expect(org.body.name).toBe('Acme Inc.');

    expect((await call(vexil, 'GET', '/auth/setup')).body).toEqual({ required: false });
    // Every code is spent: another node's, and the same again.
    for (const setupCode of [otherNodesCode, code]) {
      const again = await call(vexil, 'POST', '/auth/setup', {
        body: { ...SETUP, orgSlug: 'other', setupCode },
      });
      expect(again.status).toBe(409);
    }
    expect(await openFirstRunSetup(vexil.services.db, new Date())).toBeUndefined();
  });
});

describe('first run: guessing', () => {
  let vexil: TestVexil;
  beforeAll(async () => {
    vexil = await createTestVexil('sqlite');
  });
  afterAll(() => vexil.close());

  it('refuses an address that sent ten wrong codes, even with the right one', async () => {
    const code = await openFirstRunSetup(vexil.services.db, new Date());
    for (let attempt = 0; attempt < 10; attempt++) {
      const wrong = await call(vexil, 'POST', '/auth/setup', {
        body: { ...SETUP, setupCode: `WRONG-${attempt}` },
      });
      expect(wrong.status).toBe(400);
    }
    const limited = await call(vexil, 'POST', '/auth/setup', {
      body: { ...SETUP, setupCode: code },
    });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('rate_limited');
  });

  it('is closed on an instance that has an organization', async () => {
    const other = await createTestVexil('sqlite');
    await createOrg(other);
    expect((await call(other, 'GET', '/auth/setup')).body).toEqual({ required: false });
    expect(await openFirstRunSetup(other.services.db, new Date())).toBeUndefined();
    await other.close();
  });
});

describe('vexil serve on a fresh database', () => {
  const directory = mkdtempSync(join(tmpdir(), 'vexil-first-run-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('prints a setup code that opens the first-run setup', async () => {
    const node = await ServeProcess.start({
      VEXIL_DATABASE_URL: join(directory, 'vexil.db'),
      VEXIL_LOG_LEVEL: 'info',
    });
    try {
      const printed = () =>
        /setup code ([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4})/.exec(node.output.join(''))?.[1];
      expect(await eventually(() => printed() !== undefined, 10_000)).toBe(true);
      const code = printed();
      const response = await fetch(`${node.baseUrl}/auth/setup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...SETUP, setupCode: code }),
      });
      expect(response.status).toBe(201);
    } finally {
      await node.stop();
    }
  });
});
