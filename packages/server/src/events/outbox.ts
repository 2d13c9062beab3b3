import type { Transaction } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Schema } from '../db/schema.js';
import type { EventHub } from './hub.js';
import type { Actor, ChangeRequestRef, EventPayload, NewEvent } from './types.js';

/** Where and as whom a mutation writes its events. */
export interface Outbox {
  trx: Transaction<Schema>;
  hub: EventHub;
  /** Collects what subscribers run once the transaction has committed. */
  afterCommit: (notify: () => void) => void;
  organizationId: string;
  actor: Actor;
  /** The mutation's time, ISO-8601 UTC. */
  occurredAt: string;
  /** The change request the mutation applies, named by each event (design record 042). */
  changeRequest?: ChangeRequestRef | undefined;
}

/** Rows per insert: well under the bound parameters SQLite and PostgreSQL take in one statement. */
const ROWS_PER_INSERT = 500;

/**
 * Writes events into the outbox inside the caller's transaction, so a change and its events
 * commit together or not at all, in one insert (per {@link ROWS_PER_INSERT}), and publishes them
 * to the hub's in-transaction subscribers (webhook fan-out queues their deliveries there).
 */
export async function writeEvents(outbox: Outbox, events: NewEvent[]): Promise<void> {
  const { trx, hub, afterCommit, organizationId, actor, occurredAt, changeRequest } = outbox;
  if (events.length === 0) return;
  const written = events.map((event) => {
    const named = event.changeRequest ?? changeRequest;
    const payload: EventPayload = {
      type: event.type,
      occurredAt,
      organizationId,
      projectId: event.project?.id ?? null,
      environmentId: event.environment?.id ?? null,
      actor,
      entity: { type: event.entity.type, id: event.entity.id },
      ...(event.child ? { child: event.child } : {}),
      changes: event.changes ?? [],
      description: event.description,
      ...(event.children ? { children: event.children } : {}),
      ...(named ? { changeRequest: named } : {}),
      ...(event.bypassedChangeRequest ? { bypassedChangeRequest: true as const } : {}),
    };
    const keys = {
      project: event.project?.key ?? null,
      environment: event.environment?.key ?? null,
      entity: event.entity.key,
    };
    return { event: { id: uuid(), ...payload }, keys };
  });
  for (let at = 0; at < written.length; at += ROWS_PER_INSERT)
    await trx
      .insertInto('webhook_events')
      .values(
        written.slice(at, at + ROWS_PER_INSERT).map(({ event: { id, ...payload } }) => ({
          id,
          organization_id: organizationId,
          project_id: payload.projectId,
          environment_id: payload.environmentId,
          type: payload.type,
          payload: JSON.stringify(payload),
          occurred_at: occurredAt,
        })),
      )
      .execute();
  await hub.written({ trx, events: written, afterCommit });
}
