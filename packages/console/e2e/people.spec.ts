import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  apiCall,
  expect,
  expectAccessible,
  mailTo,
  server,
  signInWithPassword,
  test,
} from './fixtures';

const CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));
const IMAGES = fileURLToPath(new URL('../../../docs/images/console/', import.meta.url));

/** `GET /api/v1/me` with a session cookie or a bearer token, as another client would send it. */
async function meStatus(credential: { cookie: string } | { token: string }): Promise<number> {
  const response = await fetch(`${server.url}/api/v1/me`, {
    headers:
      'cookie' in credential
        ? { cookie: `vexil_session=${credential.cookie}` }
        : { authorization: `Bearer ${credential.token}` },
  });
  return response.status;
}

test('an Owner signs in with e-mail and password; signing out ends the session on the server', async ({
  page,
  context,
}) => {
  await page.goto(`${server.url}/`);
  await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  await page.getByRole('button', { name: 'Use an API token' }).click();
  await expect(page.getByLabel('Access token')).toBeVisible();
  await expectAccessible(page);

  await page.getByLabel('E-mail').fill(server.email);
  await page.getByLabel('Password').fill('not the password at all');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByLabel('Password')).toHaveAccessibleDescription(
    'The e-mail address or the password is wrong.',
  );
  await expect(page.getByLabel('Password')).toHaveValue('not the password at all');

  await page.getByLabel('Password').fill(server.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Flags' })).toBeVisible();
  const session = (await context.cookies()).find((c) => c.name === 'vexil_session')!.value;
  expect(await meStatus({ cookie: session })).toBe(200);

  // A change made with the session cookie passes the CSRF check (Origin and X-CSRF-Token).
  await page.getByRole('button', { name: 'New flag' }).click();
  const dialog = page.getByRole('dialog', { name: 'New flag' });
  await dialog.getByLabel('Key').fill('made-in-a-session');
  await dialog.getByLabel('Name').fill('Made in a session');
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'Made in a session' })).toBeVisible();

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  expect(await meStatus({ cookie: session })).toBe(401);
  await page.goto(`${server.url}/orgs/acme/projects/web/flags`);
  await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
});

test('an invited Member accepts in another browser and sees no Admin page', async ({
  page,
  browser,
}) => {
  await signInWithPassword(page, server.email, server.password);
  await page.getByRole('link', { name: 'Members' }).click();
  await expect(page.getByRole('heading', { name: 'Members', level: 1 })).toBeVisible();
  await expectAccessible(page);

  // Inviting a current member is refused, and the API's reason is shown at the field.
  await page.getByLabel('E-mail to invite').fill(server.email);
  await page.getByRole('button', { name: 'Invite', exact: true }).click();
  await expect(page.getByLabel('E-mail to invite')).toHaveAccessibleDescription(/already/i);
  await page.getByLabel('E-mail to invite').fill('mia@example.com');
  await page.getByLabel('Role', { exact: true }).selectOption('Member');
  await page.getByRole('button', { name: 'Invite', exact: true }).click();
  const link = page.getByLabel('Invitation link for mia@example.com');
  await expect(link).toHaveAccessibleDescription(/It was also e-mailed to mia@example\.com/);
  const acceptUrl = await link.inputValue();
  expect(acceptUrl).toMatch(/\/invitations\/accept#token=vxl_inv_/);
  expect(await mailTo('mia@example.com')).toContain(acceptUrl);
  await expect(page.getByRole('cell', { name: 'mia@example.com', exact: true })).toBeVisible();
  await expectAccessible(page);

  const other = await browser.newContext();
  const newcomer = await other.newPage();
  await newcomer.goto(acceptUrl);
  await expect(newcomer.getByRole('heading', { name: 'Accept an invitation' })).toBeVisible();
  await expectAccessible(newcomer);
  await newcomer.getByLabel('Your name').fill('Mia');
  await newcomer.getByLabel('Choose a password').fill('too short');
  await newcomer.getByRole('button', { name: 'Create account and accept' }).click();
  await expect(newcomer.getByLabel('Choose a password')).toHaveAccessibleDescription(/12/);
  await newcomer.getByLabel('Choose a password').fill('a password Mia will remember');
  await newcomer.getByRole('button', { name: 'Create account and accept' }).click();
  await expect(newcomer.getByRole('heading', { name: 'Flags' })).toBeVisible();

  const sections = newcomer.getByRole('navigation', { name: 'Sections' });
  await expect(sections.getByRole('link', { name: 'Your account' })).toBeVisible();
  await expect(sections.getByRole('link', { name: 'Members' })).toHaveCount(0);
  await expect(sections.getByRole('link', { name: 'Settings' })).toHaveCount(0);
  await newcomer.goto(`${server.url}/orgs/acme/members`);
  await expect(newcomer.getByRole('alert')).toHaveText(
    /You are not allowed to open this page: it requires the Admin role/,
  );
  await expect(newcomer.getByRole('button', { name: 'Invite' })).toHaveCount(0);
  await expectAccessible(newcomer);
  await newcomer.goto(`${server.url}/orgs/acme/settings`);
  await expect(newcomer.getByRole('alert')).toHaveText(/requires the Owner role/);

  // The Owner sees Mia as a Member, limits her to one project, then removes her.
  await expect(page.getByRole('cell', { name: 'Mia (mia@example.com)' })).toBeVisible();
  await expect(page.getByLabel('Role of mia@example.com')).toHaveValue('Member');
  await page.getByRole('button', { name: 'Change projects of mia@example.com' }).click();
  const projects = page.getByRole('dialog', { name: 'Projects of mia@example.com' });
  await projects.getByLabel('All projects').uncheck();
  await projects.getByLabel('Web shop').check();
  await expectAccessible(page);
  await projects.getByRole('button', { name: 'Save projects' }).click();
  const row = page.getByRole('row', { name: /mia@example\.com/ });
  await expect(row.getByRole('cell', { name: /^Web shop/ })).toBeVisible();
  const members = await apiCall<{
    items: { email: string; userId: string; projectIds: string[] | null }[];
  }>('GET', '/api/v1/orgs/acme/members');
  const mia = members.items.find((m) => m.email === 'mia@example.com')!;
  expect(mia.projectIds).toHaveLength(1);

  await row.getByRole('button', { name: 'Remove mia@example.com' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Remove member' }).click();
  await expect(page.getByRole('cell', { name: 'Mia (mia@example.com)' })).toHaveCount(0);
  await newcomer.goto(`${server.url}/orgs/acme/projects/web/flags`);
  // Removal takes effect at once for her open session.
  await expect(newcomer.getByText('Organization "acme" was not found.').first()).toBeVisible();
  await other.close();

  // Invited again, Mia now has an account: she signs in on the invitation page and accepts.
  await page.getByLabel('E-mail to invite').fill('mia@example.com');
  await page.getByLabel('Role', { exact: true }).selectOption('Viewer');
  await page.getByRole('button', { name: 'Invite', exact: true }).click();
  const again = await page.getByLabel('Invitation link for mia@example.com').inputValue();
  const returning = await browser.newContext();
  const miaAgain = await returning.newPage();
  await miaAgain.goto(again);
  const existing = miaAgain.getByRole('region', { name: 'Already have an account?' });
  await existing.getByLabel('E-mail').fill('mia@example.com');
  await existing.getByLabel('Password').fill('a password Mia will remember');
  await existing.getByRole('button', { name: 'Sign in and accept' }).click();
  await expect(miaAgain.getByRole('heading', { name: 'Flags' })).toBeVisible();
  await expect(page.getByLabel('Role of mia@example.com')).toHaveValue('Viewer');
  await returning.close();
});

test('a person creates a personal access token and revokes another browser’s session', async ({
  page,
  browser,
}) => {
  await signInWithPassword(page, server.email, server.password);
  const other = await browser.newContext({ userAgent: 'Second browser' });
  const elsewhere = await other.newPage();
  await signInWithPassword(elsewhere, server.email, server.password);

  await page.getByRole('link', { name: 'Your account' }).click();
  await expect(page.getByRole('heading', { name: 'Your account' })).toBeVisible();
  await expectAccessible(page);
  const secondSession = page.getByRole('row', { name: /Second browser/ });
  await expect(secondSession).toHaveCount(1);
  await secondSession.getByRole('button', { name: /^Revoke session/ }).click();
  await expectAccessible(page);
  await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke session' }).click();
  await expect(secondSession).toHaveCount(0);
  await elsewhere.reload();
  await expect(elsewhere.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  await other.close();

  await page.getByLabel('Token name').fill('Deploy script');
  await page.getByRole('button', { name: 'Create token' }).click();
  const shown = page.getByRole('textbox', { name: 'Token Deploy script' });
  await expect(shown).toHaveAccessibleDescription(/will not show it again/);
  const token = await shown.inputValue();
  expect(token).toMatch(/^vxl_/);
  expect(await meStatus({ token })).toBe(200);
  await expectAccessible(page);

  await page.getByRole('button', { name: 'Revoke token Deploy script' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke token' }).click();
  await expect(page.getByRole('cell', { name: 'Deploy script' })).toHaveCount(0);
  expect(await meStatus({ token })).toBe(401);
});

test('a person in two organizations switches between them', async ({ page }) => {
  // `vexil bootstrap` makes the same person Owner of a second organization.
  const { token } = JSON.parse(
    execFileSync(process.execPath, [CLI, 'bootstrap', '--org', 'globex', '--email', server.email], {
      env: { ...process.env, VEXIL_DATABASE_URL: process.env.VEXIL_E2E_DATABASE_URL },
    }).toString(),
  ) as { token: string };
  const created = await fetch(`${server.url}/api/v1/orgs/globex/projects`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: 'rockets', name: 'Rockets' }),
  });
  expect(created.status).toBe(201);

  await signInWithPassword(page, server.email, server.password);
  await page.getByLabel('Organization').selectOption('globex');
  await expect(page).toHaveURL(/\/orgs\/globex\/projects\/rockets\/flags$/);
  await expect(page.getByLabel('Project')).toHaveValue('rockets');
  await page.getByLabel('Organization').selectOption('acme');
  await expect(page).toHaveURL(/\/orgs\/acme\/projects\/[^/]+\/flags$/);
});

test('an Admin creates a service token, sees it once and revokes it; an Owner changes the plan', async ({
  page,
}) => {
  await signInWithPassword(page, server.email, server.password);
  await page.getByRole('link', { name: 'Members' }).click();
  await page.getByLabel('Service token name').fill('Deploys');
  await page.getByLabel('Service token role').selectOption('Member');
  await page.getByRole('button', { name: 'Create service token' }).click();
  const shown = page.getByRole('textbox', { name: 'Service token Deploys' });
  await expect(shown).toHaveAccessibleDescription(/will not show it again/);
  const row = page.getByRole('row', { name: /Deploys Member/ });
  await expect(row).toContainText('Never');
  const token = await shown.inputValue();
  expect(await meStatus({ token })).toBe(200);
  // A use reaches the list with the next usage flush (each second on the test server).
  await expect(async () => {
    await page.reload();
    await expect(row.locator('time')).toHaveText(/just now|ago/, { timeout: 1000 });
  }).toPass();
  await expect(row.locator('time')).toHaveAttribute('title', /\d/);
  await page.getByRole('button', { name: 'Revoke service token Deploys' }).click();
  // While the dialog is open the page behind it is hidden from the accessibility tree, so the
  // row's absence alone does not say the revocation is done: wait for its answer.
  const revoked = page.waitForResponse(
    (response) => response.request().method() === 'DELETE' && /service-tokens/.test(response.url()),
  );
  await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke token' }).click();
  expect((await revoked).status()).toBe(204);
  await expect(page.getByRole('row', { name: /Deploys Member/ })).toHaveCount(0);
  expect(await meStatus({ token })).toBe(401);

  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByLabel('Plan').selectOption('Team');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect(page.getByRole('status')).toHaveText('Saved.');
  const org = await apiCall<{ plan: string }>('GET', '/api/v1/orgs/acme');
  expect(org.plan).toBe('Team');
  await apiCall('PATCH', '/api/v1/orgs/acme', { plan: 'Enterprise' });
});

test('screenshots of the people pages, light and dark', async ({ page }) => {
  await apiCall('POST', '/api/v1/orgs/acme/invitations', {
    email: 'ada@example.com',
    role: 'Admin',
  });
  await page.setViewportSize({ width: 1280, height: 900 });
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${server.url}/sign-in`);
    await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}sign-in-${scheme}.png` });
  }
  await signInWithPassword(page, server.email, server.password);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${server.url}/orgs/acme/members`);
    await expect(page.getByRole('cell', { name: 'ada@example.com', exact: true })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}members-${scheme}.png`, fullPage: true });
    await page.goto(`${server.url}/orgs/acme/settings`);
    await expect(page.getByRole('heading', { name: 'Settings', level: 1 })).toBeVisible();
    await expectAccessible(page);
    await page.screenshot({ path: `${IMAGES}settings-${scheme}.png`, fullPage: true });
    await page.goto(`${server.url}/orgs/acme/account`);
    await expect(page.getByRole('cell', { name: /This session/ })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}account-${scheme}.png`, fullPage: true });
  }
});
