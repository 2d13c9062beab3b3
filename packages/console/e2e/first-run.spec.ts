import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, expectAccessible, test } from './fixtures';
import { freePort, serve } from './server';

/**
 * The first run (design record 040): a fresh instance, the setup code it prints at start, and a
 * person who creates the organization, its Owner and a first project in the browser alone.
 */
test('a fresh instance is set up in the browser with the printed setup code', async ({ page }) => {
  const directory = mkdtempSync(join(tmpdir(), 'vexil-first-run-'));
  const port = await freePort();
  const { server, url } = await serve(
    {
      ...process.env,
      VEXIL_DATABASE_URL: join(directory, 'vexil.db'),
      VEXIL_PORT: String(port),
      VEXIL_LOG_LEVEL: 'info',
    },
    port,
    'pipe',
  );
  let output = '';
  server.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    const printed = () => /setup code ([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4})/.exec(output)?.[1];
    await expect.poll(printed).toBeTruthy();
    const code = printed()!;

    await page.goto(`${url}/`);
    await expect(page.getByRole('heading', { name: 'Set up Vexil' })).toBeVisible();
    await expectAccessible(page);
    // The page starts at the top: what is drawn there is the theme's root, not a bare band.
    const top = await page.evaluate(
      () => document.elementFromPoint(5, 5)?.closest('.radix-themes') !== null,
    );
    expect(top).toBe(true);
    await page.getByLabel('Setup code').fill('WRONG-CODE');
    await page.getByLabel('Organization name').fill('Acme Inc.');
    await expect(page.getByLabel('Organization key')).toHaveValue('acme-inc.');
    await page.getByLabel('Organization key').fill('acme');
    await page.getByLabel('Your name').fill('Ada Owner');
    await page.getByLabel('E-mail').fill('ada@acme.test');
    await page.getByLabel('Password').fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await expect(page.getByText('is not a setup code this instance printed')).toBeVisible();

    await page.getByLabel('Setup code').fill(code);
    await page.getByRole('button', { name: 'Create organization' }).click();
    await expect(page.getByRole('heading', { name: 'Create your first project' })).toBeVisible();
    await expectAccessible(page);
    await page.getByLabel('Project name').fill('Web shop');
    await expect(page.getByLabel('Project key')).toHaveValue('web-shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await expect(page.getByRole('heading', { name: 'Flags' })).toBeVisible();
    await expect(page).toHaveURL(/\/orgs\/acme\/projects\/web-shop\/flags/);

    // The Owner is the organization's only member: one required approval could never be given.
    await page.goto(`${url}/orgs/acme/projects/web-shop/environments`);
    await page.getByRole('button', { name: 'Edit Production' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Production' });
    await dialog
      .getByLabel(
        'Require a reviewed change request for every change to what this environment serves',
      )
      .check();
    await dialog.getByLabel('Approvals needed').selectOption('1');
    await expect(dialog.getByRole('status')).toContainText(
      'Ada Owner (Owner) is the only member who could approve',
    );
    await page.keyboard.press('Escape');

    // The setup is closed: the sign-in page is the way in from now on.
    await page.context().clearCookies();
    await page.goto(`${url}/sign-in`);
    await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  } finally {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
    rmSync(directory, { recursive: true, force: true });
  }
});
