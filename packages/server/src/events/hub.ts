import type { Transaction } from 'kysely';
import type { Schema } from '../db/schema.js';
import type { EventPayload } from './types.js';

/** An event as written to the outbox: its payload and its row id. */
export type StoredEvent = { id: string } & EventPayload;

/** An event being written, as subscribers see it inside the writing transaction. */
export interface WrittenEvent {
  trx: Transaction<Schema>;
  event: StoredEvent;
  /**
   * The keys of the event's project, environment and entity as the mutation knew them (design
   * record 026); null where there is none. Not part of the stored event: webhooks carry ids.
   */
  keys: { project: string | null; environment: string | null; entity: string | null };
  /** Runs `notify` once the transaction has committed (once per mutation, however often asked). */
  afterCommit: (notify: () => void) => void;
}

/** Events written together (one statement), as subscribers of whole batches see them. */
export interface WrittenEvents {
  trx: Transaction<Schema>;
  events: Pick<WrittenEvent, 'event' | 'keys'>[];
  afterCommit: (notify: () => void) => void;
}

/** What a committed mutation changed, as subscribers hear it after commit. */
export interface CommittedChange {
  /** Environments whose SDK configuration changed; their versions have been bumped. */
  environmentIds: string[];
}

/**
 * The seam between what a mutation writes and what consumes it (design record 018): the writers
 * (`db/mutate.ts`, `events/outbox.ts`) publish here and import none of the subscribers (webhook
 * fan-out, snapshot invalidation and with it streaming, the cross-node bus), which the
 * composition root subscribes.
 */
export class EventHub {
  private readonly writtenSubscribers: ((written: WrittenEvent) => Promise<void> | void)[] = [];
  private readonly batchSubscribers: ((written: WrittenEvents) => Promise<void> | void)[] = [];
  private readonly committedSubscribers: ((change: CommittedChange) => void)[] = [];

  /** Subscribes to every event inside its transaction: what it writes commits with the event. */
  onWritten(subscriber: (written: WrittenEvent) => Promise<void> | void): void {
    this.writtenSubscribers.push(subscriber);
  }

  /**
   * Subscribes to events inside their transaction a batch at a time (the events one write of the
   * outbox holds, often one), for subscribers that save a query per event by taking them together.
   */
  onWrittenTogether(subscriber: (written: WrittenEvents) => Promise<void> | void): void {
    this.batchSubscribers.push(subscriber);
  }

  /** Subscribes to every committed change of SDK configuration. */
  onCommitted(subscriber: (change: CommittedChange) => void): void {
    this.committedSubscribers.push(subscriber);
  }

  /** Publishes events inside their transaction; a subscriber's failure rolls the mutation back. */
  async written(written: WrittenEvents): Promise<void> {
    for (const subscriber of this.batchSubscribers) await subscriber(written);
    for (const { event, keys } of written.events)
      for (const subscriber of this.writtenSubscribers)
        await subscriber({ trx: written.trx, event, keys, afterCommit: written.afterCommit });
  }

  /** Publishes a committed change. */
  committed(change: CommittedChange): void {
    for (const subscriber of this.committedSubscribers) subscriber(change);
  }
}
