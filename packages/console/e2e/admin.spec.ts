import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

// A project of its own, so that the environments added here stay out of the other journeys.
const PROJECT = '/api/v1/orgs/acme/projects/ops';
const PAGES = `/orgs/acme/projects/ops`;

test.beforeAll(async () => {
  // Once: a retried file (a new worker after a failure) finds it there.
  const projects = await apiCall<{ items: { key: string }[] }>('GET', '/api/v1/orgs/acme/projects');
  if (!projects.items.some((project) => project.key === 'ops'))
    await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'ops', name: 'Operations' });
});

test('environments: create, order, mark critical; a toggle there asks first', async ({ page }) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'maintenance', name: 'Maintenance' });
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags`);
  await page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: 'Environments' })
    .click();
  await expect(page.getByRole('heading', { name: 'Environments', level: 1 })).toBeVisible();
  // Production is critical from project creation; development is not.
  await expect(page.getByRole('row', { name: /Production/ })).toContainText('Critical');
  await expect(page.getByRole('row', { name: /Development/ })).not.toContainText('Critical');
  await expectAccessible(page);

  for (const [key, name] of [
    ['staging', 'Staging'],
    ['qa', 'QA'],
  ] as const) {
    await page.getByRole('button', { name: 'New environment' }).click();
    const dialog = page.getByRole('dialog', { name: 'New environment' });
    await dialog.getByLabel('Key').fill(key);
    await dialog.getByLabel('Name').fill(name);
    await dialog.getByLabel('Colour').fill('#a855f7');
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Create environment' }).click();
    await expect(page.getByRole('row', { name: new RegExp(name) })).toBeVisible();
  }

  // A mistake is shown next to its field and what was typed stays.
  await page.getByRole('button', { name: 'Edit Staging' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit Staging' });
  await edit.getByLabel('Colour').fill('purple');
  await edit.getByRole('button', { name: 'Save environment' }).click();
  await expect(edit.getByText('must be a hex color such as #1f6feb or #abc')).toBeVisible();
  await expect(edit.getByLabel('Colour')).toHaveValue('purple');
  await edit.getByLabel('Colour').fill('#7c3aed');
  await edit.getByLabel('Critical: turning flags on or off here asks for confirmation').check();
  await edit.getByRole('button', { name: 'Save environment' }).click();
  await expect(edit).toBeHidden();
  await expect(page.getByRole('row', { name: /Staging/ })).toContainText('Critical');

  // Keyboard-usable order: Staging moves above Production.
  const names = () => page.getByRole('rowheader').allTextContents();
  expect(await names()).toEqual(['Development', 'Production', 'Staging', 'QA']);
  await page.getByRole('button', { name: 'Move Staging up' }).focus();
  await page.keyboard.press('Enter');
  await expect.poll(names).toEqual(['Development', 'Staging', 'Production', 'QA']);

  await page.getByRole('button', { name: 'Delete QA' }).click();
  await page
    .getByRole('alertdialog', { name: 'Delete QA?' })
    .getByRole('button', { name: 'Delete QA' })
    .click();
  await expect(page.getByRole('row', { name: /QA/ })).toHaveCount(0);

  const staging = await apiCall<{ critical: boolean; sortOrder: number; color: string }>(
    'GET',
    `${PROJECT}/environments/staging`,
  );
  expect(staging).toMatchObject({ critical: true, sortOrder: 1, color: '#7c3aed' });

  await page.goto(`${server.url}${PAGES}/flags/maintenance`);
  const switchInStaging = page.getByRole('switch', { name: 'On in Staging' });
  await switchInStaging.click();
  const confirm = page.getByRole('alertdialog', { name: 'Turn maintenance on in Staging?' });
  await expect(confirm).toBeVisible();
  await confirm.getByRole('button', { name: 'Turn on in Staging' }).click();
  await expect(switchInStaging).toBeChecked();
  // Development is not critical: no question asked.
  await page.getByRole('switch', { name: 'On in Development' }).click();
  await expect(page.getByRole('switch', { name: 'On in Development' })).toBeChecked();
  await expect(page.getByRole('alertdialog')).toHaveCount(0);
});

test('an SDK key: created, copied from the page, evaluates, then revoked', async ({
  page,
  context,
}) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  await apiCall('POST', `${PROJECT}/flags`, { key: 'new-search', name: 'New search' });
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags`);
  await page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: 'SDK keys' })
    .click();
  await expect(page.getByRole('heading', { name: 'SDK keys in Development' })).toBeVisible();
  await expectAccessible(page);

  await page.getByRole('button', { name: 'New SDK key' }).click();
  const dialog = page.getByRole('dialog', { name: 'New SDK key in Development' });
  await dialog.getByLabel('Name').fill('checkout-service');
  await dialog.getByLabel(/^Server/).check();
  await dialog.getByRole('button', { name: 'Create key' }).click();
  const shown = dialog.getByLabel('SDK key checkout-service');
  await expect(shown).toHaveValue(/^vxl_srv_/);
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Copy' }).click();
  await expect(dialog.getByRole('button', { name: 'Copied' })).toBeVisible();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await shown.inputValue());

  const evaluate = () =>
    fetch(`${server.url}/v1/sdk/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${copied}`, 'content-type': 'application/json' },
      body: JSON.stringify({ flagKey: 'new-search', context: { userId: 'u-1' } }),
    });
  const answer = await evaluate();
  expect(answer.status).toBe(200);
  expect(await answer.json()).toMatchObject({
    key: 'new-search',
    value: false,
    reason: 'DISABLED',
  });

  await dialog.getByRole('button', { name: 'Done' }).click();
  const row = page.getByRole('row', { name: /checkout-service/ });
  await expect(row).toContainText(copied.slice(-4));
  // The use is written with the next usage flush (1 s here); the page then shows its time
  // under "Last used", beside the creation time, instead of "Never".
  await expect(async () => {
    await page.reload();
    await expect(row.locator('time')).toHaveCount(2, { timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
  await expect(row).not.toContainText('Never');
  await row.getByRole('button', { name: 'Revoke checkout-service' }).click();
  await page
    .getByRole('alertdialog', { name: 'Revoke checkout-service?' })
    .getByRole('button', { name: 'Revoke checkout-service' })
    .click();
  await expect(row).toHaveCount(0);
  expect((await evaluate()).status).toBe(401);
});

test('segments: the rule editor’s conditions, where each is used, refusal in words', async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags`);
  await page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: 'Segments' })
    .click();
  await expect(page.getByRole('heading', { name: 'Segments', level: 1 })).toBeVisible();
  await expectAccessible(page);

  await page.getByRole('button', { name: 'New segment' }).click();
  const dialog = page.getByRole('dialog', { name: 'New segment' });
  const condition = (n: number) =>
    dialog.getByRole('group', { name: `Condition ${n}`, exact: true });
  await dialog.getByLabel('Key').fill('beta testers');
  await dialog.getByLabel('Name').fill('Beta testers');
  await condition(1).getByLabel('Attribute').fill('email');
  await condition(1).getByLabel('Operator').selectOption('EndsWith');
  await condition(1).getByLabel('Values').fill('@acme.test');
  await dialog.getByRole('button', { name: 'Add condition' }).click();
  await condition(2).getByLabel('Attribute').fill('plan');
  await condition(2).getByLabel('Operator').selectOption('In');
  await condition(2).getByLabel('Values').fill('pro\nteam');
  await dialog.getByLabel('The segment matches when').selectOption('Or');
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Create segment' }).click();
  // The key's mistake is shown at the key; the conditions typed stay.
  await expect(dialog.getByLabel('Key')).toHaveAccessibleDescription(/must/);
  await expect(condition(2).getByLabel('Values')).toHaveValue('pro\nteam');
  await dialog.getByLabel('Key').fill('beta-testers');
  await dialog.getByRole('button', { name: 'Create segment' }).click();
  await expect(dialog).toBeHidden();

  await page.getByRole('link', { name: 'Beta testers' }).click();
  await expect(page.getByRole('heading', { name: 'Beta testers', level: 1 })).toBeVisible();
  await expect(
    page.getByText('email ends with @acme.test or plan is one of pro or team'),
  ).toBeVisible();
  const usage = page.getByRole('region', { name: 'Where this segment is used' });
  await expect(usage).toContainText('No targeting rule refers to it.');
  await expectAccessible(page);

  const segment = await apiCall<{ id: string }>('GET', `${PROJECT}/segments/beta-testers`);
  await apiCall('POST', `${PROJECT}/flags`, { key: 'beta-banner', name: 'Beta banner' });
  const flag = await apiCall<{ variations: { id: string }[] }>(
    'GET',
    `${PROJECT}/flags/beta-banner`,
  );
  await apiCall('POST', `${PROJECT}/flags/beta-banner/environments/production/rules`, {
    variationId: flag.variations[0]!.id,
    userSegmentId: segment.id,
  });
  await expect(usage.getByRole('link', { name: 'Beta banner' })).toBeVisible();
  await expect(usage).toContainText('in Production');

  await page.getByRole('button', { name: 'Delete segment' }).click();
  await page
    .getByRole('alertdialog', { name: 'Delete Beta testers?' })
    .getByRole('button', { name: 'Delete Beta testers' })
    .click();
  await expect(page.getByRole('alert')).toContainText(
    'Not deleted: Segment "beta-testers" is used by 1 rule(s): flag "beta-banner" in "production"',
  );

  await page.getByRole('button', { name: 'Edit segment' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit Beta testers' });
  await expect(
    edit.getByRole('group', { name: 'Condition 2', exact: true }).getByLabel('Values'),
  ).toHaveValue('pro\nteam');
  await edit.getByLabel('Name').fill('Early adopters');
  await edit.getByRole('button', { name: 'Remove condition 2' }).click();
  await edit.getByRole('button', { name: 'Save segment' }).click();
  await expect(page.getByRole('heading', { name: 'Early adopters', level: 1 })).toBeVisible();
  await expect(page.getByText('email ends with @acme.test', { exact: true })).toBeVisible();
});

test('the audit log: filtered by resource, actor and time, with before/after', async ({ page }) => {
  await apiCall('POST', `${PROJECT}/segments`, { key: 'audited', name: 'Before' });
  await apiCall('PATCH', `${PROJECT}/segments/audited`, { name: 'After' });
  await signIn(page);
  await page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: 'Audit log' })
    .click();
  await expect(page.getByRole('heading', { name: 'Audit log', level: 1 })).toBeVisible();
  await expectAccessible(page);

  await page.getByLabel('Resource', { exact: true }).selectOption({ label: 'Segments' });
  const entry = page.getByRole('listitem').filter({ hasText: 'Segment "audited" updated' });
  await expect(entry).toBeVisible();
  await expect(entry.getByRole('row', { name: 'Name' })).toHaveText(/Name\s*Before\s*After/);
  await expect(page.getByText('Environment "qa" deleted')).toHaveCount(0);

  await page.getByLabel('Actor').selectOption({ label: 'e2e@example.com' });
  await expect(entry).toBeVisible();

  await page.getByLabel('From', { exact: true }).fill('2999-01-01T00:00');
  await expect(page.getByText('No entry matches.')).toBeVisible();
  await page.getByLabel('To', { exact: true }).fill('2998-01-01T00:00');
  await expect(page.getByLabel('To', { exact: true })).toHaveAccessibleDescription(
    'must not be before from',
  );
  await page.getByLabel('From', { exact: true }).fill('');
  await page.getByLabel('To', { exact: true }).fill('');
  await expect(entry).toBeVisible();
  await expectAccessible(page);
});

test('a Viewer sees the administration pages without a button it cannot use', async ({ page }) => {
  await apiCall('POST', `${PROJECT}/segments`, { key: 'viewers-look', name: 'Viewers look' });
  const sdkKey = await apiCall<{ id: string }>(
    'POST',
    `${PROJECT}/environments/development/sdk-keys`,
    { name: 'read-only', type: 'ClientSide' },
  );
  expect(sdkKey.id).toBeTruthy();
  const { token } = await apiCall<{ token: string }>('POST', '/api/v1/orgs/acme/service-tokens', {
    name: 'auditor',
    role: 'Viewer',
  });
  await signIn(page, token);
  const nav = page.getByRole('navigation', { name: 'Sections' });
  await expect(nav.getByRole('link', { name: 'Environments' })).toBeVisible();
  await expect(nav.getByRole('link', { name: 'Webhooks' })).toHaveCount(0);
  await expect(nav.getByRole('link', { name: 'Audit log' })).toHaveCount(0);

  await page.goto(`${server.url}${PAGES}/environments`);
  await expect(page.getByRole('row', { name: /Production/ })).toBeVisible();
  await expect(page.getByRole('main').getByRole('button')).toHaveCount(0);

  await page.goto(`${server.url}${PAGES}/segments`);
  await expect(page.getByRole('link', { name: 'Viewers look' })).toBeVisible();
  await expect(page.getByRole('main').getByRole('button')).toHaveCount(0);
  await page.getByRole('link', { name: 'Viewers look' }).click();
  await expect(page.getByRole('heading', { name: 'Viewers look', level: 1 })).toBeVisible();
  await expect(page.getByRole('main').getByRole('button')).toHaveCount(0);

  await page.goto(`${server.url}${PAGES}/sdk-keys`);
  await expect(page.getByRole('row', { name: /read-only/ })).toBeVisible();
  await expect(page.getByRole('main').getByRole('button')).toHaveCount(0);

  await page.goto(`${server.url}${PAGES}/webhooks`);
  await expect(page.getByRole('alert')).toContainText('Admin');
  await expect(page.getByRole('main').getByRole('button')).toHaveCount(0);
});

test('the command bar offers every page the person may use, and segments by name', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/segments`, { key: 'bar-target', name: 'Command target' });
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags`);
  await expect(page.getByRole('heading', { name: 'Flags', level: 1 })).toBeVisible();
  const bar = page.getByRole('combobox', { name: 'Go to' });
  const goTo = async (text: string) => {
    // A key pressed while the page is still rendering is lost, as a person's would be: press again.
    await expect(async () => {
      if (!(await bar.isVisible())) await page.keyboard.press('Control+k');
      await expect(bar).toBeFocused({ timeout: 1_000 });
    }).toPass();
    await page.keyboard.type(text);
  };

  await goTo('webh');
  await expect(page.getByRole('option', { name: 'Webhooks' })).toBeVisible();
  await expectAccessible(page);
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Webhooks', level: 1 })).toBeVisible();

  await goTo('command ta');
  await expect(page.getByRole('option', { name: /Command target/ })).toBeVisible();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Command target', level: 1 })).toBeVisible();

  // An Owner is offered Members; a Viewer, whose nav has no Members link, is not.
  await goTo('mem');
  await expect(page.getByRole('option', { name: 'Members' })).toBeVisible();
  await page.keyboard.press('Escape');

  const { token } = await apiCall<{ token: string }>('POST', '/api/v1/orgs/acme/service-tokens', {
    name: 'bar-viewer',
    role: 'Viewer',
  });
  // The organization (with its `_actions`) has been read before the bar is searched.
  const organizationRead = page.waitForResponse(
    (response) => new URL(response.url()).pathname === '/api/v1/orgs/acme' && response.ok(),
  );
  await signIn(page, token);
  await organizationRead;
  await goTo('e');
  await expect(page.getByRole('option', { name: 'Environments' })).toBeVisible();
  await expect(page.getByRole('option', { name: 'Members' })).toHaveCount(0);
  await expect(page.getByRole('option', { name: 'Settings' })).toHaveCount(0);
  await expect(page.getByRole('option', { name: 'Webhooks' })).toHaveCount(0);
});

test('relay keys: create one for a project environment, shown once; revoke it', async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags`);
  await page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: 'Relay keys' })
    .click();
  await expect(page.getByRole('heading', { name: 'Relay keys', level: 1 })).toBeVisible();
  await expectAccessible(page);

  await page.getByRole('button', { name: 'New relay key' }).click();
  const dialog = page.getByRole('dialog', { name: 'New relay key' });
  await dialog.getByLabel('Name').fill('eu-west');
  await dialog.getByLabel('Only the project ops').check();
  await dialog.getByLabel('Production').check();
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Create key' }).click();
  const shown = dialog.getByLabel('Relay key eu-west');
  await expect(shown).toHaveValue(/^vxr_/);
  const key = await shown.inputValue();
  await expectAccessible(page);

  const follow = async () => {
    const abort = new AbortController();
    const response = await fetch(`${server.url}/v1/relay/feed`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ known: {} }),
      signal: abort.signal,
    });
    abort.abort();
    return response.status;
  };
  expect(await follow()).toBe(200);

  await dialog.getByRole('button', { name: 'Done' }).click();
  const row = page.getByRole('row', { name: /eu-west/ });
  await expect(row).toContainText('ops: production');
  await expect(row).toContainText(key.slice(-4));
  await row.getByRole('button', { name: 'Revoke relay key eu-west' }).click();
  await page
    .getByRole('alertdialog', { name: 'Revoke relay key eu-west?' })
    .getByRole('button', { name: 'Revoke eu-west' })
    .click();
  await expect(row).toHaveCount(0);
  expect(await follow()).toBe(401);
});
