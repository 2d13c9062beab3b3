import { sql, type Kysely } from 'kysely';

/**
 * Rule rollouts in thousandths of a percent (design record 026): `rules.rollout_weight`
 * (0–100000, like the serve weights of a percentage rollout) becomes the stored rollout of a rule;
 * `rollout_percentage` is kept, written as the weight's whole percent rounded down, so readers of
 * the old column stay right. Existing rules get the weight of their whole percentage.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('rules').addColumn('rollout_weight', 'integer').execute();
  await sql`UPDATE rules SET rollout_weight = rollout_percentage * 1000 WHERE rollout_percentage IS NOT NULL`.execute(
    db,
  );
}
