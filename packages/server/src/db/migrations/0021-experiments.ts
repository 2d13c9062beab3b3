import { sql, type CreateTableBuilder, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Metrics and experiments (contract `experiments.md`, design record 064): a project's metric
 * catalogue, experiments on a flag's fallthrough in one environment, and what results are read
 * from — one row per experiment and exposed user (the variation and time of the first exposure),
 * one row per experiment, metric and user holding that user's counted events (added to by
 * upserts that commute, so every node adds to the same rows), and the points of the results'
 * series. The fallthrough of a running experiment buckets with the experiment's salt.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  // SQLite: the primary key is the table, so a row is stored once rather than twice.
  const compact = <T extends string>(table: CreateTableBuilder<T>) =>
    dialect === 'sqlite' ? table.modifyEnd(sql`without rowid`) : table;
  await db.schema
    .createTable('metrics')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('value_property', 'text')
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('window_hours', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('metrics_project_key', ['project_id', 'key'])
    .execute();
  await db.schema
    .createTable('experiments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('flag_id', 'text', (c) => c.notNull().references('flags.id').onDelete('cascade'))
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('hypothesis', 'text')
    .addColumn('variations', 'text', (c) => c.notNull())
    .addColumn('control_variation', 'text', (c) => c.notNull())
    .addColumn('metrics', 'text', (c) => c.notNull())
    .addColumn('confidence', 'double precision', (c) => c.notNull())
    .addColumn('minimum_users', 'integer', (c) => c.notNull())
    .addColumn('salt', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('decision', 'text')
    .addColumn('fallthrough_before', 'text')
    .addColumn('primary_verdicts', 'text')
    .addColumn('checked_at', 'text')
    .addColumn('srm_detected_at', 'text')
    .addColumn('started_at', 'text')
    .addColumn('stopped_at', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('experiments_flag_environment_key', ['flag_id', 'environment_id', 'key'])
    .execute();
  await db.schema
    .createIndex('experiments_project_status')
    .on('experiments')
    .columns(['project_id', 'status'])
    .execute();
  await db.schema
    .createTable('experiment_exposures')
    .addColumn('experiment_id', 'text', (c) =>
      c.notNull().references('experiments.id').onDelete('cascade'),
    )
    .addColumn('user_hash', 'text', (c) => c.notNull())
    .addColumn('variation', 'text', (c) => c.notNull())
    .addColumn('exposed_ms', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('experiment_exposures_pk', ['experiment_id', 'user_hash'])
    .$call(compact)
    .execute();
  await db.schema
    .createTable('experiment_metric_users')
    .addColumn('experiment_id', 'text', (c) =>
      c.notNull().references('experiments.id').onDelete('cascade'),
    )
    .addColumn('metric_id', 'text', (c) => c.notNull())
    .addColumn('user_hash', 'text', (c) => c.notNull())
    .addColumn('variation', 'text', (c) => c.notNull())
    .addColumn('events', 'integer', (c) => c.notNull())
    .addColumn('with_value', 'integer', (c) => c.notNull())
    .addColumn('value_sum', 'double precision', (c) => c.notNull())
    .addPrimaryKeyConstraint('experiment_metric_users_pk', [
      'experiment_id',
      'metric_id',
      'user_hash',
    ])
    .$call(compact)
    .execute();
  await db.schema
    .createTable('experiment_series')
    .addColumn('experiment_id', 'text', (c) =>
      c.notNull().references('experiments.id').onDelete('cascade'),
    )
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('points', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('experiment_series_pk', ['experiment_id', 'at'])
    .execute();
  await db.schema.alterTable('flag_environments').addColumn('rollout_salt', 'text').execute();
}
