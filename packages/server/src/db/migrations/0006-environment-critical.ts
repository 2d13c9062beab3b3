import { sql, type Kysely } from 'kysely';

/**
 * Environments marked critical (design record 025): an integer 0/1 like the other Booleans, on
 * both databases. Environments whose key starts with `prod` are marked, so the console keeps
 * asking for confirmation where it did before the field existed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('environments')
    .addColumn('critical', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`UPDATE environments SET critical = 1 WHERE lower(key) LIKE 'prod%'`.execute(db);
}
