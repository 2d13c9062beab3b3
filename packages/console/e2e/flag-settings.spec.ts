import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';
const CONSOLE = '/orgs/acme/projects/web';

interface FlagDetail {
  name: string | null;
  description: string | null;
  tags: string[];
  clientSideVisible: boolean;
  isPermanent: boolean;
  removalPrUrl: string | null;
  metadata: Record<string, unknown>;
}

/** The flags a client key of development is given (`POST /v1/client/evaluate`). */
async function clientFlags(clientKey: string): Promise<string[]> {
  const response = await fetch(`${server.url}/v1/client/evaluate`, {
    method: 'POST',
    headers: { authorization: clientKey, 'content-type': 'application/json' },
    body: JSON.stringify({ context: { userId: 'u1' } }),
  });
  expect(response.status).toBe(200);
  return Object.keys(((await response.json()) as { flags: Record<string, unknown> }).flags);
}

// Issue 43, item 1: a flag could not be made visible to client SDKs from the console, nor
// renamed, nor its description or tags edited.
test('every field of a flag the API changes is changed in the console, client visibility shown', async ({
  page,
}) => {
  const { key: clientKey } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/development/sdk-keys`,
    { name: 'flag-settings-client', type: 'ClientSide' },
  );
  await signIn(page);

  // "New flag" offers the client-side choice.
  await page.goto(`${server.url}${CONSOLE}/flags`);
  await page.getByRole('button', { name: 'New flag' }).click();
  const dialog = page.getByRole('dialog', { name: 'New flag' });
  await dialog.getByLabel('Name').fill('Button colour');
  await dialog.getByLabel('Visible to client-side SDKs').check();
  await dialog.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'Button colour', level: 1 })).toBeVisible();
  await expect(page.getByText('visible to client-side SDKs')).toBeVisible();
  expect(
    (await apiCall<FlagDetail>('GET', `${PROJECT}/flags/button-colour`)).clientSideVisible,
  ).toBe(true);
  expect(await clientFlags(clientKey)).toContain('button-colour');

  // A flag made by a script without it: the Settings tab renames it, describes it, tags it and
  // makes it visible to client SDKs, which then receive it.
  await apiCall('POST', `${PROJECT}/flags`, { key: 'checkout-banner', name: 'Banner' });
  expect(await clientFlags(clientKey)).not.toContain('checkout-banner');
  await page.goto(`${server.url}${CONSOLE}/flags/checkout-banner/settings`);
  await expect(page.getByText('server-side SDKs only')).toBeVisible();
  const details = page.getByRole('region', { name: 'Details' });
  await details.getByLabel('Name').fill('Checkout banner');
  await details.getByLabel('Description').fill('The banner above the checkout.');
  await details.getByLabel('Tags').fill('checkout, ui');
  await details.getByLabel('Visible to client-side SDKs').check();
  await details.getByLabel(/^Permanent/).check();
  await details.getByLabel('Removal pull request').fill('https://git.example.com/pr/7');
  await details.getByLabel('Metadata (JSON)').fill('{"team": "checkout"}');
  await expectAccessible(page);
  await details.getByRole('button', { name: 'Save details' }).click();
  await expect(details.getByRole('status')).toHaveText('Saved.');
  await expect(page.getByRole('heading', { name: 'Checkout banner', level: 1 })).toBeVisible();
  const saved = await apiCall<FlagDetail>('GET', `${PROJECT}/flags/checkout-banner`);
  expect(saved).toMatchObject({
    name: 'Checkout banner',
    description: 'The banner above the checkout.',
    tags: ['checkout', 'ui'],
    clientSideVisible: true,
    isPermanent: true,
    removalPrUrl: 'https://git.example.com/pr/7',
    metadata: { team: 'checkout' },
  });
  expect(await clientFlags(clientKey)).toContain('checkout-banner');

  // A refusal is said at its field, and what was typed stays.
  await details.getByLabel('Removal pull request').fill('not a link');
  await details.getByRole('button', { name: 'Save details' }).click();
  await expect(details.getByLabel('Removal pull request')).toHaveAttribute('aria-invalid', 'true');
  await expect(details.getByLabel('Removal pull request')).toHaveValue('not a link');

  // The list says which flags client keys see; the SDK-keys page says client keys see only those.
  await page.goto(`${server.url}${CONSOLE}/flags`);
  await expect(page.getByRole('row', { name: /Checkout banner/ })).toContainText('client-side');
  await expect(page.getByRole('row', { name: /Button colour/ })).toContainText('client-side');
  await apiCall('POST', `${PROJECT}/flags`, { key: 'server-only', name: 'Server only' });
  await expect(page.getByRole('row', { name: /Server only/ })).toBeVisible();
  await expect(page.getByRole('row', { name: /Server only/ })).not.toContainText('client-side');
  await page.goto(`${server.url}${CONSOLE}/sdk-keys?env=development`);
  await expect(
    page.getByText(/Client keys \(vxl_cli_…\) see only the flags visible to client-side SDKs/),
  ).toBeVisible();
});
