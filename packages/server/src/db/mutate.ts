import type { Kysely, Transaction } from 'kysely';
import type { EventHub } from '../events/hub.js';
import { writeEvents } from '../events/outbox.js';
import type { Actor, ChangeRequestRef, NewEvent } from '../events/types.js';
import { bumpVersions } from './environment-versions.js';
import { checkChangeRequestPolicy, type WriteKind } from './write-policy.js';
import type { Schema } from './schema.js';

export type { WriteKind } from './write-policy.js';

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
  /**
   * Marks environments whose SDK configuration changed; their versions are bumped on commit.
   * `write` declares what the change is (see {@link WriteKind}; `serves` unless said otherwise).
   * @throws ApiError 409 `change_request_required` when a `serves` write reaches an environment
   *   whose policy requires change requests (design record 042).
   */
  touchEnvironments(environmentIds: Iterable<string>, write?: WriteKind): Promise<void>;
  /**
   * Marks every environment of a project (a flag-level or segment change affects them all).
   * @throws ApiError 409 `change_request_required` as {@link touchEnvironments}, when any
   *   environment of the project requires change requests.
   */
  touchProject(projectId: string, write?: WriteKind): Promise<void>;
  /**
   * Marks a flag's SDK configuration changed: bumps `flags.version` and touches the given
   * environments, or every environment of its project. Call it before reading what the change
   * depends on: the row lock the bump takes serialises concurrent writes to one flag. A serving
   * write (the default) also bumps, once per mutation, the `revision` of the flag's
   * configuration in each given environment, or without environments that of its variation set.
   * @returns whether the write went past a change-request policy as an emergency off
   * @throws ApiError 409 `change_request_required` as {@link touchEnvironments}.
   */
  touchFlag(
    flag: { id: string; project_id: string },
    environmentIds?: Iterable<string>,
    write?: WriteKind,
  ): Promise<{ bypassedChangeRequest: boolean }>;
}

/** Who changes data in which organization, when, and where the events go. */
export interface MutationScope {
  organizationId: string;
  actor: Actor;
  now: Date;
  events: EventHub;
  /**
   * The change request this mutation applies: its writes pass the change-request policy, and
   * every event it emits names the request (design record 042).
   */
  changeRequest?: ChangeRequestRef;
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

/**
 * Bumps the revision of the flag's configuration in each environment, or without environments
 * of its variation set, unless this mutation did already (`revised` holds what it did).
 */
async function bumpRevisions(
  trx: Transaction<Schema>,
  revised: Set<string>,
  flagId: string,
  environmentIds: string[] | undefined,
): Promise<void> {
  if (!environmentIds) {
    if (revised.has(flagId)) return;
    revised.add(flagId);
    await trx
      .updateTable('flags')
      .set((eb) => ({ variations_revision: eb('variations_revision', '+', 1) }))
      .where('id', '=', flagId)
      .execute();
    return;
  }
  const fresh = environmentIds.filter((id) => !revised.has(`${flagId}@${id}`));
  if (fresh.length === 0) return;
  for (const id of fresh) revised.add(`${flagId}@${id}`);
  await trx
    .updateTable('flag_environments')
    .set((eb) => ({ revision: eb('revision', '+', 1) }))
    .where('flag_id', '=', flagId)
    .where('environment_id', 'in', fresh)
    .execute();
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
    /** Targets whose revision this mutation bumped already: one change, one revision. */
    const revised = new Set<string>();
    const checkPolicy = (
      target: { environmentIds: string[] } | { projectId: string },
      write: WriteKind,
    ) => checkChangeRequestPolicy(trx, target, write, scope.changeRequest !== undefined);
    const touchEnvironments = async (ids: Iterable<string>, write: WriteKind = 'serves') => {
      const environmentIds = [...ids];
      await checkPolicy({ environmentIds }, write);
      for (const id of environmentIds) touched.add(id);
    };
    const touchProject = async (projectId: string, write: WriteKind = 'serves') => {
      await checkPolicy({ projectId }, write);
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
            changeRequest: scope.changeRequest,
          },
          [event],
        );
      },
      afterCommit: runAfterCommit,
      touchEnvironments,
      touchProject,
      touchFlag: async (flag, environmentIds, write = 'serves') => {
        await trx
          .updateTable('flags')
          .set((eb) => ({ version: eb('version', '+', 1) }))
          .where('id', '=', flag.id)
          .execute();
        const ids = environmentIds ? [...environmentIds] : undefined;
        const bypassedChangeRequest = await checkPolicy(
          ids ? { environmentIds: ids } : { projectId: flag.project_id },
          write,
        );
        if (write !== 'describes') await bumpRevisions(trx, revised, flag.id, ids);
        if (!ids) await touchProject(flag.project_id, 'describes');
        else for (const id of ids) touched.add(id);
        return { bypassedChangeRequest };
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
