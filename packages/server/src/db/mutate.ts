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
   * Records an event in the outbox now (inside {@link emitTogether}, when that ends), inside the
   * transaction (order matters for deletions). An update whose `changes` list is empty changed
   * nothing and is not recorded (see {@link mutate}).
   */
  emit(event: NewEvent): Promise<void>;
  /**
   * Runs `work` with the events it emits held back, then writes them together, in their order:
   * one insert and one fan-out for a write of many targets (a change request's apply, design
   * record 042) instead of a few statements per event. Inside `work` its events are not yet in
   * the outbox, so it must not be work that reads the outbox or changes webhook subscriptions.
   */
  emitTogether<T>(work: () => Promise<T>): Promise<T>;
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
   * Marks a flag's SDK configuration changed: bumps `flags.version` (and, once per mutation, the
   * flag's version in each given environment or in all, design record 052) and touches the given
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
  /**
   * Locks the rows of a project's flags named by `keys` in one statement (an update that changes
   * nothing), for writes to many flags at once (a change request's apply, design record 042).
   * Holding their locks, {@link touchFlag} on these flags no longer bumps their version and
   * revisions one statement at a time: the bumps are made in a few batched statements when the
   * work ends, so until then `flags.version` and the revisions of these flags read as they were.
   * @returns the ids of the flags locked
   */
  lockFlags(projectId: string, keys: readonly string[]): Promise<string[]>;
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

/**
 * Bumps owed by flags whose rows a mutation locked up front ({@link Mutation.lockFlags}), made in
 * a few statements when its work ends instead of one to three per write.
 */
class DeferredFlagBumps {
  /** How many times each locked flag was touched: its version goes up by as much. */
  private readonly versions = new Map<string, number>();
  /** Flags whose variation-set revision is owed. */
  private readonly variationSets = new Set<string>();
  /** By environment, flags whose configuration revision there is owed. */
  private readonly configurations = new Map<string, Set<string>>();

  touched(flagId: string): void {
    this.versions.set(flagId, (this.versions.get(flagId) ?? 0) + 1);
  }

  revised(flagId: string, environmentIds: string[] | undefined): void {
    if (!environmentIds) {
      this.variationSets.add(flagId);
      return;
    }
    for (const id of environmentIds) {
      const flags = this.configurations.get(id) ?? new Set<string>();
      flags.add(flagId);
      this.configurations.set(id, flags);
    }
  }

  async write(trx: Transaction<Schema>): Promise<void> {
    const byCount = new Map<number, string[]>();
    for (const [flagId, count] of this.versions)
      byCount.set(count, [...(byCount.get(count) ?? []), flagId]);
    for (const [count, flagIds] of byCount)
      await trx
        .updateTable('flags')
        .set((eb) => ({ version: eb('version', '+', count) }))
        .where('id', 'in', flagIds)
        .execute();
    if (this.variationSets.size > 0)
      await trx
        .updateTable('flags')
        .set((eb) => ({ variations_revision: eb('variations_revision', '+', 1) }))
        .where('id', 'in', [...this.variationSets])
        .execute();
    for (const [environmentId, flagIds] of this.configurations)
      await trx
        .updateTable('flag_environments')
        .set((eb) => ({ revision: eb('revision', '+', 1) }))
        .where('environment_id', '=', environmentId)
        .where('flag_id', 'in', [...flagIds])
        .execute();
  }
}

/** {@link bumpRevisions} for a flag whose row the mutation holds: owed, made when the work ends. */
function deferRevisions(
  revised: Set<string>,
  deferred: DeferredFlagBumps,
  flagId: string,
  environmentIds: string[] | undefined,
): void {
  if (!environmentIds) {
    if (revised.has(flagId)) return;
    revised.add(flagId);
    deferred.revised(flagId, undefined);
    return;
  }
  const fresh = environmentIds.filter((id) => !revised.has(`${flagId}@${id}`));
  for (const id of fresh) revised.add(`${flagId}@${id}`);
  if (fresh.length > 0) deferred.revised(flagId, fresh);
}

/**
 * The flags whose version in some environments a mutation moves, written when its work ends and
 * only when the environments' versions move with them (design record 052): a write that changes
 * nothing must not change a document under its version.
 */
class FlagEnvironmentVersions {
  /** Flags changed in every environment (a flag-level change). */
  private readonly everywhere = new Set<string>();
  /** By environment, flags whose configuration there changed. */
  private readonly byEnvironment = new Map<string, Set<string>>();

  touched(flagId: string, environmentIds: string[] | undefined): void {
    if (!environmentIds) {
      this.everywhere.add(flagId);
      return;
    }
    for (const id of environmentIds) {
      const flags = this.byEnvironment.get(id) ?? new Set<string>();
      flags.add(flagId);
      this.byEnvironment.set(id, flags);
    }
  }

  async write(trx: Transaction<Schema>): Promise<void> {
    if (this.everywhere.size > 0)
      await trx
        .updateTable('flag_environments')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('flag_id', 'in', [...this.everywhere])
        .execute();
    for (const [environmentId, flagIds] of this.byEnvironment) {
      const rest = [...flagIds].filter((id) => !this.everywhere.has(id));
      if (rest.length === 0) continue;
      await trx
        .updateTable('flag_environments')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('environment_id', '=', environmentId)
        .where('flag_id', 'in', rest)
        .execute();
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
    /** Targets whose revision this mutation bumped already: one change, one revision. */
    const revised = new Set<string>();
    /** Flags whose rows this mutation locked up front (`lockFlags`), and the bumps they owe. */
    const locked = new Set<string>();
    const deferred = new DeferredFlagBumps();
    const flagVersions = new FlagEnvironmentVersions();
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
    const outbox = {
      trx,
      hub: scope.events,
      afterCommit: runAfterCommit,
      organizationId: scope.organizationId,
      actor: scope.actor,
      occurredAt: now,
      changeRequest: scope.changeRequest,
    };
    /** Events held back by `emitTogether`, while it runs. */
    let held: NewEvent[] | null = null;
    const mutation: Mutation = {
      trx,
      now,
      emit: async (event) => {
        if (changesNothing(event)) {
          emitted.unchanged += 1;
          return;
        }
        emitted.recorded += 1;
        if (held) held.push(event);
        else await writeEvents(outbox, [event]);
      },
      emitTogether: async (together) => {
        if (held) return together();
        const events: NewEvent[] = [];
        held = events;
        try {
          const value = await together();
          held = null;
          await writeEvents(outbox, events);
          return value;
        } finally {
          held = null;
        }
      },
      afterCommit: runAfterCommit,
      touchEnvironments,
      touchProject,
      touchFlag: async (flag, environmentIds, write = 'serves') => {
        const held = locked.has(flag.id);
        if (held) deferred.touched(flag.id);
        else
          await trx
            .updateTable('flags')
            .set((eb) => ({ version: eb('version', '+', 1) }))
            .where('id', '=', flag.id)
            .execute();
        const ids = environmentIds ? [...environmentIds] : undefined;
        flagVersions.touched(flag.id, ids);
        const bypassedChangeRequest = await checkPolicy(
          ids ? { environmentIds: ids } : { projectId: flag.project_id },
          write,
        );
        if (write !== 'describes' && held) deferRevisions(revised, deferred, flag.id, ids);
        else if (write !== 'describes') await bumpRevisions(trx, revised, flag.id, ids);
        if (!ids) await touchProject(flag.project_id, 'describes');
        else for (const id of ids) touched.add(id);
        return { bypassedChangeRequest };
      },
      lockFlags: async (projectId, keys) => {
        if (keys.length === 0) return [];
        const rows = await trx
          .updateTable('flags')
          .set((eb) => ({ version: eb.ref('version') }))
          .where('project_id', '=', projectId)
          .where('key', 'in', keys)
          .returning('id')
          .execute();
        for (const row of rows) locked.add(row.id);
        return rows.map((row) => row.id);
      },
    };
    const value = await work(mutation);
    await deferred.write(trx);
    // Every event said nothing changed: neither do the SDK configurations it touched.
    if (emitted.unchanged > 0 && emitted.recorded === 0) touched.clear();
    else await flagVersions.write(trx);
    await bumpVersions(trx, [...touched]);
    return value;
  });
  if (touched.size > 0) scope.events.committed({ environmentIds: [...touched] });
  for (const notify of afterCommit) notify();
  return result;
}
