import { fileURLToPath } from 'node:url';
import { apiCall, expect, server, signIn, test } from './fixtures';

// A project of its own, so that flags other tests create stay out of the pictures.
const PROJECT = '/api/v1/orgs/acme/projects/shop';
const IMAGES = fileURLToPath(new URL('../../../docs/images/console/', import.meta.url));

/** The screenshots in docs/console.md, taken here so that they show the console as it is. */
test('screenshots of the main pages, light and dark', async ({ page }) => {
  await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'shop', name: 'Shop' });
  await apiCall('POST', `${PROJECT}/flags`, {
    key: 'dark-mode',
    name: 'Dark mode',
    description: 'Offers the dark theme in the web shop',
    tags: ['ui'],
  });
  const flag = await apiCall<{ variations: { id: string; key: string }[] }>(
    'GET',
    `${PROJECT}/flags/dark-mode`,
  );
  const on = flag.variations.find((v) => v.key === 'true')!.id;
  await apiCall('POST', `${PROJECT}/flags/dark-mode/environments/development/rules`, {
    description: 'Staff',
    variationId: on,
    conditionGroups: [
      { conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }] },
    ],
  });
  await apiCall('POST', `${PROJECT}/flags/dark-mode/environments/development/toggle`, {
    enabled: true,
  });
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${server.url}/orgs/acme/projects/shop/flags`);
    await expect(page.getByRole('link', { name: 'Dark mode' })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}flags-${scheme}.png` });

    await page.goto(`${server.url}/orgs/acme/projects/shop/flags/dark-mode`);
    await page.getByRole('tab', { name: 'Development' }).click();
    await expect(page.getByRole('listitem', { name: 'Rule 1: Staff' })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}flag-${scheme}.png`, fullPage: true });
  }
});
