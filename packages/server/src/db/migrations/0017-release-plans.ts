import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Release plans and their guards (design record 046): one plan row per flag and environment
 * (replaced when a new plan starts after the last one ended), and the guard's exposures, one
 * compact row per plan and user (the user's identity hashed), written by upserts that commute so
 * that every node and worker process can add to them.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('release_plans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('flag_id', 'text', (c) => c.notNull().references('flags.id').onDelete('cascade'))
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('variation_id', 'text', (c) => c.notNull())
    .addColumn('previous_variation_id', 'text', (c) => c.notNull())
    .addColumn('fallthrough_before', 'text', (c) => c.notNull())
    .addColumn('steps', 'text', (c) => c.notNull())
    .addColumn('guard', 'text')
    .addColumn('current_step', 'integer', (c) => c.notNull())
    .addColumn('next_step_at', 'text')
    .addColumn('paused_reason', 'text')
    .addColumn('regression', 'text')
    .addColumn('guard_checked_at', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('release_plans_flag_environment', ['flag_id', 'environment_id'])
    .execute();
  await db.schema
    .createIndex('release_plans_due')
    .on('release_plans')
    .columns(['state', 'next_step_at'])
    .execute();
  await db.schema
    .createTable('release_plan_exposures')
    .addColumn('plan_id', 'text', (c) =>
      c.notNull().references('release_plans.id').onDelete('cascade'),
    )
    .addColumn('user_hash', 'text', (c) => c.notNull())
    .addColumn('side', 'integer')
    .addColumn('exposed_ms', 'bigint')
    .addColumn('metric_ms', 'bigint')
    .addPrimaryKeyConstraint('release_plan_exposures_pk', ['plan_id', 'user_hash'])
    // SQLite: the primary key is the table, so a row is stored once rather than twice.
    .$call((table) => (dialect === 'sqlite' ? table.modifyEnd(sql`without rowid`) : table))
    .execute();
}
