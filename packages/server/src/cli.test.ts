import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
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

  it('is listed in the help of serve; the worker index option is not', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'serve', '--help']);
    expect(stdout).toContain('--workers <count>');
    expect(stdout).not.toContain('--cluster-worker');
  });
});
