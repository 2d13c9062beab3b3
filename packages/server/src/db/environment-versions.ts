import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Schema } from './schema.js';

/**
 * Environment configuration versions that writers never contend on (design record 036).
 *
 * An environment's version is `environments.version` plus the number of its rows in
 * `environment_version_bumps`. A change appends one row per environment it affects: an insert
 * locks no row that another writer waits for, so writes to one project run side by side. A read
 * sees the rows of exactly the transactions committed before its snapshot, so the version grows
 * with every committed change, in commit order, whatever order the writers started in (a
 * sequence number would not: one taken earlier can commit later). {@link foldVersionBumps} moves
 * the rows into `environments.version` now and then, which leaves every version unchanged.
 */

/**
 * Records that a change in the current transaction affects `environmentIds`; those the change
 * deleted have no version left to bump and are passed over.
 */
export async function bumpVersions(
  trx: Transaction<Schema>,
  environmentIds: readonly string[],
): Promise<void> {
  if (environmentIds.length === 0) return;
  await trx
    .insertInto('environment_version_bumps')
    .columns(['environment_id'])
    .expression(trx.selectFrom('environments').select('id').where('id', 'in', environmentIds))
    .execute();
}

/** The configuration version of the `environments` row in scope, as a select expression. */
export function environmentVersion(): RawBuilder<number> {
  return sql<number>`environments.version + (select count(*) from environment_version_bumps b where b.environment_id = environments.id)`;
}

/** The current versions of the given environments, by id (deleted ones are missing). */
export async function readVersions(
  db: Kysely<Schema>,
  environmentIds: readonly string[],
): Promise<Map<string, number>> {
  if (environmentIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('environments')
    .select(['id', environmentVersion().as('version')])
    .where('id', 'in', environmentIds)
    .execute();
  return new Map(rows.map((row) => [row.id, row.version]));
}

/**
 * Moves the appended rows into `environments.version`, so that reading a version stays cheap.
 * Each deleted row is counted by the one transaction that deleted it, so nodes may fold at the
 * same time; environments are updated in id order, so two folds never deadlock.
 */
export async function foldVersionBumps(db: Kysely<Schema>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const folded = await trx
      .deleteFrom('environment_version_bumps')
      .returning('environment_id')
      .execute();
    const counts = new Map<string, number>();
    for (const { environment_id: id } of folded) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const id of [...counts.keys()].sort()) {
      await trx
        .updateTable('environments')
        .set((eb) => ({ version: eb('version', '+', counts.get(id) ?? 0) }))
        .where('id', '=', id)
        .execute();
    }
  });
}
