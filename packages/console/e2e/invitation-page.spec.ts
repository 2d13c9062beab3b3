import { apiCall, expect, expectAccessible, test } from './fixtures';

/** Issue 43: the invitation page says which organization, role and address a link is for. */
test('an invitation link says which organization, role and address it is for', async ({
  browser,
}) => {
  const org = await apiCall<{ name: string }>('GET', '/api/v1/orgs/acme');
  const invitation = await apiCall<{ acceptUrl: string }>('POST', '/api/v1/orgs/acme/invitations', {
    email: 'noor@example.com',
    role: 'Viewer',
  });

  const context = await browser.newContext();
  const newcomer = await context.newPage();
  await newcomer.goto(invitation.acceptUrl);
  await expect(newcomer.getByRole('heading', { name: 'Accept an invitation' })).toBeVisible();
  await expect(
    newcomer.getByText(`You are invited to join ${org.name} as Viewer.`, { exact: true }),
  ).toBeVisible();
  await expect(
    newcomer.getByText('The invitation is for noor@example.com.', { exact: true }),
  ).toBeVisible();
  await expectAccessible(newcomer);

  await newcomer.getByLabel('Your name').fill('Noor');
  await newcomer.getByLabel('Choose a password').fill('a password Noor will remember');
  await newcomer.getByRole('button', { name: 'Create account and accept' }).click();
  await expect(newcomer.getByRole('heading', { name: 'Flags' })).toBeVisible();

  // Once used, the link says so instead of offering to accept it again.
  const elsewhere = await browser.newContext();
  const again = await elsewhere.newPage();
  await again.goto(invitation.acceptUrl);
  await expect(again.getByRole('alert')).toHaveText(/This invitation link is not valid/);
  await expect(again.getByRole('button', { name: 'Create account and accept' })).toHaveCount(0);
  await expect(again.getByText(/You are invited/)).toHaveCount(0);
  await context.close();
  await elsewhere.close();
});
