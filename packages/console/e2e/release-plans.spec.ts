import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';
const CONSOLE = '/orgs/acme/projects/web';
const IMAGES = fileURLToPath(new URL('../../../docs/images/console/', import.meta.url));

// A fixed zone, so that the page's "Times in …" can be read back.
test.use({ timezoneId: 'Europe/Berlin' });

/** A Boolean flag, on in development, whose default serve is Off: the release moves it to On. */
async function flagOffByDefault(key: string): Promise<void> {
  const name = key.charAt(0).toUpperCase() + key.slice(1).replaceAll('-', ' ');
  await apiCall('POST', `${PROJECT}/flags`, { key, name });
  const flag = await apiCall<{ variations: { id: string; key: string }[] }>(
    'GET',
    `${PROJECT}/flags/${key}`,
  );
  const off = flag.variations.find((v) => v.key === 'false')!.id;
  await apiCall('PATCH', `${PROJECT}/flags/${key}/environments/development`, {
    strategy: 'SingleVariation',
    defaultVariationId: off,
  });
  await apiCall('POST', `${PROJECT}/flags/${key}/environments/development/toggle`, {
    enabled: true,
  });
}

/** A development SDK key, made through the API as a script would. */
async function developmentSdkKey(): Promise<string> {
  const { key } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/development/sdk-keys`,
    { name: `release-plans-${Date.now()}`, type: 'ServerSide' },
  );
  return key;
}

/** Fills the editor's steps with `steps` (percentage, seconds to wait), removing the others. */
async function fillSteps(page: Page, steps: [string, string][]): Promise<void> {
  const editor = page.getByRole('form', { name: 'New release plan in development' });
  while ((await editor.getByRole('group', { name: /^Step \d+$/ }).count()) > steps.length)
    await editor
      .getByRole('button', { name: /^Remove step \d+$/ })
      .last()
      .click();
  for (const [index, [percentage, seconds]] of steps.entries()) {
    const step = editor.getByRole('group', { name: `Step ${index + 1}`, exact: true });
    await step.getByLabel('Percentage').fill(percentage);
    await step.getByLabel(/^Wait/).fill(seconds);
    await step.getByLabel('Unit').selectOption('seconds');
  }
}

test('a release plan is created in the console, and its step advances on time', async ({
  page,
}) => {
  await flagOffByDefault('planned-checkout');
  await signIn(page);
  await page.goto(`${server.url}${CONSOLE}/flags/planned-checkout/release?env=development`);
  await expect(page.getByRole('heading', { name: 'Release plan', level: 2 })).toBeVisible();
  const editor = page.getByRole('form', { name: 'New release plan in development' });
  await editor.getByLabel('Target variation').selectOption('true');
  await expect(editor).toContainText('the others keep getting Off');

  // Not rising: the API names the step, nothing typed is lost.
  await fillSteps(page, [
    ['50', '0'],
    ['40', '2'],
  ]);
  await editor.getByRole('button', { name: 'Start release plan' }).click();
  const second = editor.getByRole('group', { name: 'Step 2', exact: true });
  await expect(second.getByText(/must be above the previous step/)).toBeVisible();
  await expect(second.getByLabel('Percentage')).toHaveValue('40');

  await fillSteps(page, [
    ['50', '0'],
    ['100', '2'],
  ]);
  // The timeline says when each step would start, in the viewer's zone, named.
  await expect(editor.getByText('Times in Europe/Berlin')).toBeVisible();
  await expect(
    editor.getByRole('list', { name: 'Timeline if started now' }).getByRole('listitem'),
  ).toHaveCount(2);
  await expectAccessible(page);
  await editor.getByRole('button', { name: 'Start release plan' }).click();

  const state = page.getByRole('region', { name: 'Release plan in development' });
  await expect(state.getByText('Step 1 of 2: 50% get On')).toBeVisible();
  await expect(state.getByText('Active')).toBeVisible();
  await expectAccessible(page);

  // Two seconds later (within the contract's 5 s), the last step: the page follows by itself.
  await expect(state.getByText('Step 2 of 2: 100% get On')).toBeVisible({ timeout: 15_000 });
  await expect(state.getByText('Completed')).toBeVisible();
  const sdkKey = await developmentSdkKey();
  const served = await fetch(`${server.url}/v1/sdk/evaluate`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ flagKey: 'planned-checkout', context: { userId: 'someone' } }),
  });
  expect(((await served.json()) as { value: unknown }).value).toBe(true);
});

test('Pause, Resume and Roll back from the console; the reason is shown', async ({ page }) => {
  await flagOffByDefault('slow-rollout');
  await apiCall('PUT', `${PROJECT}/flags/slow-rollout/environments/development/release-plan`, {
    variation: 'true',
    steps: [
      { percentage: 10, after: 'PT0S' },
      { percentage: 100, after: 'P1D' },
    ],
  });
  await signIn(page);
  await page.goto(`${server.url}${CONSOLE}/flags/slow-rollout/release?env=development`);
  const state = page.getByRole('region', { name: 'Release plan in development' });
  await expect(state.getByText('Step 1 of 2: 10% get On')).toBeVisible();
  await state.getByRole('button', { name: 'Pause' }).click();
  await expect(state.getByText('Paused', { exact: true })).toBeVisible();
  await expect(state.getByRole('status')).toContainText('Paused: paused by e2e@example.com');
  await expect(state.getByText('waits for Resume')).toBeVisible();
  await state.getByRole('button', { name: 'Resume' }).click();
  await expect(state.getByText('Active')).toBeVisible();

  await state.getByRole('button', { name: 'Roll back' }).click();
  const confirm = page.getByRole('alertdialog', { name: /Roll back the release of On/ });
  await expectAccessible(page);
  await confirm.getByRole('button', { name: 'Roll back' }).click();
  await expect(state.getByText('Rolled back', { exact: true }).first()).toBeVisible();
  // The reason comes from the flag's history: who rolled it back.
  await expect(state.getByRole('status')).toContainText(
    'Rolled back: rolled back by e2e@example.com',
  );
  await expectAccessible(page);
  // The default serve is what it was: Off for everyone.
  const configuration = await apiCall<{ strategy: string }>(
    'GET',
    `${PROJECT}/flags/slow-rollout/environments/development`,
  );
  expect(configuration.strategy).toBe('SingleVariation');
});

/**
 * Users simulated through the evaluation API (each user evaluated once, then their metric
 * events sent): the target variation fails far more often, so the guard's own test stops the
 * release and rolls it back, and the console shows why.
 */
async function regression(flagKey: string, users: number): Promise<void> {
  const sdkKey = await developmentSdkKey();
  const events: { type: 'Custom'; flagKey: string; userId: string }[] = [];
  for (let user = 0; user < users; user++) {
    const userId = `user-${user}`;
    const response = await fetch(`${server.url}/v1/sdk/evaluate`, {
      method: 'POST',
      headers: { authorization: sdkKey, 'content-type': 'application/json' },
      body: JSON.stringify({ flagKey, context: { userId } }),
    });
    const { value } = (await response.json()) as { value: boolean };
    // Deterministic: 3 in 5 of the target's users fail, 1 in 20 of the rest.
    if (value ? user % 5 < 3 : user % 20 === 0)
      events.push({ type: 'Custom', flagKey: 'checkout-error', userId });
  }
  const sent = await fetch(`${server.url}/v1/sdk/events`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  });
  expect(sent.status).toBe(202);
}

test('a guarded release is rolled back by its guard, and the console shows the reason and figures', async ({
  page,
}) => {
  await flagOffByDefault('guarded-checkout');
  await signIn(page);
  await page.goto(`${server.url}${CONSOLE}/flags/guarded-checkout/release?env=development`);
  const editor = page.getByRole('form', { name: 'New release plan in development' });
  await editor.getByLabel('Target variation').selectOption('true');
  await fillSteps(page, [
    ['50', '0'],
    ['100', '86400'],
  ]);
  await editor.getByLabel('Guard the release with a metric').check();
  const guard = editor.getByRole('group', { name: 'Guard' });
  await guard.getByLabel('Minimum users per side').fill('100');
  // Without a metric the API refuses, and its message sits at the field.
  await editor.getByRole('button', { name: 'Start release plan' }).click();
  const metric = guard.getByLabel('Metric (a tracked event key)');
  await expect(metric).toHaveAttribute('aria-invalid', 'true');
  await expectAccessible(page);
  await metric.fill('checkout-error');
  await editor.getByRole('button', { name: 'Start release plan' }).click();

  const state = page.getByRole('region', { name: 'Release plan in development' });
  await expect(state.getByText('Step 1 of 2: 50% get On')).toBeVisible();
  await expect(state.getByRole('heading', { name: 'Guard: checkout-error' })).toBeVisible();
  await regression('guarded-checkout', 600);

  await expect(state.getByText('Rolled back', { exact: true }).first()).toBeVisible({
    timeout: 20_000,
  });
  // The rollback's callout; the chart may still say it is loading in a status of its own.
  await expect(state.getByRole('status').filter({ hasText: 'Rolled back' })).toContainText(
    /checkout-error/,
  );
  const sides = state.getByRole('table', { name: 'Guard figures by side' });
  await expect(sides.getByRole('row', { name: /^On/ })).toBeVisible();
  await expect(sides.getByRole('row', { name: /^The rest/ })).toBeVisible();
  await expectAccessible(page);
});

/** The pictures in docs/release-plans.md: the editor, a running guarded plan, a rollback. */
test('screenshots of release plans, light and dark', async ({ page }) => {
  await flagOffByDefault('one-click-pay');
  await flagOffByDefault('express-shipping');
  await apiCall('PUT', `${PROJECT}/flags/express-shipping/environments/development/release-plan`, {
    variation: 'true',
    steps: [
      { percentage: 50, after: 'PT0S' },
      { percentage: 75, after: 'PT4H' },
      { percentage: 100, after: 'P1D' },
    ],
    guard: {
      metric: 'checkout-error',
      kind: 'rate',
      direction: 'lower_is_better',
      minimumUsers: 100,
      confidence: 0.95,
      action: 'rollback',
    },
  });
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${server.url}${CONSOLE}/flags/one-click-pay/release?env=development`);
    const editor = page.getByRole('form', { name: 'New release plan in development' });
    await editor.getByLabel('Target variation').selectOption('true');
    await editor.getByLabel('Guard the release with a metric').check();
    await editor.getByLabel('Metric (a tracked event key)').fill('checkout-error');
    await page.screenshot({ path: `${IMAGES}release-plan-editor-${scheme}.png`, fullPage: true });

    await page.goto(`${server.url}${CONSOLE}/flags/express-shipping/release?env=development`);
    const state = page.getByRole('region', { name: 'Release plan in development' });
    await expect(state.getByText('Step 1 of 3: 50% get On')).toBeVisible();
    await expect(state.getByRole('table', { name: 'Guard figures by side' })).toBeVisible();
    await page.screenshot({ path: `${IMAGES}release-plan-active-${scheme}.png`, fullPage: true });
  }
  // A rollback by the guard, as the guarded journey leaves it.
  await regression('express-shipping', 600);
  await page.reload();
  const state = page.getByRole('region', { name: 'Release plan in development' });
  await expect(state.getByText('Rolled back', { exact: true }).first()).toBeVisible({
    timeout: 20_000,
  });
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.screenshot({
      path: `${IMAGES}release-plan-rolled-back-${scheme}.png`,
      fullPage: true,
    });
  }
});
