import type { Transaction } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Schema, WebhookSubscriptionsTable } from '../db/schema.js';
import type { StoredEvent, WrittenEvents } from '../events/hub.js';
import { mayRead } from '../api/reach.js';
import { ENVIRONMENT_SCOPED_EVENT_TYPES, isAuditOnly, type EventPayload } from '../events/types.js';

/**
 * Whether a subscription's current filters cover an event (spec: Subscription filtering):
 * empty filters mean all; the environment filter narrows only environment-scoped events. A
 * subscription created by an allowlisted caller covers only events of that allowlist's projects
 * (design record 033).
 */
export function subscriptionCovers(
  subscription: Pick<
    WebhookSubscriptionsTable,
    'event_types' | 'project_ids' | 'environment_ids' | 'project_scope'
  >,
  event: Pick<EventPayload, 'type' | 'projectId' | 'environmentId'>,
): boolean {
  if (isAuditOnly(event.type)) return false;
  const projectScope =
    subscription.project_scope === null
      ? null
      : (JSON.parse(subscription.project_scope) as string[]);
  if (!mayRead({ projectScope }, event.projectId)) return false;
  const eventTypes = JSON.parse(subscription.event_types) as string[];
  const projectIds = JSON.parse(subscription.project_ids) as string[];
  const environmentIds = JSON.parse(subscription.environment_ids) as string[];
  if (eventTypes.length > 0 && !eventTypes.includes(event.type)) return false;
  if (projectIds.length > 0 && event.projectId && !projectIds.includes(event.projectId))
    return false;
  if (
    environmentIds.length > 0 &&
    ENVIRONMENT_SCOPED_EVENT_TYPES.has(event.type) &&
    event.environmentId &&
    !environmentIds.includes(event.environmentId)
  ) {
    return false;
  }
  return true;
}

/** Rows per insert: well under the bound parameters SQLite and PostgreSQL take in one statement. */
const ROWS_PER_INSERT = 500;

/**
 * Queues one `Pending` delivery per enabled subscription of the organization that covers each
 * event, inside the transaction that records the events: one read of the subscriptions for the
 * events written together (they share an organization: one mutation's), and one insert.
 * @returns how many deliveries were queued
 */
async function enqueueDeliveries(
  trx: Transaction<Schema>,
  events: readonly StoredEvent[],
): Promise<number> {
  const [first] = events;
  if (!first) return 0;
  const subscriptions = await trx
    .selectFrom('webhook_subscriptions')
    .select(['id', 'event_types', 'project_ids', 'environment_ids', 'project_scope'])
    .where('organization_id', '=', first.organizationId)
    .where('enabled', '=', 1)
    .execute();
  const rows = events.flatMap((event) =>
    subscriptions
      .filter((subscription) => subscriptionCovers(subscription, event))
      .map((subscription) => ({
        id: uuid(),
        event_id: event.id,
        subscription_id: subscription.id,
        status: 'Pending' as const,
        attempt_count: 0,
        next_attempt_at: event.occurredAt,
        created_at: event.occurredAt,
      })),
  );
  for (let at = 0; at < rows.length; at += ROWS_PER_INSERT)
    await trx
      .insertInto('webhook_deliveries')
      .values(rows.slice(at, at + ROWS_PER_INSERT))
      .execute();
  return rows.length;
}

/**
 * The webhook fan-out as an event hub subscriber (of events written together): queues their
 * deliveries in their transaction and, when it queued any, calls `deliveriesQueued` after commit.
 */
export function fanOutTo(deliveriesQueued: () => void): (written: WrittenEvents) => Promise<void> {
  return async (written) => {
    const events = written.events.map(({ event }) => event);
    if ((await enqueueDeliveries(written.trx, events)) > 0) written.afterCommit(deliveriesQueued);
  };
}
