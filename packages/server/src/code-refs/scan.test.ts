import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { scanDirectory, ScanRefused } from './scan.js';
import { git } from '../test-support/git.js';

const SAMPLE = fileURLToPath(new URL('../../fixtures/code-refs-sample', import.meta.url));
const KEYS = [
  'new-checkout',
  'dark-mode',
  'banner-text',
  'theme',
  'dynamic-pricing',
  'unread-flag',
];

/** The sample application in a fresh git repository: `main`, and `feature` without dark mode. */
function sampleRepository(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-code-refs-'));
  cpSync(SAMPLE, dir, { recursive: true });
  // Bad input a scan must survive: a file that does not parse, a binary file, an excluded folder.
  writeFileSync(join(dir, 'src/broken.ts'), 'const broken = ( "dark-mode";\n');
  writeFileSync(
    join(dir, 'src/logo.bin'),
    Buffer.from([0x89, 0x00, ...Buffer.from('"dark-mode"')]),
  );
  cpSync(join(dir, 'src'), join(dir, 'vendor'), { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'remote', 'add', 'origin', 'git@github.com:acme/shop.git');
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'sample');
  git(dir, 'switch', '-qc', 'feature');
  writeFileSync(join(dir, 'src/App.tsx'), 'export const App = () => null;\n');
  git(dir, 'commit', '-qam', 'no flags in the app');
  git(dir, 'switch', '-q', 'main');
  return dir;
}

describe('vexil code-refs scan', () => {
  let dir: string;
  beforeAll(() => {
    dir = sampleRepository();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('parses TypeScript and JSX, follows an alias constant, searches Python by its quotes', async () => {
    const result = await scanDirectory({ dir, keys: KEYS });
    expect(result).toMatchObject({
      repository: 'acme/shop',
      branch: 'main',
      commit: git(dir, 'rev-parse', 'HEAD').trim(),
      unparsed: ['src/broken.ts'],
    });
    const found = result.references.map(
      (r) => `${r.path}:${r.line}:${r.column} ${r.key} ${r.kind}`,
    );
    expect(found).toEqual([
      'src/App.tsx:5:43 new-checkout alias',
      'src/App.tsx:6:36 theme call',
      'src/App.tsx:10:21 dark-mode jsx',
      'src/broken.ts:1:19 dark-mode literal',
      'src/flags.ts:4:29 new-checkout literal',
      'src/flags.ts:16:46 banner-text call',
      'src/flags.ts:17:12 dark-mode call',
      'src/flags.ts:25:39 dynamic-pricing call',
      'src/settings.py:1:30 new-checkout literal',
    ]);
    // The binary file, the excluded folder and a key no code reads are absent; so is the longer
    // key in Python, which only contains one.
    expect(found.join('\n')).not.toMatch(/logo\.bin|vendor\/|unread-flag/);
    const reference = result.references.find((r) => r.key === 'banner-text');
    expect(reference?.context).toEqual({
      before: [
        'export async function checkoutTitle(): Promise<string> {',
        '  // Server: OpenFeature client.',
      ],
      line: "  const banner = await client.getStringValue('banner-text', 'Welcome');",
      after: ["  if (isOn('dark-mode')) return `${banner} (dark)`;", '  return banner;'],
    });
  });

  it('names the branch and commit git gives; another branch has its own references', async () => {
    git(dir, 'switch', '-q', 'feature');
    try {
      const result = await scanDirectory({ dir, keys: KEYS, contextLines: 0 });
      expect(result.branch).toBe('feature');
      expect(result.references.some((r) => r.path === 'src/App.tsx')).toBe(false);
      expect(result.references[0]?.context.before).toEqual([]);
    } finally {
      git(dir, 'switch', '-q', 'main');
    }
  });

  it('outside git it needs --repository and --branch, and says so', async () => {
    const plain = mkdtempSync(join(tmpdir(), 'vexil-plain-'));
    try {
      cpSync(SAMPLE, plain, { recursive: true });
      await expect(scanDirectory({ dir: plain, keys: KEYS })).rejects.toThrow(ScanRefused);
      await expect(scanDirectory({ dir: plain, keys: KEYS })).rejects.toThrow(
        /not a git repository; pass --repository and --branch/,
      );
      const result = await scanDirectory({
        dir: plain,
        keys: KEYS,
        repository: 'shop',
        branch: 'main',
      });
      expect(result.commit).toBeNull();
      expect(result.references.length).toBeGreaterThan(0);
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });
});

describe.each(testDialects())('a scan uploaded and read back on %s', (dialect) => {
  let vexil: TestVexil;
  let dir: string;
  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    dir = sampleRepository();
  });
  afterAll(async () => {
    await vexil.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('both branches are stored; the flag page reads the default branch first', async () => {
    const org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    const base = `/api/v1/orgs/acme/projects/web`;
    for (const branch of ['main', 'feature']) {
      git(dir, 'switch', '-q', branch);
      const {
        skipped: _skipped,
        files: _files,
        ...body
      } = await scanDirectory({ dir, keys: KEYS });
      const stored = await call(
        vexil,
        'PUT',
        `${base}/code-references/acme%2Fshop/branches/${branch}`,
        {
          token: org.token,
          body,
        },
      );
      expect(stored.status).toBe(204);
    }
    git(dir, 'switch', '-q', 'main');
    const read = await call(vexil, 'GET', `${base}/flags/new-checkout/code-references`, {
      token: org.token,
    });
    expect(read.body.repositories).toEqual([
      expect.objectContaining({
        name: 'acme/shop',
        defaultBranch: 'main',
        branches: [
          expect.objectContaining({ name: 'feature', referenceCount: 6 }),
          expect.objectContaining({ name: 'main', referenceCount: 9 }),
        ],
      }),
    ]);
    const list = await call(vexil, 'GET', `${base}/flags`, { token: org.token });
    expect(list.body.items[0]).toMatchObject({ key: 'new-checkout', codeReferences: 3 });
  });
});
