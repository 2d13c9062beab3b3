import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOrg,
  createTestVexil,
  TEST_SECRETS_KEY,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { CLI, eventually, freePort, ServeProcess } from '../test-support/processes.js';
import { describeDatabase, nextSteps } from './start-up-banner.js';

const { version } = JSON.parse(
  await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string };

/** Lines of terminal output, without colours and carriage returns. */
function plainLines(output: string): string[] {
  return (
    output
      // eslint-disable-next-line no-control-regex -- ANSI colour sequences are what is removed
      .replace(/\x1b\[[0-9;]*m/g, '')
      .replace(/\r/g, '')
      .split('\n')
  );
}

describe('vexil serve on a terminal', () => {
  let directory: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'vexil-banner-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('prints the banner, then one line per request, evaluation refusals included', async () => {
    const port = await freePort();
    const database = join(directory, 'vexil.db');
    const output: string[] = [];
    // `script` gives the service a pseudo-terminal as standard output, as a shell does.
    const child = spawn('script', ['-qfc', `${process.execPath} ${CLI} serve`, '/dev/null'], {
      env: {
        ...process.env,
        VEXIL_HOST: '127.0.0.1',
        VEXIL_PORT: String(port),
        VEXIL_DATABASE_URL: database,
        VEXIL_SECRETS_KEY: TEST_SECRETS_KEY,
        VEXIL_LOG_LEVEL: 'info',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const text = () => plainLines(output.join(''));
    try {
      expect(await eventually(() => text().join('\n').includes('Server listening'), 60_000)).toBe(
        true,
      );
      const base = `http://127.0.0.1:${port}`;
      expect(text().slice(0, 5)).toEqual([
        `Vexil ${version}`,
        `  listening  ${base}`,
        `  console    ${base}/`,
        `  database   SQLite ${database}`,
        '  roles      management, evaluation, worker',
      ]);
      expect(text()[5]).toMatch(
        /^ {2}next {7}no organization yet: open http:\/\/127\.0\.0\.1:\d+\/ and enter the setup code [0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$/,
      );
      expect(text()[6]).toBe(
        '             (or script it: npx vexil bootstrap --org <slug> --email <your e-mail>)',
      );

      await fetch(`${base}/api/v1/me`);
      const sdkKey = 'vxl_srv_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
      await fetch(`${base}/v1/sdk/evaluate`, {
        method: 'POST',
        headers: { authorization: sdkKey, 'content-type': 'application/json' },
        body: JSON.stringify({ flagKey: 'f', context: {} }),
      });
      expect(
        await eventually(() => text().join('\n').includes('/v1/sdk/evaluate 401'), 20_000),
      ).toBe(true);
      const requests = text().filter((line) => / (GET|POST) \//.test(line));
      expect(requests).toEqual([
        expect.stringMatching(/INFO: GET \/api\/v1\/me 401 [\d.]+ ms: request completed/),
        expect.stringMatching(/INFO: POST \/v1\/sdk\/evaluate 401 [\d.]+ ms: request completed/),
      ]);
      // One line each: nothing indented follows the banner (pino-pretty's multi-line objects are).
      expect(
        text()
          .slice(7)
          .filter((line) => /^\s/.test(line)),
      ).toEqual([]);
      expect(output.join('')).not.toContain(sdkKey);
    } finally {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    }
  }, 120_000);

  it('logs the same facts as one JSON line when standard output is not a terminal', async () => {
    const node = await ServeProcess.start({
      VEXIL_DATABASE_URL: join(directory, 'json.db'),
      VEXIL_LOG_LEVEL: 'info',
    });
    try {
      const started = node.output
        .join('')
        .split('\n')
        .filter((line) => line.includes('Vexil started'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(started).toEqual([
        expect.objectContaining({
          msg: 'Vexil started',
          version,
          listening: node.baseUrl,
          console: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/),
          database: `SQLite ${join(directory, 'json.db')}`,
          roles: ['management', 'evaluation', 'worker'],
        }),
      ]);
    } finally {
      await node.stop();
    }
  }, 120_000);
});

describe('what the banner says', () => {
  it('names a PostgreSQL database by user, host and database, never the password', () => {
    expect(describeDatabase('postgres://vexil:s3cret@db.internal:5433/flags?sslmode=require')).toBe(
      'PostgreSQL vexil@db.internal:5433/flags',
    );
  });

  describe.each(testDialects())('on %s', (dialect) => {
    let vexil: TestVexil;
    beforeAll(async () => {
      vexil = await createTestVexil(dialect);
    });
    afterAll(() => vexil.close());

    it('the next step is setting up until there is an organization, then signing in', async () => {
      const consoleUrl = 'http://vexil.example/';
      const now = new Date();
      expect((await nextSteps(vexil.services.db, consoleUrl, now))[0]).toMatch(
        /^no organization yet: open http:\/\/vexil\.example\/ and enter the setup code /,
      );
      expect(await nextSteps(vexil.services.db, null, now)).toEqual([]);
      await createOrg(vexil);
      expect(await nextSteps(vexil.services.db, consoleUrl, now)).toEqual([
        'sign in at http://vexil.example/',
      ]);
    });
  });
});
