import type { Kysely } from 'kysely';

/**
 * What an applied change request changed, as it was when applied (design record 042, issue 43):
 * the `diff` computed against the project inside the apply's transaction, before its writes, as
 * JSON. The detail of an applied request shows it, instead of a diff against the project as it is
 * now (where before equals after, and a later revision reads as a conflict). Null for requests
 * not applied, and for those applied before this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('change_requests').addColumn('applied_diff', 'text').execute();
}
