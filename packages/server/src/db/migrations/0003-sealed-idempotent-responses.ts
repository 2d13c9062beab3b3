import type { Kysely } from 'kysely';

/**
 * Stored idempotent responses are sealed from now on (design record 015). Responses stored before
 * were kept as sent, and some hold a created token, SDK key or webhook secret in plain text: they
 * are removed rather than kept for the rest of their 24 hours. A retry of one of those requests
 * runs again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await (db as Kysely<{ idempotency_keys: { response_body: string | null } }>)
    .deleteFrom('idempotency_keys')
    .where('response_body', 'is not', null)
    .execute();
}
