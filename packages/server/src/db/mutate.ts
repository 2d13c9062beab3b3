import type { Kysely, Transaction } from 'kysely';
import type { EventHub } from '../events/hub.js';
import { writeEvents } from '../events/outbox.js';
import type { Actor, NewEvent } from '../events/types.js';
import { bumpVersions } from './environment-versions.js';
import type { Schema } from './schema.js';

/** How often a transaction PostgreSQL aborted as a deadlock or serialization failure is retried. */
const RETRIES = 5;
/** The longest first pause before a retry (ms); it doubles with each further attempt. */
const FIRST_PAUSE_MS = 20;
/** SQLSTATEs of a transaction aborted only for colliding with another: `serialization_failure`, `deadlock_detected`. */
const TRANSIENT_SQLSTATE = new Set(['40001', '40P01']);

/** What a mutation can do inside its transaction. */
export interface Mutation {
  trx: Transaction<Schema>;
  /** The change's time, ISO-8601 UTC: every row and event of one mutation carries the same. */
  now: string;
  /**
   * Records an event in the outbox now, inside the transaction (order matters for deletions). An
   * update whose `changes` list is empty changed nothing and is not recorded (see {@link mutate}).
   */
  emit(event: NewEvent): Promise<void>;
  /**
   * Runs `notify` once the transaction has committed, once however often asked: e.g. waking the
   * delivery worker for deliveries queued by hand rather than through {@link emit}.
   */
  afterCommit(notify: () => void): void;
  /** Marks environments whose SDK configuration changed; their versions are bumped on commit. */
  touchEnvironments(environmentIds: Iterable<string>): void;
  /** Marks every environment of a project (a flag-level change affects them all). */
  touchProject(projectId: string): Promise<void>;
  /**
   * Marks a flag's SDK configuration changed: bumps `flags.version` and touches the given
   * environments, or every environment of its project. Call it before reading what the change
   * depends on: the row lock the bump takes serialises concurrent writes to one flag.
   */
  touchFlag(
    flag: { id: string; project_id: string },
    environmentIds?: Iterable<string>,
  ): Promise<void>;
}

/** Who changes data in which organization, when, and where the events go. */
export interface MutationScope {
  organizationId: string;
  actor: Actor;
  now: Date;
  events: EventHub;
}

/**
 * The one way to change data: runs `work` in a transaction, bumps the version of every
 * touched environment (without locking a shared row, `db/environment-versions.ts`), writes the
 * emitted events to the outbox in the same transaction (where the hub's subscribers see them),
 * and after commit publishes which environments changed and runs what was left for after commit
 * (design record 018). A transaction that PostgreSQL aborts as a deadlock or serialization
 * failure is run again from the start, up to {@link RETRIES} times after a random pause (design
 * record 036): `work` must keep its effects to the transaction and the {@link Mutation}.
 *
 * A write that changes nothing (every event it emitted lists no changed property, e.g. a PATCH
 * with the stored values) records no audit entry or event and bumps no configuration version, so
 * SDKs fetch nothing; its rows still commit, since a mutation may also hold writes that must,
 * such as a due-work claim (design record 048).
 */
export async function mutate<T>(
  db: Kysely<Schema>,
  scope: MutationScope,
  work: (mutation: Mutation) => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await attemptMutation(db, scope, work);
    } catch (error) {
      if (attempt >= RETRIES || !isTransient(error)) throw error;
      // Full jitter: colliding transactions come back at different moments.
      const pauseMs = Math.random() * FIRST_PAUSE_MS * 2 ** attempt;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

function isTransient(error: unknown): boolean {
  return TRANSIENT_SQLSTATE.has(String((error as { code?: unknown } | undefined)?.code));
}

/** An update that names no changed property: the write behind it changed nothing. */
function changesNothing(event: NewEvent): boolean {
  return event.changes !== undefined && event.changes.length === 0;
}

async function attemptMutation<T>(
  db: Kysely<Schema>,
  scope: MutationScope,
  work: (mutation: Mutation) => Promise<T>,
): Promise<T> {
  const touched = new Set<string>();
  const afterCommit = new Set<() => void>();
  const runAfterCommit = (notify: () => void) => void afterCommit.add(notify);
  const now = scope.now.toISOString();
  const emitted = { recorded: 0, unchanged: 0 };
  const result = await db.transaction().execute(async (trx) => {
    const touchProject = async (projectId: string) => {
      const rows = await trx
        .selectFrom('environments')
        .select('id')
        .where('project_id', '=', projectId)
        .execute();
      for (const row of rows) touched.add(row.id);
    };
    const mutation: Mutation = {
      trx,
      now,
      emit: (event) => {
        if (changesNothing(event)) {
          emitted.unchanged += 1;
          return Promise.resolve();
        }
        emitted.recorded += 1;
        return writeEvents(
          {
            trx,
            hub: scope.events,
            afterCommit: runAfterCommit,
            organizationId: scope.organizationId,
            actor: scope.actor,
            occurredAt: now,
          },
          [event],
        );
      },
      afterCommit: runAfterCommit,
      touchEnvironments: (ids) => {
        for (const id of ids) touched.add(id);
      },
      touchProject,
      touchFlag: async (flag, environmentIds) => {
        await trx
          .updateTable('flags')
          .set((eb) => ({ version: eb('version', '+', 1) }))
          .where('id', '=', flag.id)
          .execute();
        if (!environmentIds) return touchProject(flag.project_id);
        for (const id of environmentIds) touched.add(id);
      },
    };
    const value = await work(mutation);
    // Every event said nothing changed: neither do the SDK configurations it touched.
    if (emitted.unchanged > 0 && emitted.recorded === 0) touched.clear();
    await bumpVersions(trx, [...touched]);
    return value;
  });
  if (touched.size > 0) scope.events.committed({ environmentIds: [...touched] });
  for (const notify of afterCommit) notify();
  return result;
}
