import type { Kysely } from 'kysely';

/** Finished deliveries by completion time, for the delivery worker's retention (design record 005). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_completed')
    .on('webhook_deliveries')
    .columns(['completed_at'])
    .execute();
}
