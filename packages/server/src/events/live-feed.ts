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
   * The event hub's `written` subscriber: publishes the change, with the keys the mutation
   * passed along, once its transaction has committed. No query: nothing is read for the feed,
   * whether or not anyone listens.
   */
  readonly onWritten = ({ event, keys, afterCommit }: WrittenEvent): void => {
    const change: LiveChange = {
      id: event.id,
      type: event.type,
      occurredAt: event.occurredAt,
      organizationId: event.organizationId,
      project: event.projectId ? { id: event.projectId, key: keys.project } : null,
      environment: event.environmentId ? { id: event.environmentId, key: keys.environment } : null,
      entity: { ...event.entity, key: keys.entity },
      child: event.child ?? null,
    };
    afterCommit(() => {
      this.publish(change);
      this.relay(change);
    });
  };
}
