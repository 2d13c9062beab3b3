import type { Kysely } from 'kysely';

/**
 * Indexes for retention: finished webhook deliveries by completion time (design record 005) and
 * usage counts by hour (design record 008).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_completed')
    .on('webhook_deliveries')
    .columns(['completed_at'])
    .execute();
  await db.schema.createIndex('flag_usage_hour').on('flag_usage').columns(['hour']).execute();
  await db.schema
    .createIndex('custom_event_usage_hour')
    .on('custom_event_usage')
    .columns(['hour'])
    .execute();
}
