import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
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
