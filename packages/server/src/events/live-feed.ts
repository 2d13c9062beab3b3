import type { Transaction } from 'kysely';
import type { Schema } from '../db/schema.js';
import type { WrittenEvent } from './hub.js';
import type { EntityRef, EventType } from './types.js';

/** An entity as a live-feed subscriber sees it: its kind, id and, where it has one, its key. */
export interface LiveEntity {
  type: string;
  id: string;
  /** The key (the slug of an organization); null for entities without one or already deleted. */
  key: string | null;
}

/**
 * A committed management change as the console's event stream carries it (design record 026):
 * what happened and to what, never the data itself (no description, actor or changed values;
 * clients re-read what they show, with their own permissions).
 */
export interface LiveChange {
  /** The event's id in the outbox (`webhook_events.id`). */
  id: string;
  type: EventType;
  occurredAt: string;
  organizationId: string;
  project: { id: string; key: string | null } | null;
  environment: { id: string; key: string | null } | null;
  entity: LiveEntity;
  child: EntityRef | null;
}

/** Tables whose rows have a key, by entity type. */
const KEYED_TABLES = {
  flag: 'flags',
  segment: 'segments',
  environment: 'environments',
  project: 'projects',
} as const;

async function keyOf(
  trx: Transaction<Schema>,
  type: string,
  id: string | null,
): Promise<string | null> {
  if (id === null) return null;
  if (type === 'organization') {
    const org = await trx
      .selectFrom('organizations')
      .select('slug')
      .where('id', '=', id)
      .executeTakeFirst();
    return org?.slug ?? null;
  }
  if (!(type in KEYED_TABLES)) return null;
  const table = KEYED_TABLES[type as keyof typeof KEYED_TABLES];
  const row = await trx.selectFrom(table).select('key').where('id', '=', id).executeTakeFirst();
  return row?.key ?? null;
}

/**
 * The live feed of committed management changes on this node (design record 026): fed from the
 * event hub after commit (changes made here) and from the node bus (changes committed on other
 * nodes); read by `GET /api/v1/orgs/{org}/events/stream`. Each subscriber filters for itself.
 */
export class LiveFeed {
  private readonly subscribers = new Set<(change: LiveChange) => void>();
  private relay: (change: LiveChange) => void = () => {};

  /** Listens to every change; returns the function that stops listening. */
  subscribe(subscriber: (change: LiveChange) => void): () => void {
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
  }

  /** Tells this node's subscribers of a change (committed here or, via the bus, elsewhere). */
  publish(change: LiveChange): void {
    for (const subscriber of this.subscribers) subscriber(change);
  }

  /** Where changes committed on this node are also sent: the node bus, for the other nodes. */
  relayTo(relay: (change: LiveChange) => void): void {
    this.relay = relay;
  }

  /**
   * The event hub's `written` subscriber: reads the keys inside the writing transaction (a
   * deleted row's key is gone after commit) and publishes once it has committed.
   */
  readonly onWritten = async (written: WrittenEvent): Promise<void> => {
    const { trx, event } = written;
    // One after another: a transaction is one connection.
    const entityKey = await keyOf(trx, event.entity.type, event.entity.id);
    const projectKey = await keyOf(trx, 'project', event.projectId);
    const environmentKey = await keyOf(trx, 'environment', event.environmentId);
    const change: LiveChange = {
      id: event.id,
      type: event.type,
      occurredAt: event.occurredAt,
      organizationId: event.organizationId,
      project: event.projectId ? { id: event.projectId, key: projectKey } : null,
      environment: event.environmentId ? { id: event.environmentId, key: environmentKey } : null,
      entity: { ...event.entity, key: entityKey },
      child: event.child ?? null,
    };
    written.afterCommit(() => {
      this.publish(change);
      this.relay(change);
    });
  };
}
