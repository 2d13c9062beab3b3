import type { Kysely } from 'kysely';

/**
 * A webhook subscription keeps the project allowlist of the caller who created it (design record
 * 033): `webhook_subscriptions.project_scope`, a JSON array of project ids, or null for a
 * subscription created without an allowlist (every existing one). Fan-out sends a scoped
 * subscription only the events of those projects, never organization-wide ones.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_subscriptions').addColumn('project_scope', 'text').execute();
}
