import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';
const CONSOLE = '/orgs/acme/projects/web';

/**
 * Users the journey evaluates, and their events: some 200 per variation, past the 100 the
 * journey's experiment asks for, and enough for 60% against 10% conversion to be `better` with
 * room to spare whichever way the split falls (at 150 per variation the interval's low end sits
 * just above zero).
 */
const USERS = 400;

interface FlagVariations {
  variations: { id: string; key: string; value: string }[];
}

/** A Boolean flag, on in development, whose default serve is Off (the control). */
async function flagOffByDefault(key: string): Promise<{ on: string; off: string }> {
  await apiCall('POST', `${PROJECT}/flags`, { key, name: `Experiment ${key}` });
  const flag = await apiCall<FlagVariations>('GET', `${PROJECT}/flags/${key}`);
  const on = flag.variations.find((v) => v.key === 'true')!.id;
  const off = flag.variations.find((v) => v.key === 'false')!.id;
  await apiCall('PATCH', `${PROJECT}/flags/${key}/environments/development`, {
    strategy: 'SingleVariation',
    defaultVariationId: off,
  });
  await apiCall('POST', `${PROJECT}/flags/${key}/environments/development/toggle`, {
    enabled: true,
  });
  return { on, off };
}

/** A development SDK key, made through the API as a script would. */
async function developmentSdkKey(): Promise<string> {
  const { key } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/development/sdk-keys`,
    { name: `experiments-${Date.now()}`, type: 'ServerSide' },
  );
  return key;
}

/** What the server's evaluation API serves `userId` (`POST /v1/sdk/evaluate`). */
async function evaluate(sdkKey: string, flagKey: string, userId: string): Promise<boolean> {
  const response = await fetch(`${server.url}/v1/sdk/evaluate`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ flagKey, context: { userId } }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { value: boolean }).value;
}

/**
 * Users simulated through the evaluation API: each evaluated once (exposed to the split), then
 * `track()` events of `eventKey` sent for some of them (`POST /v1/sdk/events`, `Custom`, the
 * event key in `flagKey`): 3 in 5 of the users served On convert, 1 in 10 of those served Off.
 * Returns how many users each variation got.
 */
async function simulate(
  sdkKey: string,
  flagKey: string,
  eventKey: string,
): Promise<{ on: number; off: number }> {
  const run = `${Date.now()}`;
  const events: { type: 'Custom'; flagKey: string; userId: string; metadata: object }[] = [];
  const served = { on: 0, off: 0 };
  for (let user = 0; user < USERS; user++) {
    const userId = `exp-user-${run}-${user}`;
    const value = await evaluate(sdkKey, flagKey, userId);
    if (value) served.on++;
    else served.off++;
    if (value ? user % 5 < 3 : user % 10 === 0)
      events.push({ type: 'Custom', flagKey: eventKey, userId, metadata: { amount: 10 } });
  }
  const sent = await fetch(`${server.url}/v1/sdk/events`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  });
  expect(sent.status).toBe(202);
  return served;
}

test('a metric and an experiment are made in the console, read, and stopped by shipping On', async ({
  page,
}) => {
  const suffix = Date.now().toString(36);
  const flagKey = `exp-checkout-${suffix}`;
  const metricName = `Checkout ${suffix}`;
  const eventKey = `checkout-${suffix}`;
  const experimentName = `One-page checkout ${suffix}`;
  const { on } = await flagOffByDefault(flagKey);
  await signIn(page);

  // The Metrics page, from the project's navigation.
  await page
    .getByRole('navigation', { name: 'Sections', exact: true })
    .getByRole('link', { name: 'Metrics' })
    .click();
  await expect(page.getByRole('heading', { name: 'Metrics', level: 1 })).toBeVisible();
  await page.getByRole('button', { name: 'New metric' }).click();
  const dialog = page.getByRole('dialog', { name: 'New metric' });
  await dialog.getByLabel('Name', { exact: true }).fill(metricName);
  await expect(dialog.getByLabel('Key', { exact: true })).toHaveValue(`checkout-${suffix}`);
  await dialog.getByLabel('Event key').fill(eventKey);
  // A sum reads a property of the events: without one the API names the field, at the field.
  await dialog.getByLabel('Kind').selectOption('sum');
  await dialog.getByRole('button', { name: 'Create metric' }).click();
  await expect(dialog.getByLabel('Value property')).toHaveAttribute('aria-invalid', 'true');
  await expect(dialog.getByLabel('Event key')).toHaveValue(eventKey);
  await expectAccessible(page);
  // A conversion metric needs none: the field goes.
  await dialog.getByLabel('Kind').selectOption('conversion');
  await expect(dialog.getByLabel('Value property')).toHaveCount(0);
  await dialog.getByLabel('Window (hours)').fill('24');
  await dialog.getByRole('button', { name: 'Create metric' }).click();
  await expect(dialog).toBeHidden();
  const metricRow = page.getByRole('row', { name: new RegExp(metricName) });
  await expect(metricRow).toContainText(eventKey);
  await expect(metricRow).toContainText('Conversion');
  await expect(metricRow).toContainText('24 hours (1 day)');
  await expectAccessible(page);

  // The experiment, created on the flag's page in development.
  await page.goto(`${server.url}${CONSOLE}/flags/${flagKey}/experiments?env=development`);
  const section = page.getByRole('region', { name: 'Experiments' });
  await expect(section.getByText('No experiment of this flag in development yet.')).toBeVisible();
  await section.getByRole('button', { name: 'New experiment' }).click();
  const form = page.getByRole('form', { name: 'New experiment in development' });
  await form.getByLabel('Name', { exact: true }).fill(experimentName);
  await form.getByLabel('Hypothesis').fill('One page converts better than three.');
  // Basis points shown as percentages, an even split of the two variations to begin with.
  await expect(form.getByLabel('Weight of On (%)')).toHaveValue('50');
  await expect(
    form.getByText(/^Users no rule catches get (On 50%, Off 50%|Off 50%, On 50%)\.$/),
  ).toBeVisible();
  await form.getByLabel('Weight of On (%)').fill('60');
  await expect(form.getByText('the weights must add up to 100%')).toBeVisible();
  await form.getByLabel('Weight of Off (%)').fill('40');
  await expect(
    form.getByText(/^Users no rule catches get (On 60%, Off 40%|Off 40%, On 60%)\.$/),
  ).toBeVisible();
  await form.getByLabel('Weight of On (%)').fill('50');
  await form.getByLabel('Weight of Off (%)').fill('50');
  await expect(form.getByLabel('Control variation')).toHaveValue('false');
  await form.getByLabel('Primary metric').selectOption({ label: metricName });
  await form.getByLabel('Minimum users per variation').fill('100');
  await expectAccessible(page);
  await form.getByRole('button', { name: 'Create experiment' }).click();

  // The draft's results page opens; Start serves the split.
  await expect(page.getByRole('heading', { name: experimentName, level: 1 })).toBeVisible();
  await expect(page.getByRole('status').filter({ hasText: 'Draft' })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole('button', { name: 'Start experiment' }).click();
  await expect(page.getByRole('status').filter({ hasText: /^Running since/ })).toBeVisible();

  // Users evaluated and their events sent through the evaluation API, as SDKs do.
  const sdkKey = await developmentSdkKey();
  const served = await simulate(sdkKey, flagKey, eventKey);
  // Every variation past the experiment's minimum users, or there is no verdict to read.
  expect(served.on).toBeGreaterThanOrEqual(100);
  expect(served.off).toBeGreaterThanOrEqual(100);

  // The exposures are counted in batches: the page reads them again by itself.
  const exposures = page.getByRole('table', { name: 'Exposed users per variation' });
  await expect(exposures.getByRole('row', { name: /^On / })).toContainText(String(served.on), {
    timeout: 60_000,
  });
  await expect(exposures.getByRole('row', { name: /^Off \(control\)/ })).toContainText(
    String(served.off),
  );
  const primary = page.getByRole('region', { name: new RegExp(`^${metricName}`) });
  await expect(primary.getByRole('heading', { name: /primary metric/ })).toBeVisible();
  // Value, difference, the interval as a bar against zero with its numbers in words, and the
  // verdict in words: On converts six times as often as Off, which the figures settle.
  const treatment = primary.getByRole('row', { name: /^On / });
  await expect(treatment).toContainText('better than Off', { timeout: 60_000 });
  await expect(treatment).toContainText(/\+[\d,.]+%/);
  await expect(treatment).toContainText(/\+[\d,.]+ percentage points/);
  await expect(
    treatment.getByRole('img', {
      name: /^95% interval of the relative difference: from \+[\d,.]+% to \+[\d,.]+%, difference \+[\d,.]+%; zero is below it\.$/,
    }),
  ).toBeVisible();
  // The difference over time has the reading's own point at least: its text alternative says
  // On's latest difference and interval, above zero.
  const chart = page.getByRole('figure', {
    name: `Relative difference of ${metricName} over time`,
  });
  await expect(chart).toContainText(
    /Latest for On, .+: \+[\d,.]+% \(interval \+[\d,.]+% to \+[\d,.]+%\)\./,
  );
  await expect(primary.getByRole('row', { name: /^Off \(control\)/ })).toContainText('control');
  await expect(page.getByRole('alert').filter({ hasText: 'Sample ratio mismatch' })).toHaveCount(0);
  await expectAccessible(page);

  // Stop, shipping On.
  await page.getByRole('button', { name: 'Stop experiment' }).click();
  const stop = page.getByRole('dialog', { name: `Stop ${experimentName}?` });
  await stop.getByLabel(/^Ship On/).check();
  await expectAccessible(page);
  await stop.getByRole('button', { name: 'Stop experiment' }).click();
  await expect(stop).toBeHidden();
  await expect(page.getByRole('status').filter({ hasText: 'Decision: ship On.' })).toBeVisible();

  // The default serve is On now: in the API, in the evaluation API and on the flag's page.
  const configuration = await apiCall<{ strategy: string; defaultVariationId: string }>(
    'GET',
    `${PROJECT}/flags/${flagKey}/environments/development`,
  );
  expect(configuration).toMatchObject({ strategy: 'SingleVariation', defaultVariationId: on });
  expect(await evaluate(sdkKey, flagKey, `after-${suffix}`)).toBe(true);
  await page.goto(`${server.url}${CONSOLE}/flags/${flagKey}/targeting?env=development`);
  await expect(page.getByLabel('Default variation')).toHaveValue(on);

  // The project's Experiments page lists it among the stopped ones.
  await page
    .getByRole('navigation', { name: 'Sections', exact: true })
    .getByRole('link', { name: 'Experiments' })
    .click();
  await expect(page.getByRole('heading', { name: 'Experiments', level: 1 })).toBeVisible();
  await page.getByLabel('Status').selectOption('stopped');
  const listed = page.getByRole('row', { name: new RegExp(experimentName) });
  await expect(listed).toContainText('Stopped');
  await expect(listed).toContainText(flagKey);
  await expect(listed).toContainText(metricName);
  await expect(listed).toContainText(
    /true: ((better|worse) than false|no clear difference from false)/,
  );
  await expectAccessible(page);
  await listed.getByRole('link', { name: experimentName }).click();
  await expect(page.getByRole('heading', { name: experimentName, level: 1 })).toBeVisible();
});

test('a metric an experiment uses is not deleted, and the API says why', async ({ page }) => {
  const suffix = Date.now().toString(36);
  const flagKey = `exp-guarded-${suffix}`;
  const metricKey = `signup-${suffix}`;
  await flagOffByDefault(flagKey);
  await apiCall('POST', `${PROJECT}/metrics`, {
    key: metricKey,
    name: `Signup ${suffix}`,
    eventKey: metricKey,
    kind: 'conversion',
    direction: 'higher_is_better',
  });
  await apiCall('POST', `${PROJECT}/flags/${flagKey}/environments/development/experiments`, {
    key: 'signup-test',
    name: `Signup test ${suffix}`,
    variations: [
      { key: 'true', weight: 5000 },
      { key: 'false', weight: 5000 },
    ],
    controlVariation: 'false',
    primaryMetric: metricKey,
  });
  await signIn(page);
  await page.goto(`${server.url}${CONSOLE}/metrics`);
  const row = page.getByRole('row', { name: new RegExp(`Signup ${suffix}`) });
  await row.getByRole('button', { name: `Delete Signup ${suffix}` }).click();
  const confirm = page.getByRole('alertdialog', { name: `Delete Signup ${suffix}?` });
  await expectAccessible(page);
  await confirm.getByRole('button', { name: `Delete Signup ${suffix}` }).click();
  await expect(row.getByRole('alert')).toContainText('Not deleted:');
  await expect(row).toBeVisible();
  await expectAccessible(page);
});
