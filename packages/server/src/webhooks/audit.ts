import type { WebhookSubscriptionsTable } from '../db/schema.js';
import type { NewEvent, PropertyChange } from '../events/types.js';

/** The members of a subscription an update can change, under the API's own names. */
const AUDITED_MEMBERS = [
  ['name', 'name'],
  ['url', 'url'],
  ['eventTypes', 'event_types'],
  ['projectIds', 'project_ids'],
  ['environmentIds', 'environment_ids'],
  ['enabled', 'enabled'],
] as const;

type Subscription = Pick<
  WebhookSubscriptionsTable,
  'id' | 'name' | (typeof AUDITED_MEMBERS)[number][1]
>;

/** How a member reads in the audit log: filters as their JSON text, `enabled` as true or false. */
function shown(row: Subscription, column: (typeof AUDITED_MEMBERS)[number][1]): string {
  const value = row[column];
  return column === 'enabled' ? String(value === 1) : String(value);
}

/**
 * The audit entry of a change to a webhook subscription or its signing secrets (issue 43): an
 * audit-only event (`AUDIT_ONLY_EVENT_TYPES`), never delivered. Secrets appear by id only.
 */
export function subscriptionEvent(
  type: 'webhook.created' | 'webhook.deleted',
  row: Pick<WebhookSubscriptionsTable, 'id' | 'name'>,
): NewEvent {
  const verb = type === 'webhook.created' ? 'created' : 'deleted';
  return {
    type,
    entity: { type: 'webhook', id: row.id, key: null },
    description: `Webhook subscription "${row.name}" ${verb}`,
  };
}

/** The audit entry of an update, with each member it changed; null when nothing changed. */
export function subscriptionUpdateEvent(
  before: Subscription,
  after: Subscription,
): NewEvent | null {
  const changes: PropertyChange[] = AUDITED_MEMBERS.filter(
    ([, column]) => shown(before, column) !== shown(after, column),
  ).map(([property, column]) => ({
    property,
    from: shown(before, column),
    to: shown(after, column),
  }));
  if (changes.length === 0) return null;
  return {
    type: 'webhook.updated',
    entity: { type: 'webhook', id: after.id, key: null },
    changes,
    description: `Webhook subscription "${after.name}" updated`,
  };
}

/** The audit entry of a signing secret added to or retired from a subscription. */
export function secretEvent(
  type: 'webhook.secret.created' | 'webhook.secret.retired',
  row: Pick<WebhookSubscriptionsTable, 'id' | 'name'>,
  secretId: string,
): NewEvent {
  const verb = type === 'webhook.secret.created' ? 'added to' : 'retired from';
  return {
    type,
    entity: { type: 'webhook', id: row.id, key: null },
    child: { type: 'webhook_secret', id: secretId },
    description: `Signing secret ${verb} webhook subscription "${row.name}"`,
  };
}
