import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

const PROJECT = '/api/v1/orgs/acme/projects/web';

interface Variation {
  key: string;
  name: string | null;
  value: string;
  description: string | null;
}

test('variations are added, edited and deleted; default and off are set per environment', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, {
    key: 'banner-colour',
    type: 'String',
    variations: [
      { key: 'blue', value: 'blue' },
      { key: 'green', value: 'green' },
    ],
  });
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/flags/banner-colour`);
  await page
    .getByRole('navigation', { name: 'Flag sections' })
    .getByRole('link', { name: 'Variations' })
    .click();

  await page.getByRole('button', { name: 'Add variation' }).click();
  let dialog = page.getByRole('dialog', { name: 'New variation' });
  await dialog.getByLabel('Variation key').fill('red');
  await dialog.getByLabel('Variation name').fill('Red');
  await dialog.getByLabel('Variation value').fill('red');
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Add variation' }).click();
  await expect(page.getByRole('cell', { name: 'Red', exact: true })).toBeVisible();

  // Red is served nowhere yet: it can go.
  await page.getByRole('button', { name: 'Delete variation red' }).click();
  await page
    .getByRole('alertdialog', { name: 'Delete variation red?' })
    .getByRole('button', { name: 'Delete variation' })
    .click();
  await expect(page.getByRole('cell', { name: 'Red', exact: true })).toBeHidden();

  await page.getByRole('button', { name: 'Edit variation green' }).click();
  dialog = page.getByRole('dialog', { name: 'Edit variation green' });
  await dialog.getByLabel('Variation name').fill('Forest');
  await dialog.getByLabel('Variation value').fill('forest-green');
  await dialog.getByLabel('Variation description').fill('The darker one');
  await dialog.getByRole('button', { name: 'Save variation' }).click();
  await expect(page.getByRole('cell', { name: 'The darker one' }).first()).toBeVisible();
  const flag = await apiCall<{ variations: (Variation & { id: string })[] }>(
    'GET',
    `${PROJECT}/flags/banner-colour`,
  );
  expect(flag.variations.find((v) => v.key === 'green')).toMatchObject({
    name: 'Forest',
    value: 'forest-green',
    description: 'The darker one',
  });
  const keyOf = (id: string) => flag.variations.find((v) => v.id === id)?.key;

  // Default and off per environment: production serves green by default, blue while off.
  await page
    .getByRole('navigation', { name: 'Flag sections' })
    .getByRole('link', { name: 'Targeting' })
    .click();
  await page.getByRole('tab', { name: 'Production' }).click();
  await page.getByLabel('Default variation').selectOption({ label: 'Forest' });
  await page.getByLabel('While off, serve').selectOption('blue');
  await page.getByRole('button', { name: 'Save default serve' }).click();
  await expect
    .poll(async () => {
      const config = await apiCall<{ defaultVariationId: string; offVariationId: string }>(
        'GET',
        `${PROJECT}/flags/banner-colour/environments/production`,
      );
      return [keyOf(config.defaultVariationId), keyOf(config.offVariationId)];
    })
    .toEqual(['green', 'blue']);

  // A served variation cannot go: the API says why, in the dialog.
  await page
    .getByRole('navigation', { name: 'Flag sections' })
    .getByRole('link', { name: 'Variations' })
    .click();
  await page.getByRole('button', { name: 'Delete variation blue' }).click();
  const confirm = page.getByRole('alertdialog', { name: 'Delete variation blue?' });
  await confirm.getByRole('button', { name: 'Delete variation' }).click();
  await expect(confirm.getByRole('alert')).toBeVisible();
  await expectAccessible(page);
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(page.getByRole('cell', { name: 'blue' }).first()).toBeVisible();
});

test('prerequisites are edited per environment; a cycle is refused at its field', async ({
  page,
}) => {
  await apiCall('POST', `${PROJECT}/flags`, { key: 'pre-parent' });
  await apiCall('POST', `${PROJECT}/flags`, { key: 'pre-child' });
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/flags/pre-child`);
  await page.getByRole('tab', { name: 'Development' }).click();
  let form = page.getByRole('form', { name: 'Prerequisites in development' });
  await form.getByRole('button', { name: 'Add prerequisite' }).click();
  await form.getByLabel('Flag, prerequisite 1').selectOption('pre-parent');
  await form.getByLabel('Must serve, prerequisite 1').selectOption('true');
  await expectAccessible(page);
  await form.getByRole('button', { name: 'Save prerequisites' }).click();
  await expect
    .poll(
      async () =>
        (
          await apiCall<{ prerequisites: unknown[] }>(
            'GET',
            `${PROJECT}/flags/pre-child/environments/development`,
          )
        ).prerequisites,
    )
    .toEqual([{ prerequisiteFlagKey: 'pre-parent', expectedVariationKey: 'true' }]);

  // The parent cannot require its own child: the API's message at the field, the choice kept.
  await page.goto(`${server.url}/orgs/acme/projects/web/flags/pre-parent`);
  await page.getByRole('tab', { name: 'Development' }).click();
  form = page.getByRole('form', { name: 'Prerequisites in development' });
  await form.getByRole('button', { name: 'Add prerequisite' }).click();
  const field = form.getByLabel('Flag, prerequisite 1');
  await field.selectOption('pre-child');
  await form.getByLabel('Must serve, prerequisite 1').selectOption('false');
  await form.getByRole('button', { name: 'Save prerequisites' }).click();
  await expect(form.getByText(/cycle/i)).toBeVisible();
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  const message = await field.evaluate(
    (element) =>
      document.getElementById(element.getAttribute('aria-describedby') ?? '')?.textContent,
  );
  expect(message).toMatch(/cycle/i);
  await expect(field).toHaveValue('pre-child');
  await expectAccessible(page);
});
