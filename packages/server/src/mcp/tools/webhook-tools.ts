import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { asTool } from '../management-client.js';
import { OrgArgument, PageArguments, type ToolContext } from './tool-context.js';

const WEBHOOKS = '/api/v1/orgs/{org}/webhooks';
const WEBHOOK = `${WEBHOOKS}/{id}`;

const MANAGE_ACTIONS = [
  'create',
  'update',
  'enable',
  'disable',
  'delete',
  'add_secret',
  'retire_secret',
  'send_test',
] as const;

const WebhookArgument = z.string().min(1).describe('Webhook subscription id.');

const ManageInput = z
  .object({
    org: OrgArgument,
    action: z.enum(MANAGE_ACTIONS),
    webhook: WebhookArgument.optional().describe(
      'Webhook subscription id; required for every action except create.',
    ),
    name: z.string().optional().describe('create (required), update.'),
    url: z.string().optional().describe('Receiver URL: create (required), update.'),
    eventTypes: z
      .array(z.string())
      .optional()
      .describe('Event types to send; empty means all. create, update.'),
    projectIds: z.array(z.string()).optional().describe('Project ids to cover; empty means all.'),
    environmentIds: z
      .array(z.string())
      .optional()
      .describe('Environment ids to cover; empty means all.'),
    secretId: z.string().optional().describe('retire_secret: the secret to retire.'),
  })
  .superRefine((input, issues) => {
    if (input.action !== 'create' && !input.webhook)
      issues.addIssue({
        code: 'custom',
        path: ['webhook'],
        message: `is required for action ${input.action}`,
      });
    if (input.action === 'retire_secret' && !input.secretId)
      issues.addIssue({ code: 'custom', path: ['secretId'], message: 'is required' });
  });

/**
 * The spec's webhook tools (Management API, last paragraph), all Admin only, each a thin call to
 * its HTTP twin in webhooks/routes.ts and webhooks/delivery-routes.ts (design record 011).
 */
export function registerWebhookTools(server: McpServer, { client, schemas }: ToolContext): void {
  server.registerTool(
    'list_webhooks',
    {
      description: "Lists the organization's webhook subscriptions (paged). Admin only.",
      inputSchema: { org: OrgArgument, ...PageArguments },
      outputSchema: schemas('GET', WEBHOOKS),
      annotations: { readOnlyHint: true },
    },
    ({ org, limit, cursor }) =>
      asTool(() => client.send('GET', ['orgs', org, 'webhooks'], { query: { limit, cursor } })),
  );

  server.registerTool(
    'list_webhook_deliveries',
    {
      description:
        "Lists a webhook subscription's deliveries, most recent first (paged). Admin only.",
      inputSchema: { org: OrgArgument, webhook: WebhookArgument, ...PageArguments },
      outputSchema: schemas('GET', `${WEBHOOK}/deliveries`),
      annotations: { readOnlyHint: true },
    },
    ({ org, webhook, limit, cursor }) =>
      asTool(() =>
        client.send('GET', ['orgs', org, 'webhooks', webhook, 'deliveries'], {
          query: { limit, cursor },
        }),
      ),
  );

  server.registerTool(
    'deliver_webhook',
    {
      description:
        'Redelivers a finished delivery: a fresh round of attempts, due now. Refused while the ' +
        'delivery is pending, when the subscription is disabled, or when its filters no longer ' +
        'cover the event. Returns the delivery with its attempts. Admin only.',
      inputSchema: {
        org: OrgArgument,
        webhook: WebhookArgument,
        delivery: z.string().min(1).describe('Delivery id (from list_webhook_deliveries).'),
      },
      outputSchema: schemas('GET', `${WEBHOOK}/deliveries/{deliveryId}`),
    },
    ({ org, webhook, delivery }) =>
      asTool(async () => {
        const path = ['orgs', org, 'webhooks', webhook, 'deliveries', delivery];
        await client.send('POST', [...path, 'redeliver']);
        return client.send('GET', path);
      }),
  );

  server.registerTool(
    'manage_webhook',
    {
      description:
        'Changes a webhook subscription. Actions: create (name, url, optional filters; returns ' +
        'the signing secret once), update (any of name, url, filters), enable, disable, delete, ' +
        'add_secret (returns the new secret once), retire_secret (secretId), send_test (queues a ' +
        'test event to this subscription). Admin only.',
      inputSchema: ManageInput,
      outputSchema: z.object({
        action: z.enum(MANAGE_ACTIONS),
        webhook: schemas('GET', WEBHOOK)
          .optional()
          .describe('The subscription after the change (absent after delete).'),
        created: schemas('POST', WEBHOOKS, 201).optional().describe('create: id and secret.'),
        secret: schemas('POST', `${WEBHOOK}/secrets`, 201).optional().describe('add_secret.'),
        testEvent: schemas('POST', `${WEBHOOK}/test`, 202).optional().describe('send_test.'),
      }),
      annotations: { destructiveHint: true },
    },
    (input) =>
      asTool(async () => {
        const { org, action } = input;
        const path = ['orgs', org, 'webhooks'];
        const fields = {
          name: input.name,
          url: input.url,
          eventTypes: input.eventTypes,
          projectIds: input.projectIds,
          environmentIds: input.environmentIds,
        };
        if (action === 'create') {
          const created = await client.send<{ id: string }>('POST', path, { body: fields });
          return { action, created, webhook: await client.send('GET', [...path, created.id]) };
        }
        // The input schema makes `webhook` present for every other action.
        const webhookPath = [...path, input.webhook ?? ''];
        switch (action) {
          case 'update':
          case 'enable':
          case 'disable': {
            const body = action === 'update' ? fields : { enabled: action === 'enable' };
            return { action, webhook: await client.send('PATCH', webhookPath, { body }) };
          }
          case 'delete':
            await client.send('DELETE', webhookPath);
            return { action };
          case 'add_secret':
            return { action, secret: await client.send('POST', [...webhookPath, 'secrets']) };
          case 'retire_secret':
            await client.send('DELETE', [...webhookPath, 'secrets', input.secretId ?? '']);
            return { action, webhook: await client.send('GET', webhookPath) };
          case 'send_test':
            return { action, testEvent: await client.send('POST', [...webhookPath, 'test']) };
        }
      }),
  );
}
