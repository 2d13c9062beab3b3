import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';

interface FlagEnvironment {
  environmentKey: string;
  isEnabled: boolean;
}

test('a new user signs in, creates a flag and turns it on in production after confirming', async ({
  page,
}) => {
  await page.goto(`${server.url}/`);
  await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  await expectAccessible(page);
  await signIn(page);
  await expectAccessible(page);

  await page.getByRole('button', { name: 'New flag' }).click();
  const dialog = page.getByRole('dialog', { name: 'New flag' });
  await dialog.getByLabel('Key').fill('new-checkout');
  await dialog.getByLabel('Name').fill('New checkout');
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'New checkout' })).toBeVisible();
  await expectAccessible(page);

  const production = page.getByRole('switch', { name: 'On in production' });
  await expect(production).not.toBeChecked();
  await production.click();
  const confirm = page.getByRole('alertdialog', { name: 'Turn new-checkout on in production?' });
  await expect(confirm).toBeVisible();
  await expectAccessible(page);
  await confirm.getByRole('button', { name: 'Turn on in production' }).click();
  await expect(production).toBeChecked();

  const environments = await apiCall<FlagEnvironment[]>(
    'GET',
    `${PROJECT}/flags/new-checkout/environments`,
  );
  expect(environments.find((e) => e.environmentKey === 'production')?.isEnabled).toBe(true);
  expect(environments.find((e) => e.environmentKey === 'development')?.isEnabled).toBe(false);
});

test('turning a flag on in a critical environment does nothing when the confirmation is cancelled', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'cautious', name: 'Cautious' });
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/flags/cautious`);
  const production = page.getByRole('switch', { name: 'On in production' });
  await production.click();
  await page.getByRole('button', { name: 'Cancel' }).click();
  await expect(production).not.toBeChecked();
  const environments = await apiCall<FlagEnvironment[]>(
    'GET',
    `${PROJECT}/flags/cautious/environments`,
  );
  expect(environments.every((e) => !e.isEnabled)).toBe(true);
});

test('a change made through the API appears on an open page within 2 seconds', async ({ page }) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'live-flag', name: 'Live flag' });
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/flags/live-flag`);
  const development = page.getByRole('switch', { name: 'On in development' });
  await expect(development).not.toBeChecked();

  await apiCall('POST', `${PROJECT}/flags/live-flag/environments/development/toggle`, {
    enabled: true,
  });
  await expect(development).toBeChecked({ timeout: 2_000 });

  await apiCall('PATCH', `${PROJECT}/flags/live-flag`, { name: 'Renamed elsewhere' });
  await expect(page.getByRole('heading', { name: 'Renamed elsewhere' })).toBeVisible({
    timeout: 2_000,
  });

  // The list too: pushed by the event stream (the fallback poll is 30 s).
  await page.getByRole('link', { name: 'Flags', exact: true }).first().click();
  await expect(page.getByRole('link', { name: 'Renamed elsewhere' })).toBeVisible();
  await apiCall('POST', `${PROJECT}/flags`, { key: 'live-newcomer', name: 'Live newcomer' });
  await expect(page.getByRole('link', { name: 'Live newcomer' })).toBeVisible({ timeout: 2_000 });
});

test('a flag can be created with the keyboard alone', async ({ page }) => {
  await signIn(page);
  const newFlag = page.getByRole('button', { name: 'New flag' });
  for (
    let presses = 0;
    presses < 30 && !(await newFlag.evaluate((b) => b === document.activeElement));
    presses++
  )
    await page.keyboard.press('Tab');
  await expect(newFlag).toBeFocused();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'New flag' });
  await expect(dialog.getByLabel('Name')).toBeFocused();
  // The key is made from the name.
  await page.keyboard.type('Made by keyboard');
  await expect(dialog.getByLabel('Key', { exact: true })).toHaveValue('made-by-keyboard');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Made by keyboard' })).toBeVisible();
});

test('the flag list searches, filters and pages', async ({ page }) => {
  for (let i = 0; i < 55; i++)
    await apiCall('POST', `${PROJECT}/flags`, {
      key: `bulk-${String(i).padStart(2, '0')}`,
      tags: i % 2 ? ['odd'] : ['even'],
    });
  await signIn(page);
  await page.getByLabel('Search flags').fill('bulk-1');
  await expect(page.getByRole('link', { name: /^bulk-/ })).toHaveCount(10);

  await page.getByLabel('Search flags').fill('bulk');
  await page.getByLabel('Tag').fill('odd');
  await expect(page.getByRole('link', { name: /^bulk-/ })).toHaveCount(27);

  await page.getByLabel('Tag').fill('');
  await expect(page.getByRole('link', { name: /^bulk-/ })).toHaveCount(50);
  await page.getByRole('button', { name: 'Next page' }).click();
  await expect(page.getByRole('link', { name: /^bulk-/ })).toHaveCount(5);
  await page.getByRole('button', { name: 'Previous page' }).click();
  await expect(page.getByRole('link', { name: /^bulk-/ })).toHaveCount(50);

  await page.getByRole('button', { name: 'Favourite bulk-03' }).click();
  await page.getByLabel('Favourites only').check();
  await expect(page.getByRole('link', { name: /^bulk-/ })).toHaveCount(1);
  await page.getByLabel('Favourites only').uncheck();

  // Newest first across pages: the API sorts before paging.
  await page.getByLabel('Sort by').selectOption('created');
  await expect(page.getByRole('link', { name: /^bulk-/ }).first()).toHaveText('bulk-54');
});

test('the flag list filters by status per environment, type, owner and lifecycle', async ({
  page,
}) => {
  const me = await apiCall<{ id: string }>('GET', '/api/v1/me');
  await apiCall('POST', `${PROJECT}/flags`, { key: 'filter-on', ownerId: me.id });
  await apiCall('POST', `${PROJECT}/flags/filter-on/environments/development/toggle`, {
    enabled: true,
  });
  await apiCall('POST', `${PROJECT}/flags`, {
    key: 'filter-text',
    type: 'String',
    variations: [
      { key: 'a', value: 'a' },
      { key: 'b', value: 'b' },
    ],
  });
  await signIn(page);
  const filters = page.getByRole('search', { name: 'Filter flags' });
  await filters.getByLabel('Search flags').fill('filter-');
  await expect(page.getByRole('link', { name: /^filter-/ })).toHaveCount(2);

  await filters.getByLabel('Status in environment').selectOption('development');
  await filters.getByLabel('Flag status').selectOption('on');
  await expect(page.getByRole('link', { name: /^filter-/ })).toHaveText(['filter-on']);
  await filters.getByLabel('Flag status').selectOption('off');
  await expect(page.getByRole('link', { name: /^filter-/ })).toHaveText(['filter-text']);
  await filters.getByLabel('Flag status').selectOption('');

  await filters.getByLabel('Type').selectOption('String');
  await expect(page.getByRole('link', { name: /^filter-/ })).toHaveText(['filter-text']);
  await filters.getByLabel('Type').selectOption('');

  await filters.getByLabel('Mine').check();
  await expect(page.getByRole('link', { name: /^filter-/ })).toHaveText(['filter-on']);
  await filters.getByLabel('Mine').uncheck();

  // Nothing here has been evaluated for the stale period.
  await filters.getByLabel('Lifecycle').selectOption('Stale');
  await expect(page.getByText('No flags match.')).toBeVisible();
  await expectAccessible(page);
});

test('the command bar jumps to a flag from the keyboard', async ({ page }) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'jump-target', name: 'Jump target' });
  await signIn(page);
  await page.keyboard.press('Control+k');
  const bar = page.getByRole('combobox', { name: 'Go to' });
  await expect(bar).toBeFocused();
  await page.keyboard.type('jump');
  await expect(page.getByRole('option', { name: /Jump target/ })).toBeVisible();
  await expectAccessible(page);
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Jump target' })).toBeVisible();
});
