import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
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
