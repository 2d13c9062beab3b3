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
