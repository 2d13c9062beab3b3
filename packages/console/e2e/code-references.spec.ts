import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';
import { git } from '../../server/src/test-support/git.js';

const CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));
/** The sample application the scanner's own tests read (TypeScript, React, Python). */
const SAMPLE = fileURLToPath(new URL('../../server/fixtures/code-refs-sample', import.meta.url));
// A project of its own (the screenshots use `shop`), whose flags no other journey touches.
const PROJECT = '/api/v1/orgs/acme/projects/code-refs';
const PAGES = '/orgs/acme/projects/code-refs';
const KEYS = [
  'new-checkout',
  'dark-mode',
  'banner-text',
  'theme',
  'dynamic-pricing',
  'unread-flag',
];
const TEMPLATE = 'https://github.com/acme/shop/blob/{commit}/{path}#L{line}';

interface ScannedReference {
  path: string;
  line: number;
  key: string;
}

/** `vexil code-refs scan --upload` in `dir`, as CI runs it; returns the JSON it printed. */
function scanAndUpload(dir: string): { commit: string; references: ScannedReference[] } {
  const output = execFileSync(
    process.execPath,
    [
      CLI,
      'code-refs',
      'scan',
      '--dir',
      dir,
      '--url',
      server.url,
      '--org',
      'acme',
      '--project',
      'code-refs',
      '--format',
      'json',
      '--upload',
    ],
    { encoding: 'utf8', env: { ...process.env, VEXIL_TOKEN: server.token } },
  );
  return JSON.parse(output) as { commit: string; references: ScannedReference[] };
}

/**
 * The text of the flag list's cell under `header` in `flag`'s row, or null while the list does
 * not show it. The column's position is read each time: the environments' columns join the
 * header once their query answers, moving the others.
 */
async function flagListCell(page: Page, flag: string, header: string): Promise<string | null> {
  const column = (await page.getByRole('columnheader').allTextContents()).indexOf(header);
  const row = page.getByRole('row').filter({ has: page.getByText(flag, { exact: true }) });
  if (column < 0 || (await row.count()) !== 1) return null;
  return row.getByRole('cell').nth(column).textContent();
}

const sections = (page: Page) => page.getByRole('navigation', { name: 'Flag sections' });

test.describe.serial('code references', () => {
  let dir: string;
  let main: { commit: string; references: ScannedReference[] };
  let feature: { commit: string; references: ScannedReference[] };

  test.beforeAll(async () => {
    await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'code-refs', name: 'Code refs' });
    for (const key of KEYS) await apiCall('POST', `${PROJECT}/flags`, { key });
    // The sample application under git: `main`, and `feature`, whose App.tsx reads no flag.
    dir = mkdtempSync(join(tmpdir(), 'vexil-e2e-code-refs-'));
    cpSync(SAMPLE, dir, { recursive: true });
    git(dir, 'init', '-q', '-b', 'main');
    git(dir, 'remote', 'add', 'origin', 'git@github.com:acme/shop.git');
    git(dir, 'add', '.');
    git(dir, 'commit', '-qm', 'sample');
    git(dir, 'switch', '-qc', 'feature');
    writeFileSync(join(dir, 'src/App.tsx'), 'export const App = () => null;\n');
    git(dir, 'commit', '-qam', 'no flags in the app');
    git(dir, 'switch', '-q', 'main');
  });
  test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('nothing scanned is said in words; after a real scan of two branches the list counts the default branch', async ({
    page,
  }) => {
    await signIn(page);
    await page.goto(`${server.url}${PAGES}/flags/new-checkout/code`);
    await expect(
      page.getByText('No repository of this project has been scanned yet', { exact: false }),
    ).toBeVisible();
    await page.goto(`${server.url}${PAGES}/flags`);
    await expect
      .poll(() => flagListCell(page, 'new-checkout', 'References in code'))
      .toBe('unknown');

    // The first branch uploaded becomes the default branch; the feature branch comes second.
    main = scanAndUpload(dir);
    git(dir, 'switch', '-q', 'feature');
    feature = scanAndUpload(dir);
    git(dir, 'switch', '-q', 'main');
    expect(main.commit).toBe(git(dir, 'rev-parse', 'main').trim());
    await apiCall('PATCH', `${PROJECT}/code-references/repositories/acme%2Fshop`, {
      sourceUrlTemplate: TEMPLATE,
    });
    const onMain = main.references.filter((r) => r.key === 'new-checkout');
    // The alias in App.tsx, its constant in flags.ts, the Python literal.
    expect(onMain.map((r) => r.path).sort()).toEqual([
      'src/App.tsx',
      'src/flags.ts',
      'src/settings.py',
    ]);

    // The list counts the default branch's references, live (no reload).
    await expect
      .poll(() => flagListCell(page, 'new-checkout', 'References in code'))
      .toBe(String(onMain.length));
    await expect.poll(() => flagListCell(page, 'unread-flag', 'References in code')).toBe('0');
  });

  test('the Code tab shows each branch, the default first, each place linked to its line with its context', async ({
    page,
  }) => {
    const onMain = main.references.filter((r) => r.key === 'new-checkout');
    await signIn(page);
    await page.goto(`${server.url}${PAGES}/flags`);
    await page.getByRole('link', { name: 'new-checkout' }).click();
    await sections(page).getByRole('link', { name: 'Code' }).click();
    await expect(page).toHaveURL(/\/flags\/new-checkout\/code(\?|$)/);
    const branches = page.getByRole('region', { name: /^acme\/shop, branch / });
    await expect(branches).toHaveCount(2);
    await expect(branches.nth(0)).toHaveAccessibleName('acme/shop, branch main');
    await expect(branches.nth(1)).toHaveAccessibleName('acme/shop, branch feature');
    const mainBranch = branches.nth(0);
    await expect(mainBranch.getByRole('heading', { name: 'main default branch' })).toBeVisible();
    await expect(mainBranch).toContainText(`Commit ${main.commit.slice(0, 12)}, scanned`);
    for (const reference of onMain) {
      const place = `${reference.path}:${reference.line}`;
      await expect(mainBranch.getByRole('link', { name: place })).toHaveAttribute(
        'href',
        `https://github.com/acme/shop/blob/${main.commit}/${reference.path}#L${reference.line}`,
      );
    }
    const alias = onMain.find((r) => r.path === 'src/App.tsx')!;
    await expect(mainBranch.getByLabel(`Lines around src/App.tsx:${alias.line}`)).toContainText(
      'useBooleanFlagValue(NEW_CHECKOUT, false)',
    );
    await expect(mainBranch).toContainText('use of a constant');
    // The feature branch no longer reads it in App.tsx, and links to its own commit.
    const featureBranch = branches.nth(1);
    await expect(featureBranch).toContainText(`Commit ${feature.commit.slice(0, 12)}`);
    await expect(featureBranch.getByRole('link', { name: /^src\/App\.tsx:/ })).toHaveCount(0);
    await expect(featureBranch.getByRole('link', { name: /^src\/flags\.ts:/ })).toHaveAttribute(
      'href',
      new RegExp(`/blob/${feature.commit}/src/flags\\.ts#L\\d+$`),
    );
    await expectAccessible(page);

    // Opened by its address, the tab reads at most 5 things besides the frame's own.
    const frame =
      /^\/api\/v1\/(me|orgs|orgs\/acme|orgs\/acme\/projects|orgs\/acme\/projects\/code-refs\/environments|orgs\/acme\/projects\/code-refs\/change-requests|orgs\/acme\/events\/stream)$/;
    const requests: string[] = [];
    page.on('request', (request) => {
      const { pathname } = new URL(request.url());
      if (pathname.startsWith('/api/') && !frame.test(pathname)) requests.push(pathname);
    });
    await page.goto(`${server.url}${PAGES}/flags/new-checkout/code`);
    await expect(branches).toHaveCount(2);
    await page.waitForTimeout(1_000);
    // Things, not requests: on a loaded machine a change event of the setup above can arrive
    // late and refetch what it marks stale.
    expect(new Set(requests).size, requests.join('\n')).toBeLessThanOrEqual(5);

    // A flag no code reads says so, per branch.
    await page.goto(`${server.url}${PAGES}/flags/unread-flag/code`);
    await expect(page.getByText('No scanned branch reads unread-flag.')).toBeVisible();
    await expect(page.getByText('No reference to unread-flag on this branch.')).toHaveCount(2);
  });

  test('archiving a flag code still reads is refused in words, naming the places, and can be forced', async ({
    page,
  }) => {
    await signIn(page);
    await page.goto(`${server.url}${PAGES}/flags/new-checkout/settings`);
    await page.getByRole('button', { name: 'Archive flag' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Archive new-checkout?' });
    await dialog.getByRole('button', { name: 'Archive', exact: true }).click();
    const alert = dialog.getByRole('alert');
    await expect(alert).toContainText('"new-checkout" is still read by code');
    await expect(alert).toContainText('acme/shop:src/App.tsx:');
    await expect(alert).toContainText('acme/shop:src/settings.py:1');
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Archive anyway' }).click();
    await expect(page.getByText('archived', { exact: true })).toBeVisible();
    // Archived while code reads it: the Code tab says what those reads now get.
    await sections(page).getByRole('link', { name: 'Code' }).click();
    await expect(page.getByText('those reads get their fallback value')).toBeVisible();
    await sections(page).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('button', { name: 'Restore flag' }).click();
    await expect(page.getByRole('button', { name: 'Archive flag' })).toBeVisible();
  });

  test('removal candidates with no reference left are safe to archive; the others offer the cleanup command', async ({
    page,
  }) => {
    const { key: sdkKey } = await apiCall<{ key: string }>(
      'POST',
      `${PROJECT}/environments/production/sdk-keys`,
      { name: 'code-refs-e2e', type: 'ServerSide' },
    );
    for (const flagKey of ['dark-mode', 'unread-flag'])
      await fetch(`${server.url}/v1/sdk/evaluate`, {
        method: 'POST',
        headers: { authorization: sdkKey, 'content-type': 'application/json' },
        body: JSON.stringify({ flagKey, context: { userId: 'u1' } }),
      });
    // Off everywhere, still evaluated, unchanged for the (shortened) dead period.
    await expect
      .poll(
        async () =>
          (
            await apiCall<{ items: { key: string }[] }>(
              'GET',
              `${PROJECT}/flags/removal-candidates`,
            )
          ).items.map((item) => item.key),
        { timeout: 15_000 },
      )
      .toEqual(['dark-mode', 'unread-flag']);
    const darkMode = main.references.filter((r) => r.key === 'dark-mode').length;

    await signIn(page);
    await page.goto(`${server.url}${PAGES}/removal-candidates`);
    await expect(page.getByRole('row', { name: /dark-mode/ })).toContainText(
      `${darkMode} places on default branches`,
    );
    await expect(page.getByRole('row', { name: /unread-flag/ })).toContainText(
      'None left: safe to archive',
    );
    await page.getByLabel('References in code').selectOption('None left (safe to archive)');
    await expect(page.getByRole('link', { name: 'dark-mode' })).toBeHidden();
    await expect(page.getByRole('link', { name: 'unread-flag' })).toBeVisible();
    await expectAccessible(page);

    await page.goto(`${server.url}${PAGES}/flags/dark-mode/code`);
    await expect(page.getByText('Removal candidate (dead):')).toBeVisible();
    await expect(page.getByLabel('Cleanup command')).toHaveValue(
      `npx vexil cleanup --flag dark-mode --treatment off --url ${server.url} --org acme --project code-refs > cleanup.diff`,
    );
    await expectAccessible(page);
    await page.goto(`${server.url}${PAGES}/flags/unread-flag/code`);
    await expect(
      page.getByText('No default branch reads it any more: it is safe to archive'),
    ).toBeVisible();
    await expect(page.getByLabel('Cleanup command')).toHaveCount(0);
  });
});
