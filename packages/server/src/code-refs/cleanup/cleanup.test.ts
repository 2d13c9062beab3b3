import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  TestClock,
  type TestVexil,
} from '../../test-support/harness.js';
import { CLI } from '../../test-support/processes.js';
import { git } from '../../test-support/git.js';

const run = promisify(execFile);
const SAMPLE = fileURLToPath(new URL('../../../fixtures/code-refs-sample', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const VITEST = join(ROOT, 'node_modules/vitest/vitest.mjs');

/** The sample application in a fresh git repository, its packages those of this repository. */
function sampleRepository(extra: Record<string, string | Buffer> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-cleanup-'));
  cpSync(SAMPLE, dir, { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  for (const [path, content] of Object.entries(extra)) writeFileSync(join(dir, path), content);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'sample');
  return dir;
}

/** Runs a command; resolves with its exit code and output, whether it succeeds or fails. */
async function outcome(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(command, args, { ...options, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: unknown) => {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    },
  );
}

const cleanup = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  outcome(process.execPath, [CLI, 'cleanup', ...args], { env });

/** `git apply` of the diff: checked first, then applied; returns the files it changed. */
function apply(dir: string, diff: string): string[] {
  const file = join(dir, '..', `${dir.split('/').pop()}.diff`);
  writeFileSync(file, diff);
  try {
    git(dir, 'apply', '--check', file);
    git(dir, 'apply', file);
  } finally {
    rmSync(file, { force: true });
  }
  return git(dir, 'diff', '--name-only').trim().split('\n').filter(Boolean);
}

/** `tsc --noEmit` of the sample with this repository's TypeScript. */
const typecheck = (dir: string) => outcome(process.execPath, [TSC, '-p', dir]);

/** The sample's own tests, told the flags' values and what the app should then do. */
const appTests = (
  dir: string,
  values: Record<string, boolean | string>,
  expected: { checkout: string; theme: string; title: string },
) =>
  outcome(process.execPath, [VITEST, 'run', '--root', dir], {
    cwd: dir,
    env: {
      ...process.env,
      SAMPLE_FLAGS: JSON.stringify(values),
      SAMPLE_EXPECT: JSON.stringify(expected),
    },
  });

/** Every line of `before` not removed by the diff is still in `after`, byte for byte, in order. */
function untouchedLinesKept(before: string, after: string, diff: string): void {
  const removed = new Set(
    diff
      .split('\n')
      .filter((line) => line.startsWith('-') && !line.startsWith('---'))
      .map((line) => line.slice(1)),
  );
  const kept = before.split('\n').filter((line) => !removed.has(line));
  const remaining = after.split('\n');
  let at = 0;
  for (const line of kept) {
    const found = remaining.indexOf(line, at);
    expect(found, `line kept: ${JSON.stringify(line)}`).toBeGreaterThanOrEqual(0);
    at = found + 1;
  }
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('vexil cleanup on the sample application (real git, tsc and the app tests)', () => {
  it('a Boolean flag kept on: the diff applies, type-checks, the app tests pass with it on, Python is left to a person', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    const before = readFileSync(join(dir, 'src/App.tsx'), 'utf8');
    const result = await cleanup(['--flag', 'new-checkout', '--value', 'true', '--dir', dir]);
    expect(result.code).toBe(3);
    expect(result.stdout).toBe(
      [
        'diff --git a/src/App.tsx b/src/App.tsx',
        '--- a/src/App.tsx',
        '+++ b/src/App.tsx',
        '@@ -1,12 +1,10 @@',
        "-import { useBooleanFlagValue, useFlag } from '@openfeature/react-sdk';",
        "-import { NEW_CHECKOUT } from './flags';",
        "+import { useFlag } from '@openfeature/react-sdk';",
        ' ',
        ' export function App() {',
        '-  const newCheckout = useBooleanFlagValue(NEW_CHECKOUT, false);',
        "   const { value: theme } = useFlag('theme', 'light');",
        '   return (',
        '     <main className={theme}>',
        '-      {newCheckout ? <NewCheckout /> : <OldCheckout />}',
        '+      <NewCheckout />',
        '       <Feature flag="dark-mode" />',
        '     </main>',
        '   );',
        '@@ -18,6 +16,3 @@',
        ' function NewCheckout() {',
        '   return <p>new</p>;',
        ' }',
        '-function OldCheckout() {',
        '-  return <p>old</p>;',
        '-}',
        'diff --git a/src/flags.ts b/src/flags.ts',
        '--- a/src/flags.ts',
        '+++ b/src/flags.ts',
        '@@ -1,8 +1,6 @@',
        " import { OpenFeature } from '@openfeature/server-sdk';",
        " import { VexilClient } from '@vexil/node';",
        ' ',
        "-export const NEW_CHECKOUT = 'new-checkout';",
        '-',
        " const vexil = new VexilClient({ sdkKey: 'key', baseUrl: 'http://localhost' });",
        ' const client = OpenFeature.getClient();',
        ' ',
        '',
      ].join('\n'),
    );
    expect(result.stderr).toBe(
      [
        '2 files in the diff, 1 reads replaced, 1 branches removed, 1 places left for a person',
        'src/settings.py:1:30 new-checkout: not JavaScript or TypeScript: change it by hand',
        '',
      ].join('\n'),
    );
    expect(apply(dir, result.stdout)).toEqual(['src/App.tsx', 'src/flags.ts']);
    untouchedLinesKept(before, readFileSync(join(dir, 'src/App.tsx'), 'utf8'), result.stdout);
    expect(await typecheck(dir)).toMatchObject({ code: 0 });
    const values = { theme: 'dark', 'banner-text': 'Hello' };
    const expected = { theme: 'dark', title: 'Hello' };
    expect(
      await appTests(dir, { ...values, 'new-checkout': true }, { ...expected, checkout: 'new' }),
    ).toMatchObject({ code: 0 });
    // The flag is gone: turning it off no longer changes what the app renders.
    expect(
      (await appTests(dir, { ...values, 'new-checkout': false }, { ...expected, checkout: 'old' }))
        .code,
    ).not.toBe(0);
  }, 120_000);

  it('a Boolean flag kept off, and a String flag: each diff applies, type-checks and passes the app tests', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    const off = await cleanup(['--flag', 'new-checkout', '--value', 'false', '--dir', dir]);
    expect(off.code).toBe(3);
    expect(off.stdout).toContain('+      <OldCheckout />');
    expect(off.stdout).toContain('-function NewCheckout() {');
    expect(apply(dir, off.stdout)).toEqual(['src/App.tsx', 'src/flags.ts']);
    git(dir, 'commit', '-qam', 'new-checkout off');

    const flagsBefore = readFileSync(join(dir, 'src/flags.ts'), 'utf8');
    const text = await cleanup(['--flag', 'banner-text', '--value', 'Hello', '--dir', dir]);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe(
      '1 files in the diff, 1 reads replaced, 0 branches removed, 0 places left for a person\n',
    );
    // Only the read, the client it used and its import change; every other line is kept.
    const changedLines = text.stdout
      .split('\n')
      .filter((line) => /^[-+][^-+]/.test(line) || line === '-' || line === '+');
    expect(changedLines).toEqual([
      "-import { OpenFeature } from '@openfeature/server-sdk';",
      '-const client = OpenFeature.getClient();',
      "-  const banner = await client.getStringValue('banner-text', 'Welcome');",
      "+  const banner = 'Hello';",
    ]);
    expect(apply(dir, text.stdout)).toEqual(['src/flags.ts']);
    untouchedLinesKept(flagsBefore, readFileSync(join(dir, 'src/flags.ts'), 'utf8'), text.stdout);
    expect(await typecheck(dir)).toMatchObject({ code: 0 });
    expect(
      await appTests(
        dir,
        { 'new-checkout': false, theme: 'light', 'banner-text': 'Hello' },
        { checkout: 'old', theme: 'light', title: 'Hello' },
      ),
    ).toMatchObject({ code: 0 });
  }, 120_000);

  it('leaves a file to a person when the key is passed on, and rewrites the others', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    const result = await cleanup(['--flag', 'dark-mode', '--value', 'true', '--dir', dir]);
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      [
        '1 files in the diff, 1 reads replaced, 1 branches removed, 1 places left for a person',
        'src/App.tsx:10:21 dark-mode: the key is given to <Feature> as its flag prop',
        '',
      ].join('\n'),
    );
    expect(result.stdout).toContain("-  if (isOn('dark-mode')) return `${banner} (dark)`;");
    expect(result.stdout).toContain('-  return banner;');
    expect(result.stdout).toContain('+  return `${banner} (dark)`;');
    expect(apply(dir, result.stdout)).toEqual(['src/flags.ts']);
    expect(await typecheck(dir)).toMatchObject({ code: 0 });

    const dynamic = await cleanup(['--flag', 'dynamic-pricing', '--value', 'true', '--dir', dir]);
    expect(dynamic).toEqual({
      code: 3,
      stdout: '',
      stderr: [
        '0 files in the diff, 0 reads replaced, 0 branches removed, 1 places left for a person',
        'src/flags.ts:24:39 dynamic-pricing: the key is passed to pricing(), which may read it by a dynamic key',
        '',
      ].join('\n'),
    });
  }, 120_000);

  it('--write changes the files in place, as the diff would', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    const printed = await cleanup(['--flag', 'new-checkout', '--value', 'true', '--dir', dir]);
    const write = await cleanup([
      '--flag',
      'new-checkout',
      '--value',
      'true',
      '--dir',
      dir,
      '--write',
    ]);
    expect(write.code).toBe(3);
    expect(write.stdout).toBe('');
    const changed = ['src/App.tsx', 'src/flags.ts'];
    expect(git(dir, 'diff', '--name-only').trim().split('\n')).toEqual(changed);
    const written = changed.map((path) => readFileSync(join(dir, path), 'utf8'));
    git(dir, 'checkout', '--', '.');
    apply(dir, printed.stdout);
    expect(changed.map((path) => readFileSync(join(dir, path), 'utf8'))).toEqual(written);
  }, 120_000);
});

describe('vexil cleanup refuses or skips bad input', () => {
  it('a directory that is not a git repository: exit 1, saying so', async () => {
    const plain = mkdtempSync(join(tmpdir(), 'vexil-plain-'));
    dirs.push(plain);
    cpSync(SAMPLE, plain, { recursive: true });
    const result = await cleanup(['--flag', 'new-checkout', '--value', 'true', '--dir', plain]);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: `${plain} is not a git repository: vexil cleanup writes a change to review and apply with git.\n`,
    });
  }, 120_000);

  it('a file that does not parse is named and left; a binary file is skipped; the rest is rewritten', async () => {
    const dir = sampleRepository({
      'src/broken.ts': 'const broken = ( isOn("new-checkout");\n',
      'src/logo.bin': Buffer.from([0x89, 0x00, ...Buffer.from('isOn("new-checkout")')]),
    });
    dirs.push(dir);
    const result = await cleanup(['--flag', 'new-checkout', '--value', 'true', '--dir', dir]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(
      /^src\/broken\.ts:1:1 new-checkout: does not parse, so it cannot be rewritten \(SyntaxError/m,
    );
    expect(result.stderr).not.toContain('logo.bin');
    expect(apply(dir, result.stdout)).toEqual(['src/App.tsx', 'src/flags.ts']);
  }, 120_000);

  it('a key the code never reads: nothing to change, exit 0', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    expect(await cleanup(['--flag', 'unread-flag', '--value', 'true', '--dir', dir])).toEqual({
      code: 0,
      stdout: '',
      stderr: 'nothing to change\n',
    });
  }, 120_000);

  it('a value of the wrong type for a read is left to a person', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    const result = await cleanup(['--flag', 'new-checkout', '--value', '"big"', '--dir', dir]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(
      'src/App.tsx:5:43 new-checkout: useBooleanFlagValue() reads a boolean, but the flag serves "big"',
    );
    expect(result.stdout).toBe('');
  }, 120_000);
});

describe.each(testDialects())('vexil cleanup takes the value from the server on %s', (dialect) => {
  let vexil: TestVexil;
  let url: string;
  let env: NodeJS.ProcessEnv;
  let sdkKey: string;
  const clock = new TestClock();
  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    url = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
    for (const environment of ['development', 'production']) {
      const toggled = await call(
        vexil,
        'POST',
        `/api/v1/orgs/acme/projects/web/flags/new-checkout/environments/${environment}/toggle`,
        { token: org.token, body: { enabled: true } },
      );
      expect(toggled.status).toBeLessThan(300);
    }
    env = { ...process.env, VEXIL_TOKEN: org.token };
  });
  afterAll(async () => {
    await vexil.close();
  });

  const server = () => ['--url', url, '--org', 'acme', '--project', 'web'];

  it('--treatment on keeps the variation served to everyone, off the off variation', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    const on = await cleanup(
      ['--flag', 'new-checkout', '--treatment', 'on', '--dir', dir, ...server()],
      env,
    );
    expect(on.code).toBe(3);
    expect(on.stderr).toMatch(/^new-checkout: keeping \S+ \(true\)$/m);
    expect(on.stdout).toContain('+      <NewCheckout />');
    const off = await cleanup(
      ['--flag', 'new-checkout', '--treatment', 'off', '--dir', dir, ...server()],
      env,
    );
    expect(off.stderr).toMatch(/^new-checkout: keeping \S+ \(false\)$/m);
    expect(off.stdout).toContain('+      <OldCheckout />');
  }, 120_000);

  it('without --treatment, a flag that is not a removal candidate is refused with exit 1', async () => {
    const dir = sampleRepository();
    dirs.push(dir);
    expect(await cleanup(['--flag', 'new-checkout', '--dir', dir, ...server()], env)).toEqual({
      code: 1,
      stdout: '',
      stderr: 'new-checkout is not a removal candidate: pass --treatment on or off\n',
    });
  }, 120_000);

  it('without --treatment, a removal candidate keeps what it names; --removal-candidates takes them all', async () => {
    // Evaluated in production over a month while serving everyone the same: stuck rolled out.
    for (let round = 0; round < 4; round += 1) {
      const evaluated = await call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: sdkKey,
        body: { flagKey: 'new-checkout', context: {} },
      });
      expect(evaluated.status).toBe(200);
      clock.advance(8 * 86_400_000);
    }
    const dir = sampleRepository();
    dirs.push(dir);
    // The server's clock is the test's; the CLI only reads what the server answers.
    const one = await cleanup(['--flag', 'new-checkout', '--dir', dir, ...server()], env);
    expect(one.code).toBe(3);
    expect(one.stderr).toMatch(/^new-checkout: keeping \S+ \(true\)$/m);
    expect(one.stdout).toContain('+      <NewCheckout />');
    const all = await cleanup(
      ['--removal-candidates', '--status', 'stale', '--dir', dir, ...server()],
      env,
    );
    expect(all.code).toBe(3);
    expect(all.stdout).toBe(one.stdout);
  }, 120_000);
});
