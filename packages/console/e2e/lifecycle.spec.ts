import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';

interface Usage {
  environments: { environmentKey: string; lastEvaluatedAt: string | null }[];
}

test('archiving a recently evaluated flag says why it is refused, and can be forced and undone', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'guarded', name: 'Guarded' });
  const { key: sdkKey } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/production/sdk-keys`,
    { name: 'guard-e2e', type: 'ServerSide' },
  );
  await fetch(`${server.url}/v1/sdk/evaluate`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ flagKey: 'guarded', context: { userId: 'u1' } }),
  });
  await expect
    .poll(async () => {
      const usage = await apiCall<Usage>('GET', `${PROJECT}/flags/guarded/usage`);
      return usage.environments.find((e) => e.environmentKey === 'production')?.lastEvaluatedAt;
    })
    .not.toBeNull();

  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/flags/guarded/insights`);
  const production = page.getByRole('figure', { name: /^production: evaluations per hour/ });
  await expect(production.getByRole('row', { name: /^false 1 / })).toBeVisible();
  await expectAccessible(page);
  await page
    .getByRole('navigation', { name: 'Flag sections' })
    .getByRole('link', { name: 'Settings' })
    .click();
  await page.getByRole('button', { name: 'Archive flag' }).click();
  const dialog = page.getByRole('alertdialog', { name: 'Archive guarded?' });
  await dialog.getByRole('button', { name: 'Archive', exact: true }).click();
  await expect(dialog.getByRole('alert')).toContainText('was evaluated within the last');
  await expect(dialog.getByRole('alert')).toContainText('production');
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Archive anyway' }).click();
  await expect(page.getByText('archived', { exact: true })).toBeVisible();

  await page.getByRole('button', { name: 'Restore flag' }).click();
  await expect(page.getByRole('button', { name: 'Archive flag' })).toBeVisible();
  const flag = await apiCall<{ isArchived: boolean }>('GET', `${PROJECT}/flags/guarded`);
  expect(flag.isArchived).toBe(false);

  // The history shows each change, before and after.
  await apiCall('PATCH', `${PROJECT}/flags/guarded`, { name: 'Guarded flag' });
  await page
    .getByRole('navigation', { name: 'Flag sections' })
    .getByRole('link', { name: 'History' })
    .click();
  const rename = page.getByRole('row', { name: /^Name / });
  await expect(rename.getByRole('deletion')).toContainText('Guarded');
  await expect(rename.getByRole('insertion')).toContainText('Guarded flag');
  await expectAccessible(page);
});

test('removal candidates show their reason and are archived together, the guard forced', async ({
  page,
}) => {
  await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'tidy', name: 'Tidy' });
  const { key: sdkKey } = await apiCall<{ key: string }>(
    'POST',
    '/api/v1/orgs/acme/projects/tidy/environments/production/sdk-keys',
    { name: 'tidy-e2e', type: 'ServerSide' },
  );
  for (const key of ['old-a', 'old-b', 'old-c']) {
    await apiCall('POST', '/api/v1/orgs/acme/projects/tidy/flags', { key });
    await fetch(`${server.url}/v1/sdk/evaluate`, {
      method: 'POST',
      headers: { authorization: sdkKey, 'content-type': 'application/json' },
      body: JSON.stringify({ flagKey: key, context: { userId: 'u1' } }),
    });
  }
  // Off everywhere yet still evaluated, and unchanged for the (shortened) dead period.
  await expect
    .poll(
      async () =>
        (
          await apiCall<{ items: unknown[] }>(
            'GET',
            '/api/v1/orgs/acme/projects/tidy/flags/removal-candidates',
          )
        ).items.length,
      { timeout: 15_000 },
    )
    .toBe(3);
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/tidy/removal-candidates`);
  await expect(page.getByRole('link', { name: 'old-c' })).toBeVisible();
  await expect(page.getByRole('row', { name: /old-a/ })).toContainText('Dead');
  await expectAccessible(page);

  await page.getByLabel('Select old-a').check();
  await page.getByLabel('Select old-b').check();
  await page.getByRole('button', { name: 'Archive selected (2)' }).click();
  // They are still evaluated: the guard refuses each, in words, until forced.
  await expect(page.getByRole('alert')).toContainText('"old-a" was evaluated within the last');
  await expect(page.getByRole('alert')).toContainText('"old-b" was evaluated within the last');
  await page.getByRole('button', { name: 'Archive anyway (2)' }).click();
  await expect(page.getByRole('link', { name: 'old-a' })).toBeHidden();
  await expect(page.getByRole('link', { name: 'old-b' })).toBeHidden();
  await expect(page.getByRole('link', { name: 'old-c' })).toBeVisible();
  const archived = await apiCall<{ items: { key: string }[] }>(
    'GET',
    '/api/v1/orgs/acme/projects/tidy/flags?archived=true',
  );
  expect(archived.items.map((f) => f.key).sort()).toEqual(['old-a', 'old-b']);
});
