import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ServeProcess } from '../test-support/processes.js';

const ROOT = new URL('../../../../', import.meta.url);
const run = promisify(execFile);

/** The README's walkthrough: the first `sh` block after its heading, byte for byte. */
async function walkthrough(): Promise<string> {
  const readme = await readFile(new URL('README.md', ROOT), 'utf8');
  const section = readme.slice(readme.indexOf('## Walkthrough'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README.md has no walkthrough block');
  return block;
}

/** Runs the walkthrough with bash against `node`; answers its standard output and error. */
async function runWalkthrough(node: ServeProcess, database: string, env: Record<string, string>) {
  return run('bash', ['-c', await walkthrough()], {
    cwd: new URL('.', ROOT).pathname,
    env: { ...process.env, VEXIL_DATABASE_URL: database, VEXIL: node.baseUrl, ...env },
    timeout: 120_000,
  });
}

/** The evaluation the README says the walkthrough ends with. */
const EVALUATION = '{"key":"new-checkout","variation":"true","value":true,"reason":"DEFAULT"}';

/**
 * The README's walkthrough, run verbatim with bash against a real `vexil serve` on SQLite (issue
 * 43): on a fresh instance, and after the quick start set the instance up in the browser.
 */
describe('the README walkthrough', () => {
  let directory: string | undefined;
  let node: ServeProcess | undefined;
  afterEach(async () => {
    await node?.stop();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  async function start() {
    directory = await mkdtemp(join(tmpdir(), 'vexil-readme-'));
    const database = join(directory, 'vexil.db');
    node = await ServeProcess.start({ VEXIL_DATABASE_URL: database, VEXIL_LOG_LEVEL: 'info' });
    return { node, database };
  }

  it('works on a fresh instance', async () => {
    const { node, database } = await start();
    const { stdout, stderr } = await runWalkthrough(node, database, {});
    expect(stdout).toContain(EVALUATION);
    expect(stderr).not.toMatch(/created organization/);
  }, 180_000);

  it('works after the quick start, in the organization named in the browser', async () => {
    const { node, database } = await start();
    // The quick start, as the browser does it: the setup code printed at start, then the form.
    const code = /setup code (\S{4}-\S{4}-\S{4})/.exec(node.output.join(''))?.[1];
    expect(code, node.output.join('')).toBeDefined();
    const setup = await fetch(`${node.baseUrl}/auth/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        setupCode: code,
        orgName: 'Acme shop',
        orgSlug: 'acme-shop',
        name: 'You',
        email: 'you@example.com',
        password: 'correct horse battery staple',
      }),
    });
    expect(setup.status, await setup.clone().text()).toBe(201);
    const { stdout, stderr } = await runWalkthrough(node, database, { ORG: 'acme-shop' });
    expect(stdout).toContain(EVALUATION);
    // No second organization: the walkthrough worked in the quick start's.
    expect(stderr).not.toMatch(/created organization/);
    // Without ORG it still works, in a new `acme`, and says so instead of doing it silently.
    const again = await runWalkthrough(node, database, {});
    expect(again.stdout).toContain(EVALUATION);
    expect(again.stderr).toContain(
      'created organization acme; this instance has others already: acme-shop',
    );
  }, 180_000);
});
