import type { Kysely } from 'kysely';

/**
 * Flag metadata (design record 020): a JSON object of string, number and Boolean values, stored
 * as JSON text like `tags`, on both databases. Existing flags get none (`{}`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('flags')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();
}
