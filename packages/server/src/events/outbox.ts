import type { Transaction } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Schema } from '../db/schema.js';
import { enqueueDeliveries } from '../webhooks/fan-out.js';
import type { Actor, EventPayload, NewEvent } from './types.js';

/**
 * Writes events into the outbox inside the caller's transaction, so a change and its events
 * commit together or not at all; the deliveries to matching subscriptions are queued in the
 * same transaction.
 * @returns how many deliveries were queued
 */
export async function writeEvents(
  trx: Transaction<Schema>,
  organizationId: string,
  actor: Actor,
  occurredAt: string,
  events: NewEvent[],
): Promise<number> {
  let queued = 0;
  for (const event of events) {
    const payload: EventPayload = {
      type: event.type,
      occurredAt,
      organizationId,
      projectId: event.projectId ?? null,
      environmentId: event.environmentId ?? null,
      actor,
      entity: event.entity,
      ...(event.child ? { child: event.child } : {}),
      changes: event.changes ?? [],
      description: event.description,
      ...(event.children ? { children: event.children } : {}),
    };
    const id = uuid();
    await trx
      .insertInto('webhook_events')
      .values({
        id,
        organization_id: organizationId,
        project_id: payload.projectId,
        environment_id: payload.environmentId,
        type: payload.type,
        payload: JSON.stringify(payload),
        occurred_at: occurredAt,
      })
      .execute();
    queued += await enqueueDeliveries(trx, { id, ...payload });
  }
  return queued;
}
