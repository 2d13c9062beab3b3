import type { Kysely } from 'kysely';

/**
 * One-time setup codes (design record 040): the hash of each code a node printed at start while
 * the instance had no organization. Any of them opens the first-run setup once; setting up
 * deletes them all.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('setup_codes')
    .addColumn('code_hash', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
