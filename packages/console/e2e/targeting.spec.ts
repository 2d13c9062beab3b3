import type { Locator } from '@playwright/test';
import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';

/** Condition `c` of group `g` in a rule editor (both 1-based), as its group is named. */
const condition = (editor: Locator, g: number, c: number) =>
  editor.getByRole('group', { name: `Condition ${c} of group ${g}` });

test('target a flag, reorder its rules, roll it out, and the playground agrees with the SDK API', async ({
  page,
}) => {
  await signIn(page);
  await page.getByRole('button', { name: 'New flag' }).click();
  await page.getByRole('dialog', { name: 'New flag' }).getByLabel('Key').fill('targeted');
  await page.getByRole('button', { name: 'Create flag' }).click();
  await expect(page.getByRole('heading', { name: 'targeted' })).toBeVisible();
  await page.getByRole('tab', { name: 'Production' }).click();

  // Rule 1: two condition groups (country in DE or AT) and (plan is pro), serving Off to 12.5%.
  await page.getByRole('button', { name: 'Add rule' }).click();
  let editor = page.getByRole('dialog', { name: 'New rule in Production' });
  await editor.getByLabel('Description').fill('Germans on pro');
  await condition(editor, 1, 1).getByLabel('Attribute').fill('country');
  await condition(editor, 1, 1).getByLabel('Operator').selectOption('In');
  await condition(editor, 1, 1).getByLabel('Values').fill('DE\nAT');
  await editor.getByRole('button', { name: 'Add condition group' }).click();
  await condition(editor, 2, 1).getByLabel('Attribute').fill('plan');
  await condition(editor, 2, 1).getByLabel('Values').fill('pro');
  await editor.getByLabel('Serve').selectOption({ label: 'Off' });
  await editor.getByLabel('Rollout percentage').fill('12.5');
  await expect(editor.getByRole('slider', { name: 'Rollout share' })).toHaveAttribute(
    'aria-valuenow',
    '12.5',
  );
  await expectAccessible(page);
  await editor.getByRole('button', { name: 'Save rule' }).click();
  await expect(page.getByRole('listitem', { name: 'Rule 1: Germans on pro' })).toContainText(
    'If country is one of DE or AT and plan is pro, serve Off to 12.5%',
  );
  const saved = await apiCall<{
    items: { rolloutWeight: number | null; rolloutPercentage: number | null }[];
  }>('GET', `${PROJECT}/flags/targeted/environments/production/rules`);
  expect(saved.items[0]).toMatchObject({ rolloutWeight: 12_500, rolloutPercentage: 12 });

  // Rule 2: everyone on pro, serving On.
  await page.getByRole('button', { name: 'Add rule' }).click();
  editor = page.getByRole('dialog', { name: 'New rule' });
  await editor.getByLabel('Description').fill('Pro plan');
  await condition(editor, 1, 1).getByLabel('Attribute').fill('plan');
  await condition(editor, 1, 1).getByLabel('Values').fill('pro');
  await editor.getByRole('button', { name: 'Save rule' }).click();
  await expect(page.getByRole('listitem', { name: 'Rule 2: Pro plan' })).toBeVisible();

  // Drag "Pro plan" above "Germans on pro".
  await page
    .getByRole('listitem', { name: 'Rule 2: Pro plan' })
    .dragTo(page.getByRole('listitem', { name: 'Rule 1: Germans on pro' }));
  await expect(page.getByRole('listitem', { name: 'Rule 1: Pro plan' })).toBeVisible();
  await expect(page.getByRole('listitem', { name: 'Rule 2: Germans on pro' })).toBeVisible();

  // The default serve: a 12.5% rollout of On.
  await page.getByLabel('When no rule matches, serve').selectOption('PercentageRollout');
  await page.getByLabel('Percentage for On').fill('12.5');
  await page.getByLabel('Percentage for Off').fill('87.5');
  await page.getByRole('button', { name: 'Save default serve' }).click();
  await expect
    .poll(async () => {
      const config = await apiCall<{ rollout: { weight: number }[] }>(
        'GET',
        `${PROJECT}/flags/targeted/environments/production`,
      );
      return config.rollout.map((w) => w.weight).sort((a, b) => a - b);
    })
    .toEqual([12_500, 87_500]);

  // On in production, after confirming.
  await page.getByRole('switch', { name: 'On in production' }).click();
  await page.getByRole('button', { name: 'Turn on in production' }).click();
  await expect(page.getByRole('switch', { name: 'On in production' })).toBeChecked();

  // The playground: a German on the free plan matches no rule; on pro, rule 1 "Pro plan" wins.
  await page.getByLabel('Attributes (JSON)').fill('{"country": "DE", "plan": "pro"}');
  await page.getByLabel('User id').fill('user-42');
  await page.getByRole('button', { name: 'Evaluate in production' }).click();
  const result = page.getByRole('definition');
  // Variation (its name and key), value, reason, matching rule.
  await expect(result.nth(0)).toHaveText('On true');
  await expect(result.nth(1)).toHaveText('true');
  await expect(result.nth(2)).toHaveText('TARGETING_MATCH');
  await expect(result.nth(3)).toContainText('Rule 1: Pro plan');
  await expectAccessible(page);

  const { key: sdkKey } = await apiCall<{ key: string }>(
    'POST',
    `${PROJECT}/environments/production/sdk-keys`,
    { name: 'console-e2e', type: 'ServerSide' },
  );
  const answer = await fetch(`${server.url}/v1/sdk/evaluate`, {
    method: 'POST',
    headers: { authorization: sdkKey, 'content-type': 'application/json' },
    body: JSON.stringify({
      flagKey: 'targeted',
      context: { userId: 'user-42', attributes: { country: 'DE', plan: 'pro' } },
    }),
  }).then((r) => r.json());
  expect(answer).toMatchObject({ variation: 'true', reason: 'TARGETING_MATCH' });

  // Side by side: development is untouched, production now differs line by line.
  await page
    .getByRole('navigation', { name: 'Flag sections' })
    .getByRole('link', { name: 'Settings' })
    .click();
  await page.getByLabel('Compare', { exact: true }).selectOption('development');
  await page.getByLabel('with', { exact: true }).selectOption('production');
  await expect(page.getByRole('row', { name: /^On\/off differs Off On$/ })).toBeVisible();
  await expect(
    page.getByRole('row', { name: /^Rules differs none 1\. plan is pro/ }),
  ).toBeVisible();

  // Promote back: production's configuration copied to development, in one confirmed step.
  await page.getByLabel('Compare', { exact: true }).selectOption('production');
  await page.getByLabel('with', { exact: true }).selectOption('development');
  await page.getByRole('button', { name: 'Copy production to development' }).click();
  await page.getByRole('button', { name: 'Copy to development' }).click();
  await expect(page.getByRole('row', { name: /^On\/off On On$/ })).toBeVisible();
  await expect(page.getByRole('row', { name: /^Rules 1\. plan is pro/ })).toBeVisible();
  const development = await apiCall<{ isEnabled: boolean }>(
    'GET',
    `${PROJECT}/flags/targeted/environments/development`,
  );
  expect(development.isEnabled).toBe(true);
});

test('an invalid regex shows the API message at the field and keeps the typed text', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'regex-flag' });
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/flags/regex-flag`);
  await page.getByRole('tab', { name: 'Development' }).click();
  await page.getByRole('button', { name: 'Add rule' }).click();
  const editor = page.getByRole('dialog', { name: 'New rule' });
  await condition(editor, 1, 1).getByLabel('Attribute').fill('email');
  await condition(editor, 1, 1).getByLabel('Operator').selectOption('MatchesRegex');
  const values = condition(editor, 1, 1).getByLabel('Values');
  await values.fill('(unclosed');
  await editor.getByRole('button', { name: 'Save rule' }).click();

  await expect(values).toHaveAttribute('aria-invalid', 'true');
  const message = await values.evaluate(
    (field) => document.getElementById(field.getAttribute('aria-describedby') ?? '')?.textContent,
  );
  expect(message).toMatch(/regular expression|regex|pattern/i);
  await expect(values).toHaveValue('(unclosed');
  await expectAccessible(page);
});
