import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import SQLite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { TEST_SECRETS_KEY } from './test-support/harness.js';
import { CLI } from './test-support/processes.js';

const run = promisify(execFile);

describe('the vexil command', () => {
  it('--version and -V print the server package version', async () => {
    const manifest = JSON.parse(
      await readFile(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    for (const flag of ['--version', '-V']) {
      const { stdout } = await run(process.execPath, [CLI, flag]);
      expect(stdout.trim()).toBe(manifest.version);
    }
  });
});

/** Runs the CLI; resolves with its exit code and output, whether it succeeds or fails. */
async function outcome(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [CLI, ...args], { env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: unknown) => {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    },
  );
}

describe('the CLI for a newcomer', () => {
  it('a missing or unreadable file is one line naming it and exit 1; --debug adds the stack', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'vexil-cli-'));
    const env = { ...process.env, VEXIL_DATABASE_URL: join(directory, 'vexil.db') };
    try {
      const missing = await outcome(['apply', join(directory, 'nope.yaml'), '--org', 'acme'], env);
      expect(missing).toEqual({
        code: 1,
        stdout: '',
        stderr: `${join(directory, 'nope.yaml')}: no such file or directory\n`,
      });
      const folder = await outcome(['apply', directory, '--org', 'acme'], env);
      expect(folder.code).toBe(1);
      expect(folder.stderr).toBe(`${directory}: illegal operation on a directory\n`);
      const debug = await outcome(
        ['apply', join(directory, 'nope.yaml'), '--org', 'acme', '--debug'],
        env,
      );
      expect(debug.code).toBe(1);
      expect(debug.stderr).toMatch(/\n\s+at /);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120_000);

  it('bootstrap issues a token to a new Owner; for an existing one only with --token, saying so otherwise', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'vexil-cli-'));
    const env = { ...process.env, VEXIL_DATABASE_URL: join(directory, 'vexil.db') };
    const args = ['bootstrap', '--org', 'acme', '--email', 'you@example.com'];
    try {
      const first = await outcome(args, env);
      expect(first.code).toBe(0);
      expect(JSON.parse(first.stdout)).toMatchObject({
        token: expect.stringMatching(/^vxl_pat_/),
        alreadyOwner: false,
      });
      const again = await outcome(args, env);
      // No token: a pipeline reading `.token` must not go on with "null".
      expect(again.code).toBe(1);
      expect(JSON.parse(again.stdout)).toMatchObject({ token: null, alreadyOwner: true });
      expect(again.stderr).toBe(
        'you@example.com is the Owner of acme already: no new token (pass --token for one).\n',
      );
      const asked = await outcome([...args, '--token'], env);
      const token = (JSON.parse(asked.stdout) as { token: string }).token;
      expect(token).toMatch(/^vxl_pat_/);
      expect(token).not.toBe((JSON.parse(first.stdout) as { token: string }).token);
      expect(asked.stderr).toBe('');
      // Another organization on an instance that has one already is created, and said so.
      const second = await outcome(
        ['bootstrap', '--org', 'other', '--email', 'you@example.com'],
        env,
      );
      expect(second.code).toBe(0);
      expect(second.stderr).toBe(
        'created organization other; this instance has others already: acme (to use one, pass its slug as --org).\n',
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120_000);

  it('the help texts cite no design record', async () => {
    const { stdout } = await run(process.execPath, [CLI, '--help']);
    const commands = [...stdout.matchAll(/^ {2}([a-z]+) /gm)].map((match) => match[1] ?? '');
    expect(commands).toContain('export');
    for (const command of commands) {
      const help = await run(process.execPath, [CLI, command, '--help']);
      expect(help.stdout, command).not.toMatch(/design record|\b0\d\d\b/i);
    }
  }, 120_000);
});

describe('vexil export and vexil apply', () => {
  it('apply creates the project, plans, applies once, then finds nothing to do; export is stable; a bad document exits 1 with paths', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'vexil-cli-'));
    const env = { ...process.env, VEXIL_DATABASE_URL: join(directory, 'vexil.db') };
    const vexil = (...args: string[]) => run(process.execPath, [CLI, ...args], { env });
    try {
      await vexil('bootstrap', '--org', 'acme', '--email', 'owner@acme.test');
      const file = join(directory, 'web.yaml');
      await writeFile(
        file,
        [
          'version: 1',
          'project: { key: web, name: Web }',
          'environments: [{ key: production }]',
          'flags:',
          '  - key: dark-mode',
          '    type: Boolean',
          '    variations: [{ key: "on", value: "true" }, { key: "off", value: "false" }]',
          '    environments:',
          '      production: { enabled: true, defaultVariation: "on", offVariation: "off" }',
          '',
        ].join('\n'),
      );
      const dryRun = await vexil('apply', file, '--org', 'acme', '--dry-run');
      expect(dryRun.stdout).toContain('+ create project web');
      expect(dryRun.stdout).toContain('Dry run: nothing was changed.');
      const applied = await vexil('apply', file, '--org', 'acme');
      expect(applied.stdout).toContain('+ create flag dark-mode  (flags[0])');
      expect(applied.stdout).toContain('Applied: 3 to create');
      const again = await vexil('apply', file, '--org', 'acme');
      expect(again.stdout.trim()).toBe('No changes: the project matches the document.');
      const exported = await vexil('export', '--org', 'acme', '--project', 'web');
      expect((await vexil('export', '--org', 'acme', '--project', 'web')).stdout).toBe(
        exported.stdout,
      );
      expect(exported.stdout).toContain('enabled: true');
      await writeFile(
        file,
        exported.stdout.replace('defaultVariation: "on"', 'defaultVariation: maybe'),
      );
      const refused = await vexil('apply', file, '--org', 'acme').then(
        () => null,
        (error: unknown) => error as { code: number; stderr: string },
      );
      expect(refused?.code).toBe(1);
      expect(refused?.stderr).toContain('flags[0].environments.production.defaultVariation:');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('vexil apply --change-request', () => {
  it('a plan reaching a protected environment exits 1 naming it; with a title it opens a change request and applies the rest', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'vexil-cli-'));
    const database = join(directory, 'vexil.db');
    const env = { ...process.env, VEXIL_DATABASE_URL: database };
    const vexil = (...args: string[]) => run(process.execPath, [CLI, ...args], { env });
    const document = (production: boolean, tag: string) =>
      [
        'version: 1',
        'project: { key: web, name: Web }',
        'environments: [{ key: staging }, { key: production }]',
        'flags:',
        '  - key: dark-mode',
        '    type: Boolean',
        `    tags: [${tag}]`,
        '    variations: [{ key: "on", value: "true" }, { key: "off", value: "false" }]',
        '    environments:',
        `      production: { enabled: ${production}, defaultVariation: "on", offVariation: "off" }`,
        '',
      ].join('\n');
    try {
      await vexil('bootstrap', '--org', 'acme', '--email', 'owner@acme.test');
      const file = join(directory, 'web.yaml');
      await writeFile(file, document(false, 'one'));
      await vexil('apply', file, '--org', 'acme');
      const db = new SQLite(database);
      db.prepare(
        "UPDATE environments SET change_requests_required = 1 WHERE key = 'production'",
      ).run();
      db.close();

      await writeFile(file, document(true, 'two'));
      const refused = await vexil('apply', file, '--org', 'acme').then(
        () => null,
        (error: unknown) => error as { code: number; stderr: string },
      );
      expect(refused?.code).toBe(1);
      expect(refused?.stderr).toContain('environment "production" serves');
      expect(refused?.stderr).toContain('--change-request');
      expect(refused?.stderr).toContain('flags[0].environments.production.enabled:');

      // A dry run shows the plan, marking what would need a change request, and exits 0.
      const planned = await vexil('apply', file, '--org', 'acme', '--dry-run');
      expect(planned.stdout).toContain(
        '~ update configuration dark-mode@production  (flags[0].environments.production.enabled)  [change request in production]',
      );
      expect(planned.stdout).toContain('reaches "production", which requires change requests');
      expect(planned.stdout).toContain('Dry run: nothing was changed.');

      const proposed = await vexil(
        'apply',
        file,
        '--org',
        'acme',
        '--change-request',
        'Dark mode on',
      );
      expect(proposed.stdout).toContain('~ update flag dark-mode  (flags[0])');
      expect(proposed.stdout).toContain(
        '~ update configuration dark-mode@production  (flags[0].environments.production.enabled)  [change request in production]',
      );
      expect(proposed.stdout).toContain(
        '1 of these proposed in change requests rather than written',
      );
      expect(proposed.stdout).toContain('Change request #1 opened in production (1 change, open)');
      const exported = (await vexil('export', '--org', 'acme', '--project', 'web')).stdout;
      expect(exported).toContain('- two');
      expect(exported).not.toContain('enabled: true');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('vexil serve --workers', () => {
  it('refuses a count that is not a positive integer or auto, before starting anything', async () => {
    const failure = await run(process.execPath, [CLI, 'serve', '--workers', 'many']).then(
      () => null,
      (error: unknown) => error as { code: number; stderr: string },
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toMatch(/--workers must be a positive integer or "auto"/);
  });

  it('exits 1 when the first worker cannot listen, instead of restarting it forever', async () => {
    const occupied = createServer();
    await new Promise<void>((resolve) => occupied.listen(0, '127.0.0.1', resolve));
    const { port } = occupied.address() as AddressInfo;
    const directory = mkdtempSync(join(tmpdir(), 'vexil-cli-'));
    try {
      const failure = await run(process.execPath, [CLI, 'serve', '--workers', '2'], {
        env: {
          ...process.env,
          VEXIL_HOST: '127.0.0.1',
          VEXIL_PORT: String(port),
          VEXIL_DATABASE_URL: join(directory, 'vexil.db'),
          VEXIL_SECRETS_KEY: TEST_SECRETS_KEY,
          VEXIL_LOG_LEVEL: 'error',
        },
      }).then(
        () => null,
        (error: unknown) => error as { code: number; stdout: string },
      );
      expect(failure?.code).toBe(1);
      expect(failure?.stdout).toContain('worker 1 exited before it listened');
    } finally {
      occupied.close();
      rmSync(directory, { recursive: true, force: true });
    }
  }, 60_000);

  it('is listed in the help of serve; the worker index option is not', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'serve', '--help']);
    expect(stdout).toContain('--workers <count>');
    expect(stdout).not.toContain('--cluster-worker');
  });
});
