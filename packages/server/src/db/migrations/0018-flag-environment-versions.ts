import { sql, type Kysely } from 'kysely';

/**
 * A flag's version in each environment (design record 052): the `version` an environment's
 * configuration document carries for the flag. It moves only when that environment's
 * configuration of the flag changes (or a change to the flag itself moves every environment's
 * version with it), so one environment version always means one document. Starts at the flag's
 * version, so every document reads as it did before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('flag_environments')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await sql`UPDATE flag_environments SET version = (SELECT flags.version FROM flags WHERE flags.id = flag_environments.flag_id)`.execute(
    db,
  );
}
