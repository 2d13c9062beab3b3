import type { Page } from '@playwright/test';
import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';
const CONSOLE = '/orgs/acme/projects/web';

/** A server-side SDK key of development, made through the API as a script would. */
async function developmentSdkKey(): Promise<string> {
  const { key } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/development/sdk-keys`,
    { name: 'flag-pages-e2e', type: 'ServerSide' },
  );
  return key;
}

/** What an SDK gets for `flagKey` (`POST /v1/sdk/evaluate`). */
async function evaluate(sdkKey: string, flagKey: string): Promise<unknown> {
  const response = await fetch(`${server.url}/v1/sdk/evaluate`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ flagKey, context: { userId: 'u1' } }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { value: unknown }).value;
}

/** Opens "New flag", names the flag and picks its type; returns the dialog. */
async function newFlag(page: Page, name: string, type: string) {
  await page.goto(`${server.url}${CONSOLE}/flags`);
  await page.getByRole('button', { name: 'New flag' }).click();
  const dialog = page.getByRole('dialog', { name: 'New flag' });
  await dialog.getByLabel('Name').fill(name);
  await dialog.getByLabel('Type').selectOption(type);
  return dialog;
}

async function fillVariations(
  dialog: ReturnType<Page['getByRole']>,
  variations: [string, string][],
): Promise<void> {
  for (const [index, [key, value]] of variations.entries()) {
    const group = dialog.getByRole('group', { name: `Variation ${index + 1}` });
    if (!(await group.isVisible()))
      await dialog.getByRole('button', { name: 'Add variation' }).click();
    await group.getByLabel('Variation key').fill(key);
    await group.getByLabel('Variation value').fill(value);
  }
}

test('every flag type is created from "New flag" and served to an SDK', async ({ page }) => {
  await signIn(page);
  const sdkKey = await developmentSdkKey();

  // Boolean: the key is made from the name, tags are comma-separated.
  let dialog = await newFlag(page, 'Dark mode toggle', 'Boolean');
  await expect(dialog.getByLabel('Key', { exact: true })).toHaveValue('dark-mode-toggle');
  await dialog.getByLabel('Tags').fill('ui, experiment');
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'Dark mode toggle' })).toBeVisible();
  expect(
    (await apiCall<{ tags: string[] }>('GET', `${PROJECT}/flags/dark-mode-toggle`)).tags,
  ).toEqual(['ui', 'experiment']);

  // String, with a key typed by hand and a variation added; two variations with one key are
  // refused by the API, and its message shows in the dialog, nothing typed lost.
  dialog = await newFlag(page, 'Banner text', 'String');
  await dialog.getByLabel('Key', { exact: true }).fill('banner.text');
  await fillVariations(dialog, [
    ['welcome', 'Welcome!'],
    ['sale', 'Sale today'],
    ['sale', 'Sale tomorrow'],
  ]);
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  const third = dialog.getByRole('group', { name: 'Variation 3' });
  await expect(third.getByLabel('Variation key')).toHaveAttribute('aria-invalid', 'true');
  await expect(third.getByText('duplicate key "sale"')).toBeVisible();
  await expect(
    dialog.getByRole('group', { name: 'Variation 3' }).getByLabel('Variation value'),
  ).toHaveValue('Sale tomorrow');
  await dialog.getByRole('button', { name: 'Remove variation 3' }).click();
  await expect(dialog.getByRole('button', { name: 'Remove variation 2' })).toBeDisabled();
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'Banner text' })).toBeVisible();

  // Number: a value that is not a number is said at once.
  dialog = await newFlag(page, 'Retry limit', 'Number');
  await fillVariations(dialog, [
    ['low', 'three'],
    ['high', '10'],
  ]);
  const low = dialog.getByRole('group', { name: 'Variation 1' }).getByLabel('Variation value');
  await expect(low).toHaveAttribute('aria-invalid', 'true');
  await expect(dialog.getByText('Must be a number')).toBeVisible();
  await low.fill('3');
  await expect(low).toHaveAttribute('aria-invalid', 'false');
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'Retry limit' })).toBeVisible();

  // Json: checked as it is typed.
  dialog = await newFlag(page, 'Checkout config', 'Json');
  await fillVariations(dialog, [
    ['small', '{"items": 3'],
    ['large', '{"items": 30}'],
  ]);
  const small = dialog.getByRole('group', { name: 'Variation 1' }).getByLabel('Variation value');
  await expect(dialog.getByText(/Not valid JSON/)).toBeVisible();
  await expectAccessible(page);
  await small.fill('{"items": 3}');
  await expect(dialog.getByText(/Not valid JSON/)).toBeHidden();
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'Checkout config' })).toBeVisible();

  // Off everywhere: a Boolean serves false, the others their first variation.
  expect(await evaluate(sdkKey, 'dark-mode-toggle')).toBe(false);
  expect(await evaluate(sdkKey, 'banner.text')).toBe('Welcome!');
  expect(await evaluate(sdkKey, 'retry-limit')).toBe(3);
  expect(await evaluate(sdkKey, 'checkout-config')).toEqual({ items: 3 });
});

/** API requests of a page beyond the frame's own (who, organizations, projects, environments, change requests to review, the live stream). */
function countPageRequests(page: Page): string[] {
  const frame =
    /^\/api\/v1\/(me|orgs|orgs\/acme|orgs\/acme\/projects|orgs\/acme\/projects\/web\/environments|orgs\/acme\/projects\/web\/change-requests|orgs\/acme\/events\/stream)$/;
  const seen: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/api/') && !frame.test(url.pathname)) seen.push(url.pathname);
  });
  return seen;
}

test('a flag page opened by its link shows its environment and section, in at most 5 requests', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'linked', name: 'Linked' });
  await signIn(page);
  const requests = countPageRequests(page);
  await page.goto(`${server.url}${CONSOLE}/flags/linked/targeting?env=production`);
  await expect(page.getByRole('tab', { name: 'Production' })).toHaveAttribute(
    'aria-selected',
    'true',
  );
  await expect(page.getByLabel('Default variation')).toBeVisible();
  await expect(
    page
      .getByRole('navigation', { name: 'Flag sections' })
      .getByRole('link', { name: 'Targeting' }),
  ).toHaveAttribute('aria-current', 'page');
  await expectAccessible(page);
  // Whatever else is still to come has been asked for by now.
  await page.waitForLoadState('load');
  await expect.poll(() => requests.length).toBeGreaterThan(0);
  await page.waitForTimeout(1_000);
  expect(requests.length, requests.join('\n')).toBeLessThanOrEqual(5);

  // Reloaded, it is the same page; a tab chosen goes into the address.
  await page.reload();
  await expect(page.getByRole('tab', { name: 'Production' })).toHaveAttribute(
    'aria-selected',
    'true',
  );
  await page.getByRole('tab', { name: 'Development' }).click();
  await expect(page).toHaveURL(/\/flags\/linked\/targeting\?env=development$/);

  // Each section has its own address, opened by link, in at most 5 requests.
  for (const [section, heading] of [
    ['variations', 'Variations'],
    ['release', 'Release plan'],
    ['insights', 'Evaluations per variation'],
    ['history', 'History'],
    ['settings', 'Compare environments'],
  ] as const) {
    requests.length = 0;
    await page.goto(`${server.url}${CONSOLE}/flags/linked/${section}`);
    await expect(page.getByRole('heading', { name: heading, level: 2 })).toBeVisible();
    await page.waitForTimeout(1_000);
    expect(requests.length, `${section}: ${requests.join(', ')}`).toBeLessThanOrEqual(5);
    await expectAccessible(page);
  }
  // Without an environment, the first one (or the one chosen last in the header).
  await page.goto(`${server.url}${CONSOLE}/flags/linked`);
  await expect(page.getByRole('tab', { name: 'Development' })).toHaveAttribute(
    'aria-selected',
    'true',
  );
});

test('the flag list shows on/off per environment, toggles from the list, and a week of evaluations', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'listed', name: 'Listed' });
  const sdkKey = await developmentSdkKey();
  await evaluate(sdkKey, 'listed');
  await evaluate(sdkKey, 'listed');
  await signIn(page);
  await page.goto(`${server.url}${CONSOLE}/flags?`);
  const row = page.getByRole('row', { name: /Listed/ });
  await expect(row.getByRole('img', { name: /^2 evaluations in the last 7 days/ })).toBeVisible();
  await expectAccessible(page);

  // Development toggles at once; production asks first.
  await row.getByRole('switch', { name: 'listed in Development' }).click();
  await expect(row.getByRole('switch', { name: 'listed in Development' })).toBeChecked();
  await row.getByRole('switch', { name: 'listed in Production' }).click();
  const confirm = page.getByRole('alertdialog', { name: 'Turn listed on in Production?' });
  await expectAccessible(page);
  await confirm.getByRole('button', { name: 'Turn on in Production' }).click();
  await expect(row.getByRole('switch', { name: 'listed in Production' })).toBeChecked();
  const environments = await apiCall<{ environmentKey: string; isEnabled: boolean }[]>(
    'GET',
    `${PROJECT}/flags/listed/environments`,
  );
  expect(
    environments
      .filter((e) => e.isEnabled)
      .map((e) => e.environmentKey)
      .sort(),
  ).toEqual(['development', 'production']);
  // In a narrow window the environments that do not fit are chosen as columns.
  await page.setViewportSize({ width: 900, height: 800 });
  await expect(page.getByRole('columnheader', { name: 'Production' })).toBeHidden();
  await page.getByText(/^Environment columns/).click();
  await page.getByRole('checkbox', { name: 'Production' }).check();
  await expect(page.getByRole('columnheader', { name: 'Production' })).toBeVisible();
  await expectAccessible(page);
  // One page of flags: no paging controls.
  await expect(page.getByRole('navigation', { name: 'Pages' })).toBeHidden();
});

test('history is readable, in variation keys, for a Viewer', async ({ page }) => {
  const flag = await apiCall<{ variations: { id: string; key: string }[] }>(
    'POST',
    `${PROJECT}/flags`,
    {
      key: 'storied',
      type: 'String',
      variations: [
        { key: 'blue', value: 'blue' },
        { key: 'green', value: 'green' },
      ],
    },
  );
  const green = flag.variations.find((v) => v.key === 'green')!.id;
  await apiCall('PATCH', `${PROJECT}/flags/storied/environments/development`, {
    defaultVariationId: green,
  });
  const { token } = await apiCall<{ token: string }>('POST', '/api/v1/orgs/acme/service-tokens', {
    name: 'history viewer',
    role: 'Viewer',
  });
  await signIn(page, token);
  await page.goto(`${server.url}${CONSOLE}/flags/storied/history`);
  const change = page.getByRole('row', { name: /^Default variation / });
  await expect(change.getByRole('deletion')).toHaveText('blue');
  await expect(change.getByRole('insertion')).toHaveText('green');
  await expect(page.getByText(green)).toBeHidden();
  await expectAccessible(page);
});
