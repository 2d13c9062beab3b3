import type { Kysely, Transaction } from 'kysely';
import { writeEvents } from '../events/outbox.js';
import type { Actor, NewEvent } from '../events/types.js';
import type { Schema } from './schema.js';

/** What a mutation can do inside its transaction. */
export interface Mutation {
  trx: Transaction<Schema>;
  /** The change's time, ISO-8601 UTC: every row and event of one mutation carries the same. */
  now: string;
  /** Records an event in the outbox now, inside the transaction (order matters for deletions). */
  emit(event: NewEvent): Promise<void>;
  /** Marks webhook deliveries queued by hand (not through {@link emit}): the worker is woken on commit. */
  deliveriesQueued(): void;
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

/** Called after commit with the environments whose configuration changed. */
export type ConfigChangeListener = (environmentIds: string[]) => void;

/**
 * The one way to change data: runs `work` in a transaction, bumps the version of every
 * touched environment, writes the emitted events to the outbox in the same transaction, and
 * after commit tells `onConfigChange` which environments changed and `onDeliveriesQueued` that
 * webhook deliveries await their first attempt.
 */
export async function mutate<T>(
  db: Kysely<Schema>,
  scope: {
    organizationId: string;
    actor: Actor;
    now: Date;
    onConfigChange: ConfigChangeListener;
    onDeliveriesQueued: () => void;
  },
  work: (mutation: Mutation) => Promise<T>,
): Promise<T> {
  const touched = new Set<string>();
  // Widened: the mutation's callbacks set it, which control-flow analysis does not see.
  let deliveriesQueued = false as boolean;
  const now = scope.now.toISOString();
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
      emit: async (event) => {
        const queued = await writeEvents(trx, scope.organizationId, scope.actor, now, [event]);
        if (queued > 0) deliveriesQueued = true;
      },
      deliveriesQueued: () => {
        deliveriesQueued = true;
      },
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
    if (touched.size > 0) {
      await trx
        .updateTable('environments')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', 'in', [...touched])
        .execute();
    }
    return value;
  });
  if (touched.size > 0) scope.onConfigChange([...touched]);
  if (deliveriesQueued) scope.onDeliveriesQueued();
  return result;
}
