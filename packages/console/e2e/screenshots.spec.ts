import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

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

/** The administration pages (journey 7) in docs/console.md, light and dark. */
test('screenshots of the administration pages, light and dark', async ({ page }) => {
  const receiver = createServer((_request, response) => {
    response.statusCode = 204;
    response.end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { port } = receiver.address() as AddressInfo;
  const projects = await apiCall<{ items: { key: string }[] }>('GET', '/api/v1/orgs/acme/projects');
  if (!projects.items.some((p) => p.key === 'shop'))
    await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'shop', name: 'Shop' });
  await apiCall('POST', `${PROJECT}/environments`, {
    key: 'staging',
    name: 'Staging',
    color: '#a855f7',
    sortOrder: 1,
  });
  await apiCall('POST', `${PROJECT}/segments`, {
    key: 'staff',
    name: 'Staff',
    conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
  });
  await apiCall('POST', `${PROJECT}/environments/production/sdk-keys`, {
    name: 'checkout-service',
    type: 'ServerSide',
  });
  await apiCall('POST', `${PROJECT}/environments/production/sdk-keys`, {
    name: 'web-shop',
    type: 'ClientSide',
  });
  await apiCall('PATCH', `${PROJECT}/environments/staging`, { critical: true });
  const webhook = await apiCall<{ id: string }>('POST', '/api/v1/orgs/acme/webhooks', {
    name: 'Chat notifications',
    url: `http://127.0.0.1:${port}/hook`,
    eventTypes: ['flag.toggled', 'flag.environment_config.updated'],
  });
  await apiCall('POST', `/api/v1/orgs/acme/webhooks/${webhook.id}/test`);
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page);
  await page.evaluate(() => localStorage.setItem('vexil.environment.acme/shop', 'production'));
  const base = `${server.url}/orgs/acme/projects/shop`;
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${base}/environments`);
    await expect(page.getByRole('row', { name: /Staging/ })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}environments-${scheme}.png` });

    await page.goto(`${base}/segments/staff`);
    await expect(page.getByRole('heading', { name: 'Staff', level: 1 })).toBeVisible();
    await page.getByRole('button', { name: 'Edit segment' }).click();
    await expect(
      page.getByRole('group', { name: 'Condition 1', exact: true }).getByLabel('Attribute'),
    ).toHaveValue('email');
    await page.screenshot({ path: `${IMAGES}segment-${scheme}.png` });
    await page.keyboard.press('Escape');

    await page.goto(`${base}/sdk-keys`);
    await expect(page.getByRole('row', { name: /web-shop/ })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}sdk-keys-${scheme}.png` });

    await page.goto(`${base}/webhooks/${webhook.id}`);
    await expect(
      page.getByRole('region', { name: 'Deliveries' }).getByRole('listitem').first(),
    ).toContainText('Succeeded', { timeout: 15_000 });
    await expect(page.getByRole('cell', { name: '204', exact: true })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}webhook-${scheme}.png`, fullPage: true });

    await page.goto(`${base}/audit-log`);
    await expect(page.getByText('Environment "staging" updated')).toBeVisible();
    await page.screenshot({ path: `${IMAGES}audit-log-${scheme}.png` });
  }
  await new Promise((resolve) => receiver.close(resolve));
});

/**
 * At 390 px (a phone) the side navigation hides behind "Menu" and the pages stay usable and
 * accessible; the pictures in docs/console.md, light and dark.
 */
test('screenshots at 390 px, with the navigation behind Menu, light and dark', async ({ page }) => {
  const projects = await apiCall<{ items: { key: string }[] }>('GET', '/api/v1/orgs/acme/projects');
  if (!projects.items.some((p) => p.key === 'shop'))
    await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'shop', name: 'Shop' });
  await apiCall('POST', `${PROJECT}/flags`, { key: 'narrow-checkout', name: 'Narrow checkout' });
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${server.url}/orgs/acme/projects/shop/flags`);
    await expect(page.getByRole('link', { name: 'Narrow checkout' })).toBeVisible();
    const sections = page.getByRole('navigation', { name: 'Sections' });
    await expect(sections).toBeHidden();
    await expectAccessible(page);
    await page.screenshot({ path: `${IMAGES}flags-390-${scheme}.png` });

    const menu = page.getByRole('button', { name: 'Menu' });
    await menu.click();
    await expect(menu).toHaveAttribute('aria-expanded', 'true');
    await expect(sections).toBeVisible();
    await expectAccessible(page);
    await page.screenshot({ path: `${IMAGES}menu-390-${scheme}.png` });

    // Opening a page closes the menu.
    await sections.getByRole('link', { name: 'Segments' }).click();
    await expect(page.getByRole('heading', { name: 'Segments', level: 1 })).toBeVisible();
    await expect(sections).toBeHidden();
    const horizontalScroll = await page.evaluate(
      () => document.documentElement.scrollWidth > window.innerWidth,
    );
    expect(horizontalScroll).toBe(false);

    await page.goto(`${server.url}/orgs/acme/projects/shop/flags/narrow-checkout`);
    await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}flag-390-${scheme}.png`, fullPage: true });
  }
});
