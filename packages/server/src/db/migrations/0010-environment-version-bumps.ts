import type { Kysely } from 'kysely';

/**
 * Environment versions without a shared row (design record 036): every change appends a row per
 * environment it affects, and an environment's version is `environments.version` plus its rows.
 * Appending takes no lock another writer waits for; the rows are folded into
 * `environments.version` in the background.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('environment_version_bumps')
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('environment_version_bumps_environment')
    .on('environment_version_bumps')
    .column('environment_id')
    .execute();
}
