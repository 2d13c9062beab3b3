import { apiCall, expect, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';
const CONSOLE = '/orgs/acme/projects/web';

// Issue 43, item 5: the sidebar's environment and the page's disagreed, and the SDK-keys page
// followed the sidebar, so a key (shown once) was made in an environment the page did not show.
test('the address says which environment every page shows, the sidebar included', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'env-in-address', name: 'Env in address' });
  await signIn(page);
  const sidebar = page.getByRole('navigation', { name: 'Context' }).getByLabel('Environment');

  // A link to Production's targeting: the tab and the sidebar both say Production.
  await page.goto(`${server.url}${CONSOLE}/flags/env-in-address/targeting?env=production`);
  await expect(page.getByRole('tab', { name: 'Production' })).toHaveAttribute(
    'aria-selected',
    'true',
  );
  await expect(sidebar).toHaveValue('production');

  // Choosing a tab changes the sidebar; choosing in the sidebar changes the tab and the address.
  await page.getByRole('tab', { name: 'Development' }).click();
  await expect(sidebar).toHaveValue('development');
  await sidebar.selectOption('production');
  await expect(page.getByRole('tab', { name: 'Production' })).toHaveAttribute(
    'aria-selected',
    'true',
  );
  await expect(page).toHaveURL(/[?&]env=production\b/);

  // From there to SDK keys through the navigation: Production's keys, and a new key is made
  // in Production.
  await page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: 'SDK keys' })
    .click();
  await expect(page.getByRole('heading', { name: 'SDK keys in Production' })).toBeVisible();
  await expect(sidebar).toHaveValue('production');
  await page.getByRole('button', { name: 'New SDK key' }).click();
  const dialog = page.getByRole('dialog', { name: 'New SDK key in Production' });
  await dialog.getByLabel('Name').fill('env-in-address-key');
  await dialog.getByRole('button', { name: 'Create key' }).click();
  await expect(dialog.getByLabel('SDK key env-in-address-key')).toHaveValue(/^vxl_srv_/);
  await dialog.getByRole('button', { name: 'Done' }).click();
  const keysIn = async (environment: string) =>
    (
      await apiCall<{ items: { name: string }[] }>(
        'GET',
        `${PROJECT}/environments/${environment}/sdk-keys`,
      )
    ).items.map((key) => key.name);
  expect(await keysIn('production')).toContain('env-in-address-key');
  expect(await keysIn('development')).not.toContain('env-in-address-key');

  // The SDK-keys page opened by its address follows the address, whatever was shown before.
  await page.goto(`${server.url}${CONSOLE}/sdk-keys?env=development`);
  await expect(page.getByRole('heading', { name: 'SDK keys in Development' })).toBeVisible();
  await expect(sidebar).toHaveValue('development');
  await sidebar.selectOption('production');
  await expect(page.getByRole('heading', { name: 'SDK keys in Production' })).toBeVisible();
  await expect(page).toHaveURL(/[?&]env=production\b/);
});
