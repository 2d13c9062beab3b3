import { fileURLToPath } from 'node:url';
import type { Browser, Page } from '@playwright/test';
import {
  apiCall,
  expect,
  expectAccessible,
  server,
  signIn,
  signInWithPassword,
  test,
} from './fixtures';

// A project of its own: production here requires review, which other journeys must not meet.
const PROJECT = '/api/v1/orgs/acme/projects/reviews';
const PAGES = '/orgs/acme/projects/reviews';
const REVIEWER = {
  email: 'rey@example.com',
  name: 'Rey Reviewer',
  password: 'a long reviewer pass',
};

/**
 * The reviewer, a Member with a password: invited by the Owner and accepted through the API,
 * then signed in in a browser context of their own (another person at another desk).
 */
async function reviewerPage(browser: Browser): Promise<Page> {
  const members = await apiCall<{ items: { email: string }[] }>('GET', '/api/v1/orgs/acme/members');
  if (!members.items.some((member) => member.email === REVIEWER.email)) {
    const { acceptUrl } = await apiCall<{ acceptUrl: string }>(
      'POST',
      '/api/v1/orgs/acme/invitations',
      { email: REVIEWER.email, role: 'Member' },
    );
    const token = new URL(acceptUrl).hash.replace('#token=', '');
    // Accepted as the newcomer does: without the Owner's credential.
    const accepted = await fetch(`${server.url}/api/v1/invitations/accept`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, name: REVIEWER.name, password: REVIEWER.password }),
    });
    expect(accepted.status).toBe(200);
  }
  const context = await browser.newContext({ timezoneId: 'America/New_York' });
  const page = await context.newPage();
  await signInWithPassword(page, REVIEWER.email, REVIEWER.password);
  return page;
}

/** The project, a flag on in production with a rule for Germany, and a server-side SDK key. */
async function setUp(flag: string): Promise<{ sdkKey: string }> {
  const projects = await apiCall<{ items: { key: string }[] }>('GET', '/api/v1/orgs/acme/projects');
  if (!projects.items.some((p) => p.key === 'reviews'))
    await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'reviews', name: 'Reviews' });
  await apiCall('PATCH', `${PROJECT}/environments/production`, {
    changeRequests: { required: false, approvals: 1 },
  });
  await apiCall('POST', `${PROJECT}/flags`, { key: flag, name: flag });
  const detail = await apiCall<{ variations: { id: string; key: string }[] }>(
    'GET',
    `${PROJECT}/flags/${flag}`,
  );
  const on = detail.variations.find((v) => v.key === 'true')!.id;
  const off = detail.variations.find((v) => v.key === 'false')!.id;
  await apiCall('PATCH', `${PROJECT}/flags/${flag}/environments/production`, {
    defaultVariationId: off,
  });
  await apiCall('POST', `${PROJECT}/flags/${flag}/environments/production/rules`, {
    description: 'Germany',
    variationId: on,
    conditionGroups: [{ conditions: [{ attribute: 'country', operator: 'In', values: ['DE'] }] }],
  });
  await apiCall('POST', `${PROJECT}/flags/${flag}/environments/production/toggle`, {
    enabled: true,
  });
  const { key } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/production/sdk-keys`,
    { name: `${flag}-service`, type: 'ServerSide' },
  );
  return { sdkKey: key };
}

/** Production requires one approval, set by the Owner (an Admin) on the environments page. */
async function protectProduction(page: Page): Promise<void> {
  await page.goto(`${server.url}${PAGES}/environments`);
  await page.getByRole('button', { name: 'Edit Production' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit Production' });
  await dialog
    .getByLabel(
      'Require a reviewed change request for every change to what this environment serves',
    )
    .check();
  await expect(dialog.getByLabel('Approvals needed')).toHaveValue('1');
  await expect(dialog.getByLabel(/Allow emergency off/)).toBeChecked();
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Save environment' }).click();
  await expect(page.getByRole('row', { name: /Production/ })).toContainText('Required, 1 approval');
}

/** What the SDK serves `country` for the flag, as a service using the key would see it. */
async function served(sdkKey: string, flag: string, country: string): Promise<unknown> {
  const answer = await fetch(`${server.url}/v1/sdk/evaluate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sdkKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      flagKey: flag,
      context: { userId: `u-${country}`, attributes: { country } },
    }),
  });
  return ((await answer.json()) as { value: unknown }).value;
}

/** A `datetime-local` value `seconds` from now in the page's own time zone. */
function localTimeFromNow(page: Page, seconds: number): Promise<string> {
  return page.evaluate((ahead) => {
    const at = new Date(Date.now() + ahead * 1000);
    const pad = (n: number) => String(n).padStart(2, '0');
    return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(
      at.getHours(),
    )}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  }, seconds);
}

/** The author widens rule 1 to Austria in production: collected as a pending change. */
async function widenRuleToAustria(page: Page, flag: string): Promise<void> {
  await page.goto(`${server.url}${PAGES}/flags/${flag}/targeting?env=production`);
  const pending = page.getByRole('region', { name: 'Pending changes in Production' });
  await expect(pending).toContainText('No pending changes.');
  await page.getByRole('button', { name: 'Edit rule 1' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit rule in Production' });
  await dialog
    .getByRole('group', { name: 'Condition 1 of group 1' })
    .getByLabel('Values')
    .fill('DE\nAT');
  await dialog.getByRole('button', { name: 'Add rule to pending changes' }).click();
  await expect(dialog).toBeHidden();
  await expect(pending.getByRole('list', { name: 'Pending changes in Production' })).toHaveText(
    'Rule 1 changed',
  );
  // The page shows the targeting as it will be; the rule is not saved.
  await expect(page.getByRole('listitem', { name: 'Rule 1: Germany' })).toContainText(
    'country is one of DE or AT',
  );
}

/** "Request review" with a title; the new request's page opens. Returns its number. */
async function requestReview(page: Page, title: string, applyIn?: number): Promise<number> {
  await page.getByRole('button', { name: 'Request review' }).click();
  const dialog = page.getByRole('dialog', { name: /Request review of/ });
  await dialog.getByLabel('Title').fill(title);
  await dialog.getByLabel('Description').fill('Austria joins the launch.');
  if (applyIn !== undefined)
    await dialog.getByLabel(/^Apply at \(/).fill(await localTimeFromNow(page, applyIn));
  await dialog.getByRole('button', { name: 'Open change request' }).click();
  const heading = page.getByRole('heading', { level: 1, name: new RegExp(`^CR \\d+: ${title}`) });
  await expect(heading).toBeVisible();
  return Number(/CR (\d+)/.exec((await heading.textContent()) ?? '')![1]);
}

test('two people: a rule change in production is requested, reviewed, approved and applied on schedule', async ({
  browser,
}) => {
  const flag = 'austria-launch';
  const { sdkKey } = await setUp(flag);
  // The author works in Berlin, the reviewer in New York: each reads times in their own zone.
  const author = await (await browser.newContext({ timezoneId: 'Europe/Berlin' })).newPage();
  await signIn(author);
  await protectProduction(author);

  await widenRuleToAustria(author, flag);
  await expectAccessible(author);
  expect(await served(sdkKey, flag, 'DE')).toBe(true);
  expect(await served(sdkKey, flag, 'AT')).toBe(false);
  const number = await requestReview(author, 'Launch in Austria');
  await expect(author.getByText('open', { exact: true })).toBeVisible();
  // The pending changes went into the request.
  await author.goto(`${server.url}${PAGES}/flags/${flag}/targeting?env=production`);
  await expect(author.getByRole('region', { name: 'Pending changes in Production' })).toContainText(
    'No pending changes.',
  );

  // The reviewer, elsewhere: the navigation counts one request to review.
  const reviewer = await reviewerPage(browser);
  await reviewer.goto(`${server.url}${PAGES}/flags`);
  const nav = reviewer.getByRole('navigation', { name: 'Sections' });
  await expect(nav.getByRole('link', { name: 'Change requests 1 to review' })).toBeVisible();
  await nav.getByRole('link', { name: /Change requests/ }).click();
  await reviewer.getByRole('link', { name: 'To review', exact: true }).click();
  await expectAccessible(reviewer);
  await reviewer.getByRole('link', { name: `CR ${number}: Launch in Austria` }).click();

  const diff = reviewer.getByRole('table', {
    name: `Change 1: Flag ${flag}, before and after`,
  });
  const rule = diff.getByRole('row', { name: /Rule 1/ });
  await expect(rule.getByRole('cell').nth(0)).toHaveText(
    'If country is one of DE, serve On (Germany)',
  );
  await expect(rule.getByRole('cell').nth(1)).toHaveText(
    'If country is one of DE or AT, serve On (Germany)',
  );
  await expect(rule).toContainText('changed');
  await expect(diff.getByRole('row', { name: /On or off/ })).not.toContainText('changed');
  await expectAccessible(reviewer);
  await reviewer.getByLabel('Comment').fill('Legal cleared Austria.');
  await reviewer.getByRole('button', { name: 'Approve' }).click();
  await expect(reviewer.getByText('approved', { exact: true })).toBeVisible();
  await expect(
    reviewer.getByRole('listitem').filter({ hasText: 'Legal cleared Austria.' }),
  ).toContainText(`${REVIEWER.name} approved`);

  // The author schedules it two seconds ahead, in their own time zone (named on the label).
  await author.goto(`${server.url}${PAGES}/change-requests/${number}`);
  await expect(author.getByText('approved', { exact: true })).toBeVisible();
  await author.getByLabel('Schedule for (Europe/Berlin)').fill(await localTimeFromNow(author, 2));
  await author.getByRole('button', { name: 'Schedule' }).click();
  await expect(author.getByText('scheduled', { exact: true })).toBeVisible();
  await expectAccessible(author);

  // After that time the SDK is served the new rule, and the request reads applied.
  await expect.poll(() => served(sdkKey, flag, 'AT'), { timeout: 15_000 }).toBe(true);
  await author.reload();
  await expect(author.getByText('applied', { exact: true })).toBeVisible();
  await author.getByRole('link', { name: 'Change requests' }).first().click();
  await author.getByRole('link', { name: 'Done' }).click();
  await expect(author.getByRole('row', { name: /Launch in Austria/ })).toContainText('applied');
  await reviewer.context().close();
});

test('a rejected request ends rejected, and a request in conflict is refused and then fails on schedule', async ({
  page,
  browser,
}) => {
  const flag = 'two-endings';
  const { sdkKey } = await setUp(flag);
  await signIn(page);
  await protectProduction(page);
  const reviewer = await reviewerPage(browser);

  // Rejected: the request ends, nothing is applied, nothing more can be done with it.
  await widenRuleToAustria(page, flag);
  const rejected = await requestReview(page, 'Austria too early');
  await reviewer.goto(`${server.url}${PAGES}/change-requests/${rejected}`);
  await reviewer.getByLabel('Comment').fill('Wait for the legal review.');
  await reviewer.getByRole('button', { name: 'Reject' }).click();
  await expect(reviewer.getByText('rejected', { exact: true })).toBeVisible();
  await reviewer.context().close();
  await page.reload();
  await expect(page.getByText('rejected', { exact: true })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Apply now' })).toHaveCount(0);
  expect(await served(sdkKey, flag, 'AT')).toBe(false);

  // In conflict: after the request is opened, emergency off changes the flag in production.
  await widenRuleToAustria(page, flag);
  const conflicting = await requestReview(page, 'Austria after all');
  await page.goto(`${server.url}${PAGES}/flags/${flag}/targeting?env=production`);
  await page.getByRole('button', { name: 'Emergency off in Production' }).click();
  await page.getByRole('button', { name: 'Turn off in Production now' }).click();
  await expect(
    page.getByRole('switch', { name: 'On in Production', exact: true }),
  ).not.toBeChecked();
  expect(await served(sdkKey, flag, 'DE')).toBe(false);

  const secondReviewer = await reviewerPage(browser);
  await secondReviewer.goto(`${server.url}${PAGES}/change-requests/${conflicting}`);
  await expect(secondReviewer.getByRole('note')).toContainText('Conflict');
  await secondReviewer.getByRole('button', { name: 'Approve' }).click();
  await expect(secondReviewer.getByText('approved', { exact: true })).toBeVisible();

  await page.goto(`${server.url}${PAGES}/change-requests/${conflicting}`);
  await page.getByRole('button', { name: 'Apply now' }).click();
  await expect(page.getByRole('alert')).toContainText(/^Conflict: nothing was applied/i);
  await expect(page.getByText('approved', { exact: true })).toBeVisible();
  await page.getByLabel(/^Schedule for \(/).fill(await localTimeFromNow(page, 2));
  await page.getByRole('button', { name: 'Schedule' }).click();
  await expect(async () => {
    await page.reload();
    await expect(page.getByText('failed', { exact: true })).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
  await expect(page.getByRole('alert')).toContainText('Failed');
  expect(await served(sdkKey, flag, 'AT')).toBe(false);
  await secondReviewer.context().close();
});

test('the author rewrites a request in conflict against the current state, for a new review', async ({
  page,
}) => {
  const flag = 'rewritten-launch';
  await setUp(flag);
  await signIn(page);
  await protectProduction(page);
  await widenRuleToAustria(page, flag);
  const number = await requestReview(page, 'Austria, rewritten');
  await page.goto(`${server.url}${PAGES}/flags/${flag}/targeting?env=production`);
  await page.getByRole('button', { name: 'Emergency off in Production' }).click();
  await page.getByRole('button', { name: 'Turn off in Production now' }).click();
  await expect(
    page.getByRole('switch', { name: 'On in Production', exact: true }),
  ).not.toBeChecked();

  await page.goto(`${server.url}${PAGES}/change-requests/${number}`);
  await expect(page.getByRole('note')).toContainText('Conflict');
  const onOrOff = page
    .getByRole('table', { name: `Change 1: Flag ${flag}, before and after` })
    .getByRole('row', { name: /On or off/ });
  await expect(onOrOff).toContainText('changed');
  await expectAccessible(page);
  await page.getByRole('button', { name: 'Rewrite against the current state' }).click();
  await expect(page.getByRole('note')).toHaveCount(0);
  await expect(page.getByText('open', { exact: true })).toBeVisible();
  // The request still turns the flag on: the reviewers now see it against Off.
  await expect(onOrOff.getByRole('cell').nth(0)).toHaveText('Off');
  await expect(onOrOff.getByRole('cell').nth(1)).toHaveText('On');
});

/** The pictures in docs/change-requests-console.md, taken here so they show the console as it is. */
test('a release plan in production is proposed from the flag page, approved by another person, and starts when applied', async ({
  browser,
}) => {
  const flag = 'staged-austria';
  const { sdkKey } = await setUp(flag);
  const author = await (await browser.newContext({ timezoneId: 'Europe/Berlin' })).newPage();
  await signIn(author);
  await protectProduction(author);

  // The editor proposes instead of starting: production requires review.
  await author.goto(`${server.url}${PAGES}/flags/${flag}/release?env=production`);
  const editor = author.getByRole('form', { name: 'New release plan in production' });
  await editor.getByLabel('Target variation').selectOption('true');
  await editor.getByRole('button', { name: 'Request review of release plan' }).click();
  const heading = author.getByRole('heading', {
    level: 1,
    name: new RegExp(`^CR \\d+: Release plan of ${flag} in production`),
  });
  await expect(heading).toBeVisible();
  const number = Number(/CR (\d+)/.exec((await heading.textContent()) ?? '')![1]);
  const diff = author.getByRole('table', {
    name: `Change 1: Release plan of ${flag}, before and after`,
  });
  await expect(diff.getByRole('row', { name: /When no rule matches/ })).toContainText(
    'released to On in steps',
  );
  await expect(diff.getByRole('row', { name: /Steps/ })).toContainText(
    '1% at once, then 10% after 1 hour, then 50% after 1 day, then 100% after 2 days',
  );
  await expectAccessible(author);
  // Nothing runs before the review.
  await author.goto(`${server.url}${PAGES}/flags/${flag}/release?env=production`);
  await expect(editor).toBeVisible();
  await expect(author.getByRole('region', { name: 'Release plan in production' })).toHaveCount(0);

  const reviewer = await reviewerPage(browser);
  await reviewer.goto(`${server.url}${PAGES}/change-requests/${number}`);
  await reviewer.getByRole('button', { name: 'Approve' }).click();
  await expect(reviewer.getByText('approved', { exact: true })).toBeVisible();
  await reviewer.context().close();

  await author.goto(`${server.url}${PAGES}/change-requests/${number}`);
  await author.getByRole('button', { name: 'Apply now' }).click();
  await expect(author.getByText('applied', { exact: true })).toBeVisible();
  await author.goto(`${server.url}${PAGES}/flags/${flag}/release?env=production`);
  const state = author.getByRole('region', { name: 'Release plan in production' });
  await expect(state.getByText('Step 1 of 4: 1% get On')).toBeVisible();
  // Users outside the rule now fall through to the plan's rollout; the rule still serves Germany.
  expect(await served(sdkKey, flag, 'DE')).toBe(true);
  await author.context().close();
});

test('screenshots of change requests, light and dark', async ({ page }) => {
  test.skip(test.info().project.name === 'postgres', 'the pictures are taken once, on SQLite');
  const images = fileURLToPath(new URL('../../../docs/images/console/', import.meta.url));
  const flag = 'pictured-launch';
  await setUp(flag);
  await apiCall('PATCH', `${PROJECT}/environments/production`, {
    changeRequests: { required: true, approvals: 1 },
  });
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page);
  await widenRuleToAustria(page, flag);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page
      .getByRole('region', { name: 'Pending changes in Production' })
      .scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${images}change-request-pending-${scheme}.png` });
  }
  const number = await requestReview(page, 'Launch in Austria');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${server.url}${PAGES}/change-requests/${number}`);
    await expect(page.getByRole('table', { name: /before and after/ })).toBeVisible();
    await page.screenshot({ path: `${images}change-request-review-${scheme}.png`, fullPage: true });
    await page.goto(`${server.url}${PAGES}/change-requests?tab=mine`);
    await expect(page.getByRole('row', { name: /Launch in Austria/ }).first()).toBeVisible();
    await page.screenshot({ path: `${images}change-requests-${scheme}.png` });
  }
});
