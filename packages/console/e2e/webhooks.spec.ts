import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Page } from '@playwright/test';
import { apiCall, expect, expectAccessible, server, signIn, test } from './fixtures';

/** A webhook receiver on 127.0.0.1 inside the test: answers 204, or 500 while `failing`. */
class Receiver {
  failing = false;
  readonly requests: { headers: IncomingHttpHeaders; body: string }[] = [];
  private readonly http: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      this.requests.push({ headers: request.headers, body });
      response.statusCode = this.failing ? 500 : 204;
      response.end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.http.listen(0, '127.0.0.1', resolve));
    const address = this.http.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    return `http://127.0.0.1:${address.port}/hook`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.http.close(() => resolve()));
  }
}

let receiver: Receiver;
let receiverUrl: string;

test.beforeEach(async () => {
  receiver = new Receiver();
  receiverUrl = await receiver.start();
});
test.afterEach(() => receiver.stop());

/** Creates a subscription to the receiver through the console and opens its page. */
async function createWebhook(page: Page, name: string): Promise<void> {
  await signIn(page);
  await page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: 'Webhooks' })
    .click();
  await expect(page.getByRole('heading', { name: 'Webhooks', level: 1 })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole('button', { name: 'New webhook' }).click();
  const dialog = page.getByRole('dialog', { name: 'New webhook' });
  await dialog.getByLabel('Name').fill(name);
  await dialog.getByLabel('URL').fill(receiverUrl);
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Create webhook' }).click();
  await expect(dialog.getByLabel('Signing secret')).toHaveValue(/^whsec_/);
  await dialog.getByRole('link', { name: 'Open webhook' }).click();
  await expect(page.getByRole('heading', { name, level: 1 })).toBeVisible();
}

test('a webhook to a local receiver: test event delivered, retries shown, redelivered', async ({
  page,
}) => {
  await createWebhook(page, 'Local receiver');
  await expectAccessible(page);

  // Filters: one event type and one project; none ticked means all.
  await page.getByRole('button', { name: 'Edit webhook' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit Local receiver' });
  await edit.getByLabel('flag.toggled').check();
  await edit.getByLabel('Project Web shop').check();
  await edit.getByLabel('Web shop / Production').check();
  await expectAccessible(page);
  await edit.getByRole('button', { name: 'Save webhook' }).click();
  await expect(edit).toBeHidden();
  const facts = page.getByRole('definition');
  await expect(facts.filter({ hasText: 'flag.toggled' })).toBeVisible();
  await expect(facts.filter({ hasText: 'Web shop' })).toBeVisible();
  await expect(facts.filter({ hasText: '1 chosen' })).toBeVisible();

  await page.getByRole('button', { name: 'Send test event' }).click();
  const deliveries = page.getByRole('region', { name: 'Deliveries' }).getByRole('listitem');
  await expect(deliveries.first()).toContainText('Succeeded', { timeout: 15_000 });
  const attempts = deliveries.first().getByRole('table', { name: 'Attempts of this delivery' });
  await expect(attempts.getByRole('row')).toHaveCount(2); // header and the one attempt
  await expect(attempts.getByRole('cell', { name: '204', exact: true })).toBeVisible();
  expect(receiver.requests).toHaveLength(1);
  expect(JSON.parse(receiver.requests[0]!.body)).toMatchObject({ type: 'flag.toggled' });
  await expectAccessible(page);

  // The receiver fails: every retry appears with its status code, then the delivery is
  // dead-lettered (the test server retries after 1 s and 1 s).
  receiver.failing = true;
  await page.getByRole('button', { name: 'Send test event' }).click();
  await expect(deliveries).toHaveCount(2);
  const failed = deliveries.first();
  await expect(failed).toContainText('Dead-lettered', { timeout: 20_000 });
  await expect(failed.getByRole('cell', { name: '500', exact: true })).toHaveCount(3);
  await expect(failed).toContainText('3 attempts');

  // Redeliver once the receiver works again: a fresh round of attempts that succeeds.
  receiver.failing = false;
  await failed.getByRole('button', { name: 'Redeliver' }).click();
  await expect(failed).toContainText('Succeeded', { timeout: 15_000 });
  await expect(failed.getByRole('cell', { name: '204', exact: true })).toBeVisible();

  // A refused redelivery explains itself: the subscription is disabled.
  await page.getByRole('button', { name: 'Disable' }).click();
  await expect(page.getByText('disabled by an administrator')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send test event' })).toHaveCount(0);
  await failed.getByRole('button', { name: 'Redeliver' }).click();
  await expect(failed.getByRole('alert')).toHaveText(
    'Not redelivered: The subscription is disabled; enable it first.',
  );
  await page.getByRole('button', { name: 'Enable' }).click();
  await expect(page.getByRole('button', { name: 'Send test event' })).toBeVisible();
});

test('rotating a secret: both active and signing, then the old one retired', async ({ page }) => {
  await createWebhook(page, 'Rotating receiver');
  const secrets = page.getByRole('region', { name: 'Signing secrets' });
  await expect(secrets).toContainText('1 active secret:');

  await secrets.getByRole('button', { name: 'Rotate secret' }).click();
  await expect(secrets.getByLabel('New signing secret')).toHaveValue(/^whsec_/);
  await expect(secrets).toContainText('2 active secrets:');
  await expect(secrets.getByRole('row', { name: /Secret 2 \(new\)/ })).toBeVisible();
  await expectAccessible(page);

  // Both secrets sign each delivery while both are active.
  await page.getByRole('button', { name: 'Send test event' }).click();
  await expect(
    page.getByRole('region', { name: 'Deliveries' }).getByRole('listitem').first(),
  ).toContainText('Succeeded', { timeout: 15_000 });
  const signatures = String(receiver.requests[0]!.headers['webhook-signature']).split(' ');
  expect(signatures).toHaveLength(2);

  await secrets.getByRole('button', { name: 'Retire secret 1' }).click();
  await expect(secrets).toContainText('1 active secret:');
  await expect(secrets.getByRole('row', { name: /Secret 1 \(new\)/ })).toBeVisible();

  // The last secret cannot be retired, and the console says why.
  await secrets.getByRole('button', { name: 'Retire secret 1' }).click();
  await expect(secrets.getByRole('alert')).toContainText(
    'This is the last active secret of the subscription',
  );
  await expect(secrets).toContainText('1 active secret:');
});

test('a subscription the service disabled says why', async ({ page }) => {
  const projects = await apiCall<{ items: { key: string }[] }>('GET', '/api/v1/orgs/acme/projects');
  if (!projects.items.some((project) => project.key === 'scratch'))
    await apiCall('POST', '/api/v1/orgs/acme/projects', {
      key: 'scratch',
      name: 'Scratch',
      environments: [{ key: 'sandbox' }],
    });
  const sandbox = await apiCall<{ id: string }>(
    'POST',
    '/api/v1/orgs/acme/projects/scratch/environments',
    { key: `sandbox-${Date.now()}` },
  );
  const webhook = await apiCall<{ id: string }>('POST', '/api/v1/orgs/acme/webhooks', {
    name: 'Sandbox only',
    url: receiverUrl,
    environmentIds: [sandbox.id],
  });
  // Deleting the only environment in its filter disables the subscription (spec: webhooks).
  await apiCall('DELETE', `/api/v1/orgs/acme/projects/scratch/environments/${sandbox.id}`);
  await signIn(page);
  await page.goto(`${server.url}/orgs/acme/projects/web/webhooks/${webhook.id}`);
  await expect(page.getByRole('heading', { name: 'Sandbox only', level: 1 })).toBeVisible();
  await expect(
    page.getByText('Disabled — its environment filter was emptied by a deletion'),
  ).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send test event' })).toHaveCount(0);
  await expect(page.getByText('(test events: the subscription is disabled)')).toBeVisible();
});

test('event types are chosen by resource; each delivery shows its event type and payload', async ({
  page,
}) => {
  await createWebhook(page, 'Grouped events');
  await page.getByRole('button', { name: 'Edit webhook' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit Grouped events' });
  const flags = edit.getByRole('group', { name: 'Flag events' });
  await flags.getByLabel('Every flag event').check();
  await expect(flags.getByLabel('flag.toggled')).toBeChecked();
  await expect(flags.getByLabel('flag.rule.created')).toBeChecked();
  await expect(
    edit.getByRole('group', { name: 'Segment events' }).getByLabel('segment.created'),
  ).not.toBeChecked();
  await expectAccessible(page);
  await edit.getByRole('button', { name: 'Save webhook' }).click();
  await expect(edit).toBeHidden();

  await page.getByRole('button', { name: 'Send test event' }).click();
  const delivery = page.getByRole('region', { name: 'Deliveries' }).getByRole('listitem').first();
  await expect(delivery).toHaveAccessibleName(/^flag\.toggled delivery of /);
  await delivery.getByText('Payload').click();
  await expect(delivery.getByLabel(/^Payload of /)).toContainText('"type": "flag.toggled"');
  await expectAccessible(page);
});
