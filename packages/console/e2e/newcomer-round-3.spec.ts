import type { Page } from '@playwright/test';
import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

/**
 * Issue 43 ("what a newcomer found, round 3"): the console findings, each as a person meets it.
 * A project of its own, whose production requires review; other journeys must not meet it.
 */
const PROJECT = '/api/v1/orgs/acme/projects/newcomer';
const PAGES = '/orgs/acme/projects/newcomer';

async function ensureProject(): Promise<void> {
  const projects = await apiCall<{ items: { key: string }[] }>('GET', '/api/v1/orgs/acme/projects');
  if (!projects.items.some((p) => p.key === 'newcomer'))
    await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'newcomer', name: 'Newcomer' });
}

/** A new Boolean flag (On when no rule matches, off everywhere), made as a script would. */
async function newFlag(key: string): Promise<{ on: string; off: string }> {
  await ensureProject();
  await apiCall('POST', `${PROJECT}/flags`, { key, name: key });
  const flag = await apiCall<{ variations: { id: string; key: string }[] }>(
    'GET',
    `${PROJECT}/flags/${key}`,
  );
  return {
    on: flag.variations.find((v) => v.key === 'true')!.id,
    off: flag.variations.find((v) => v.key === 'false')!.id,
  };
}

function protectProduction(required: boolean): Promise<unknown> {
  return apiCall('PATCH', `${PROJECT}/environments/production`, {
    changeRequests: { required, approvals: 1 },
  });
}

/** Every answer the page received with one of `statuses`, by address. */
function failedAnswers(page: Page, statuses: number[]): string[] {
  const failed: string[] = [];
  page.on('response', (response) => {
    if (statuses.includes(response.status())) failed.push(`${response.status()} ${response.url()}`);
  });
  return failed;
}

test('an applied change request shows what it changed, without a conflict', async ({ page }) => {
  await newFlag('applied-change');
  await protectProduction(true);
  // A service token proposes (machines propose), the Owner approves (people review).
  const { token: robot } = await apiCall<{ token: string }>(
    'POST',
    '/api/v1/orgs/acme/service-tokens',
    { name: `proposer-${Date.now()}`, role: 'Admin' },
  );
  const revision = (
    await apiCall<{ revision: number }>(
      'GET',
      `${PROJECT}/flags/applied-change/environments/production`,
    )
  ).revision;
  const opened = await fetch(`${server.url}${PROJECT}/change-requests`, {
    method: 'POST',
    headers: { authorization: `Bearer ${robot}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      environment: 'production',
      title: 'Turn applied-change on',
      submit: true,
      changes: [
        {
          kind: 'flag',
          flagKey: 'applied-change',
          baseRevision: revision,
          configuration: { enabled: true, defaultVariation: 'true', offVariation: 'false' },
        },
      ],
    }),
  });
  const { number } = (await opened.json()) as { number: number };
  await apiCall('POST', `${PROJECT}/change-requests/${number}/reviews`, { decision: 'approve' });

  await signIn(page);
  await page.goto(`${server.url}${PAGES}/change-requests/${number}`);
  await page.getByRole('button', { name: 'Apply now' }).click();
  await expect(page.getByText('applied', { exact: true }).first()).toBeVisible();
  await page.reload();
  const change = page.getByRole('region', { name: 'Change 1: Flag applied-change' });
  await expect(change.getByRole('table')).toBeVisible();
  await expect(change.getByRole('note')).toHaveCount(0);
  await expect(page.getByText(/Conflict/)).toHaveCount(0);
  const onOrOff = change.getByRole('row', { name: /On or off/ });
  await expect(onOrOff.getByRole('cell')).toHaveText(['Off', 'On']);
  await expect(onOrOff).toContainText('changed');
  await expect(
    page.getByText('Before and after as they were when the request was applied.'),
  ).toBeVisible();
  await expectAccessible(page);
  await protectProduction(false);
});

test('a change request to a Json flag shows its variations by their values', async ({ page }) => {
  await ensureProject();
  await apiCall('POST', `${PROJECT}/flags`, {
    key: 'json-diff',
    type: 'Json',
    variations: [
      { key: 'small', name: 'Small', value: '{"items":3}' },
      { key: 'large', name: 'Large', value: '{"items":30}' },
    ],
  });
  await protectProduction(true);
  const revision = (
    await apiCall<{ revision: number }>('GET', `${PROJECT}/flags/json-diff/environments/production`)
  ).revision;
  const { number } = await apiCall<{ number: number }>('POST', `${PROJECT}/change-requests`, {
    environment: 'production',
    title: 'Serve large checkouts',
    changes: [
      {
        kind: 'flag',
        flagKey: 'json-diff',
        baseRevision: revision,
        configuration: { enabled: true, defaultVariation: 'large', offVariation: 'small' },
      },
    ],
  });
  await protectProduction(false);

  await signIn(page);
  await page.goto(`${server.url}${PAGES}/change-requests/${number}`);
  const change = page.getByRole('region', { name: 'Change 1: Flag json-diff' });
  const served = change.getByRole('row', { name: /When no rule matches/ });
  await expect(served.getByRole('cell')).toHaveText(['Small: {"items":3}', 'Large: {"items":30}']);
  await expect(change.getByRole('row', { name: /While off, serve/ }).getByRole('cell')).toHaveText([
    'Small: {"items":3}',
    'Small: {"items":3}',
  ]);
});

test('the release-plan editor of a new Boolean flag says what to do first, in the console’s words', async ({
  page,
}) => {
  const { off } = await newFlag('first-release');
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags/first-release/release-plan?env=development`);
  await expect(page.getByRole('heading', { name: 'Release plan', level: 2 })).toBeVisible();
  const editor = page.getByRole('form', { name: 'New release plan in development' });
  // A new Boolean flag serves On when no rule matches: releasing On needs Off there first.
  await expect(editor.getByLabel('Target variation')).toHaveValue('true');
  const note = editor.getByRole('note');
  await expect(note).toContainText('When no rule matches, this flag serves On already');
  await expect(note).toContainText('First set “When no rule matches, serve”');
  await expect(note.getByRole('link', { name: 'Targeting' })).toBeVisible();
  await expect(editor.getByRole('button', { name: 'Start release plan' })).toBeDisabled();
  await expect(editor).not.toContainText('fallthrough');
  await expectAccessible(page);

  // Done as the note says: the explanation follows the chosen target.
  await apiCall('PATCH', `${PROJECT}/flags/first-release/environments/development`, {
    strategy: 'SingleVariation',
    defaultVariationId: off,
  });
  await page.reload();
  await expect(note).toContainText('a growing share of the people no rule matches get On');
  await expect(note).toContainText('the others keep getting Off');
  await editor.getByLabel('Target variation').selectOption('false');
  await expect(note).toContainText('this flag serves Off already');
  await expect(editor).not.toContainText('fallthrough');
});

test('a read-only switch that is On looks On in a protected environment', async ({ page }) => {
  await newFlag('protected-on');
  await apiCall('POST', `${PROJECT}/flags/protected-on/environments/production/toggle`, {
    enabled: true,
  });
  await protectProduction(true);
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags/protected-on/targeting?env=production`);
  const production = page.getByRole('switch', { name: 'On in Production', exact: true });
  await expect(production).toBeChecked();
  await expect(production).toBeDisabled();
  // Drawn in the switch's colour (green), not the grey of Radix Themes' disabled switches.
  const [red, green, blue] = await production.evaluate((element) =>
    (getComputedStyle(element, '::before').backgroundColor.match(/[\d.]+/g) ?? []).map(Number),
  );
  expect(green).toBeGreaterThan((red ?? 0) + 40);
  expect(green).toBeGreaterThan((blue ?? 0) + 20);
  await protectProduction(false);
});

test('signed out, no page asks the API for who is signed in', async ({ page }) => {
  const failed = failedAnswers(page, [401]);
  await page.goto(`${server.url}/`);
  await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  await page.goto(`${server.url}/invitations/accept#token=not-a-real-one`);
  await expect(page.getByRole('heading', { name: 'Accept an invitation' })).toBeVisible();
  await page.goto(`${server.url}/forgot-password`);
  await expect(page.getByRole('button').first()).toBeVisible();
  expect(failed).toEqual([]);
});

test('the sign-in and invitation pages start at the top, without a band above them', async ({
  page,
}) => {
  for (const path of ['/sign-in', '/invitations/accept#token=not-a-real-one']) {
    await page.goto(`${server.url}${path}`);
    await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
    // What is drawn at the very top is the page (the theme's root), not the bare document.
    const top = await page.evaluate(() => {
      const element = document.elementFromPoint(5, 5);
      return element?.closest('.radix-themes') !== null;
    });
    expect(top).toBe(true);
  }
});

test('addresses: /release-plan opens the release plan, a mistyped one says so', async ({
  page,
}) => {
  await newFlag('addressed');
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags/addressed/release-plan`);
  await expect(page.getByRole('heading', { name: 'Release plan', level: 2 })).toBeVisible();
  await expect(
    page
      .getByRole('navigation', { name: 'Flag sections' })
      .getByRole('link', { name: 'Release plan' }),
  ).toHaveAttribute('aria-current', 'page');

  await page.goto(`${server.url}${PAGES}/flags/addressed/targetting`);
  await expect(page.getByRole('alert')).toContainText('A flag has no section “targetting”');

  await page.goto(`${server.url}${PAGES}/flagz`);
  await expect(page.getByRole('heading', { name: 'Page not found' })).toBeVisible();
  await expect(page).toHaveURL(/\/flagz$/);
  await expect(page.getByRole('link', { name: 'your flags' })).toBeVisible();
});

test('a new project offers New flag rather than “No flags match.”', async ({ page }) => {
  const key = `empty-${Date.now()}`;
  await apiCall('POST', '/api/v1/orgs/acme/projects', { key, name: 'Empty project' });
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/${key}/flags`);
  await expect(page.getByText('This project has no flags yet.')).toBeVisible();
  await expect(page.getByText('No flags match.')).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'New flag' })).toBeVisible();
});

test('the segment dialog makes the key from the name', async ({ page }) => {
  await ensureProject();
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/segments`);
  await page.getByRole('button', { name: 'New segment' }).click();
  const dialog = page.getByRole('dialog', { name: 'New segment' });
  await dialog.getByLabel('Name').fill('Beta testers');
  await expect(dialog.getByLabel('Key')).toHaveValue('beta-testers');
  // A key of one's own stays.
  await dialog.getByLabel('Key').fill('beta');
  await dialog.getByLabel('Name').fill('Beta testers, Europe');
  await expect(dialog.getByLabel('Key')).toHaveValue('beta');
});

test('a rule’s empty rollout reads as everyone, and the playground shows the value', async ({
  page,
}) => {
  await newFlag('played');
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags/played/targeting?env=development`);
  await page.getByRole('button', { name: 'Add rule' }).click();
  const dialog = page.getByRole('dialog', { name: 'New rule in Development' });
  await expect(dialog.getByLabel('Rollout percentage')).toHaveValue('');
  await expect(dialog.getByRole('slider', { name: 'Rollout share' })).toHaveAttribute(
    'aria-valuenow',
    '100',
  );
  await expect(dialog.getByLabel('Rollout percentage')).toHaveAttribute('placeholder', '100 (all)');
  await page.keyboard.press('Escape');

  await page.getByRole('button', { name: 'Evaluate in development' }).click();
  const result = page.getByRole('definition');
  const explanation = page.locator('dl[aria-label="Evaluation result"]');
  await expect(explanation).toContainText('Value');
  await expect(explanation).toContainText('false');
  await expect(result.first()).toBeVisible();
  await page.getByLabel('Attributes (JSON)').fill('{"country": ');
  await page.getByRole('button', { name: 'Evaluate in development' }).click();
  await expect(page.getByLabel('Attributes (JSON)')).toHaveAttribute('aria-invalid', 'true');
  await expect(explanation).toHaveCount(0);
});

test('webhook event groups name SDK keys, API tokens and SSO connections properly; a delivery names its type once', async ({
  page,
}) => {
  const webhook = await apiCall<{ id: string }>('POST', '/api/v1/orgs/acme/webhooks', {
    name: `groups-${Date.now()}`,
    url: 'http://127.0.0.1:9/hook',
  });
  await apiCall('POST', `/api/v1/orgs/acme/webhooks/${webhook.id}/test`);
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/webhooks/${webhook.id}`);
  const delivery = page.getByRole('region', { name: 'Deliveries' }).getByRole('listitem').first();
  await expect(delivery).toBeVisible();
  const summary = await delivery.locator('p').first().innerText();
  expect(summary.match(/flag\.toggled/g)).toHaveLength(1);

  await page.getByRole('button', { name: 'Edit webhook' }).click();
  const dialog = page.getByRole('dialog');
  for (const group of ['SDK key events', 'API token events', 'SSO connection events'])
    await expect(dialog.getByRole('group', { name: group })).toBeVisible();
  await expect(dialog.getByLabel('Every SDK key event')).toBeVisible();
  await expect(dialog.getByText(/Sdk key|Api token|Sso connection/)).toHaveCount(0);
});

test('names, not ids: a segment’s rules, a release plan’s split and steps, an emergency off', async ({
  page,
}) => {
  const { on, off } = await newFlag('named-things');
  const segment = await apiCall<{ id: string }>('POST', `${PROJECT}/segments`, {
    key: `named-${Date.now()}`,
    name: 'Named testers',
    conditions: [{ attribute: 'plan', operator: 'In', values: ['beta'] }],
  });
  await apiCall('POST', `${PROJECT}/flags/named-things/environments/development/rules`, {
    description: 'Beta testers first',
    variationId: on,
    userSegmentId: segment.id,
  });
  await apiCall('PATCH', `${PROJECT}/flags/named-things/environments/development`, {
    strategy: 'SingleVariation',
    defaultVariationId: off,
  });
  await apiCall('PUT', `${PROJECT}/flags/named-things/environments/development/release-plan`, {
    variation: 'true',
    steps: [
      { percentage: 50, after: 'PT0S' },
      { percentage: 100, after: 'P1D' },
    ],
  });
  await apiCall('POST', `${PROJECT}/flags/named-things/environments/production/toggle`, {
    enabled: true,
  });
  await protectProduction(true);
  await apiCall('POST', `${PROJECT}/flags/named-things/environments/production/toggle`, {
    enabled: false,
  });
  await protectProduction(false);

  await signIn(page);
  const segments = await apiCall<{ items: { id: string; key: string }[] }>(
    'GET',
    `${PROJECT}/segments?limit=200`,
  );
  const segmentKey = segments.items.find((s) => s.id === segment.id)!.key;
  await page.goto(`${server.url}${PAGES}/segments/${segmentKey}`);
  const usage = page.getByRole('region', { name: 'Where this segment is used' });
  await expect(usage.getByRole('listitem')).toContainText('rule 1: Beta testers first');
  await expect(usage).not.toContainText(/[0-9a-f]{8}-[0-9a-f]{4}-/);

  await page.goto(`${server.url}${PAGES}/flags/named-things/history`);
  const history = page.getByRole('region', { name: 'History' });
  await expect(history).toContainText('true 50%, false 50%');
  await expect(history).not.toContainText('variationId');
  const advanced = history.getByRole('listitem').filter({ hasText: 'at step 1 of 2' });
  await expect(advanced.getByRole('row', { name: /^Step/ }).getByRole('cell')).toHaveText([
    '—',
    '1',
  ]);
  await expect(history.getByText('Emergency off: review bypassed')).toBeVisible();
  await expectAccessible(page);
});

test('the guard says how sure it is and how much worse, over the readings’ own time', async ({
  page,
}) => {
  const { off } = await newFlag('guard-words');
  await apiCall('PATCH', `${PROJECT}/flags/guard-words/environments/development`, {
    strategy: 'SingleVariation',
    defaultVariationId: off,
  });
  await apiCall('POST', `${PROJECT}/flags/guard-words/environments/development/toggle`, {
    enabled: true,
  });
  await apiCall('PUT', `${PROJECT}/flags/guard-words/environments/development/release-plan`, {
    variation: 'true',
    steps: [
      { percentage: 50, after: 'PT0S' },
      { percentage: 100, after: 'P1D' },
    ],
    guard: {
      metric: 'guard-words-error',
      kind: 'rate',
      direction: 'lower_is_better',
      minimumUsers: 100,
      confidence: 0.95,
      action: 'rollback',
    },
  });
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags/guard-words/release?env=development`);
  const state = page.getByRole('region', { name: 'Release plan in development' });
  await expect(state.getByRole('heading', { name: 'Guard: guard-words-error' })).toBeVisible();

  const { key: sdkKey } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/development/sdk-keys`,
    { name: `guard-words-${Date.now()}`, type: 'ServerSide' },
  );
  const events: { type: 'Custom'; flagKey: string; userId: string }[] = [];
  for (let user = 0; user < 600; user++) {
    const userId = `words-${user}`;
    const answer = await fetch(`${server.url}/v1/sdk/evaluate`, {
      method: 'POST',
      headers: { authorization: sdkKey, 'content-type': 'application/json' },
      body: JSON.stringify({ flagKey: 'guard-words', context: { userId } }),
    });
    const { value } = (await answer.json()) as { value: boolean };
    if (value ? user % 5 < 3 : user % 20 === 0)
      events.push({ type: 'Custom', flagKey: 'guard-words-error', userId });
  }
  await fetch(`${server.url}/v1/sdk/events`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  });
  await expect(state.getByText('Rolled back', { exact: true }).first()).toBeVisible({
    timeout: 20_000,
  });
  await expect(state).toContainText(/On does [\d.]+ percentage points worse/);
  await expect(state).toContainText(/sure it is worse/);
  await expect(state).toContainText('it stops the release at 95%');
  await expect(state.getByRole('figure')).toContainText(/reading/);
  await expect(state.getByRole('figure')).not.toContainText(/years/);
});

test('requiring more approvals than there are reviewers warns before saving', async ({ page }) => {
  await ensureProject();
  await protectProduction(false);
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/environments`);
  await page.getByRole('button', { name: 'Edit Production' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit Production' });
  await dialog
    .getByLabel(
      'Require a reviewed change request for every change to what this environment serves',
    )
    .check();
  // Nobody approves their own request: five approvals need six people who may review.
  await dialog.getByLabel('Approvals needed').selectOption('5');
  await expect(dialog.getByRole('status')).toContainText('could never be approved');
  await expectAccessible(page);
  await page.keyboard.press('Escape');
});

test('a new flag’s hourly chart starts when the flag was created', async ({ page }) => {
  await newFlag('young-chart');
  const { key: sdkKey } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/development/sdk-keys`,
    { name: `young-chart-${Date.now()}`, type: 'ServerSide' },
  );
  await fetch(`${server.url}/v1/sdk/evaluate`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ flagKey: 'young-chart', context: { userId: 'u1' } }),
  });
  await signIn(page);
  await page.goto(`${server.url}${PAGES}/flags/young-chart/insights`);
  await expect(page.getByRole('figure').first()).toContainText(
    'evaluations per hour since the flag was created',
    { timeout: 20_000 },
  );
});
