import {
  apiCall,
  expect,
  expectAccessible,
  mailTo,
  server,
  signInWithPassword,
  test,
} from './fixtures';

/**
 * Self-service passwords (issue 31, finding 7; design record 034): a person changes their own
 * password on the Account page, and resets a forgotten one through the link e-mailed to them.
 */

const PASSWORD = 'correct horse battery staple';

/** A new Member with `PASSWORD`, who accepted an invitation through the API. */
async function newMember(email: string): Promise<void> {
  const { acceptUrl } = await apiCall<{ acceptUrl: string }>(
    'POST',
    '/api/v1/orgs/acme/invitations',
    {
      email,
      role: 'Member',
    },
  );
  const token = new URL(acceptUrl).hash.replace('#token=', '');
  const accepted = await fetch(`${server.url}/api/v1/invitations/accept`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, name: 'Ada', password: PASSWORD }),
  });
  expect(accepted.status).toBe(200);
}

test('a person changes their own password: other sessions end, this one stays', async ({
  page,
  browser,
}) => {
  const email = `ada-${Date.now()}@acme.test`;
  await newMember(email);
  const elsewhere = await browser.newPage();
  await signInWithPassword(elsewhere, email, PASSWORD);
  await signInWithPassword(page, email, PASSWORD);

  await page.goto(`${server.url}/orgs/acme/account`);
  const form = page.getByRole('form', { name: 'Change password' });
  await form.getByLabel('Current password').fill('not my password at all');
  await form.getByLabel('New password').fill('a fresh passphrase for spring');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(form.getByLabel('Current password')).toHaveAccessibleDescription(
    'is not your current password',
  );
  await form.getByLabel('Current password').fill(PASSWORD);
  await form.getByLabel('New password').fill('password1234');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(form.getByLabel('New password')).toHaveAccessibleDescription(/too easy to guess/);
  await form.getByLabel('New password').fill('a fresh passphrase for spring');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByRole('status')).toHaveText(/Password changed/);
  await expectAccessible(page);

  // This session goes on; the other browser is signed out at its next request.
  await page.reload();
  await expect(page.getByRole('heading', { name: 'Your account' })).toBeVisible();
  await elsewhere.reload();
  await expect(elsewhere.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  await signInWithPassword(elsewhere, email, 'a fresh passphrase for spring');
  await elsewhere.close();
});

test('a forgotten password is reset from the e-mailed link, then signs in', async ({ page }) => {
  const email = `grace-${Date.now()}@acme.test`;
  await newMember(email);
  await page.goto(`${server.url}/sign-in`);
  await page.getByRole('link', { name: 'Forgot password?' }).click();
  await expect(page.getByRole('heading', { name: 'Reset your password' })).toBeVisible();
  await page.getByLabel('E-mail').fill(email);
  await page.getByRole('button', { name: 'Send reset link' }).click();
  await expect(page.getByRole('status')).toContainText(`If ${email} has an account`);
  await expectAccessible(page);

  const link = /http\S+\/reset-password#token=vxl_pwr_[\w-]+/.exec(await mailTo(email))![0];
  expect(new URL(link).origin).toBe(server.url);
  await page.goto(link);
  await expect(page.getByRole('heading', { name: 'Choose a new password' })).toBeVisible();
  await page.getByLabel('New password').fill('an entirely new passphrase');
  await page.getByRole('button', { name: 'Set new password' }).click();
  await expect(page.getByRole('status')).toContainText('Your password is changed');
  await expectAccessible(page);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await signInWithPassword(page, email, 'an entirely new passphrase');

  // The link worked once.
  await page.goto(link);
  await page.getByLabel('New password').fill('and yet another passphrase');
  await page.getByRole('button', { name: 'Set new password' }).click();
  await expect(page.getByRole('alert')).toContainText('ask for a new one');
});
