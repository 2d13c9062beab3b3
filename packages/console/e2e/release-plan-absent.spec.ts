import { apiCall, expect, server, signIn, test } from './fixtures';

const FLAGS = '/api/v1/orgs/acme/projects/web/flags';

/** Issue 43: the Release plan tab of a flag without a plan makes no failing request. */
test('the Release plan tab of a flag without a plan makes no failed request', async ({ page }) => {
  await apiCall('POST', FLAGS, { key: 'never-planned', name: 'Never planned' });
  const failed: string[] = [];
  page.on('response', (response) => {
    if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
  });
  await signIn(page);
  await page.goto(
    `${server.url}/orgs/acme/projects/web/flags/never-planned/release-plan?env=development`,
  );
  await expect(page.getByRole('heading', { name: 'Release plan', level: 2 })).toBeVisible();
  await expect(page.getByRole('form', { name: 'New release plan in development' })).toBeVisible();
  const environments = page.getByRole('tablist', { name: 'Release plan by environment' });
  await environments.getByRole('tab', { name: 'Production' }).click();
  await expect(page.getByRole('form', { name: 'New release plan in production' })).toBeVisible();
  expect(failed).toEqual([]);
});

test('the Release plan tab still shows a plan where there is one', async ({ page }) => {
  const flag = await apiCall<{ variations: { id: string; key: string }[] }>('POST', FLAGS, {
    key: 'planned-once',
    name: 'Planned once',
  });
  const off = flag.variations.find((variation) => variation.key === 'false')!.id;
  await apiCall('PATCH', `${FLAGS}/planned-once/environments/development`, {
    defaultVariationId: off,
  });
  await apiCall('PUT', `${FLAGS}/planned-once/environments/development/release-plan`, {
    variation: 'true',
    steps: [{ percentage: 100, after: 'PT0S' }],
  });
  await signIn(page);
  await page.goto(
    `${server.url}/orgs/acme/projects/web/flags/planned-once/release-plan?env=development`,
  );
  await expect(page.getByRole('region', { name: 'Release plan in development' })).toBeVisible();
  await expect(page.getByRole('form', { name: 'New release plan in development' })).toHaveCount(0);
});
