import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Change requests (design record 042): the policy on environments, the revisions that are a
 * change's optimistic-concurrency token, each project's change-request counter, the requests and
 * their reviews. A segment's revision is its existing `version`.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .alterTable('environments')
    .addColumn('change_requests_required', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('environments')
    .addColumn('change_request_approvals', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('environments')
    .addColumn('change_request_emergency_off', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('flag_environments')
    .addColumn('revision', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('flags')
    .addColumn('variations_revision', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('projects')
    .addColumn('change_request_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('change_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('author', 'text', (c) => c.notNull())
    .addColumn('author_id', 'text', (c) => c.notNull())
    .addColumn('changes', 'text', (c) => c.notNull())
    .addColumn('approvals_required', 'integer', (c) => c.notNull())
    .addColumn('apply_at', ts)
    .addColumn('applied_at', ts)
    .addColumn('applied_by', 'text')
    .addColumn('failure', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('change_requests_project_number', ['project_id', 'number'])
    .execute();
  await db.schema
    .createIndex('change_requests_due')
    .on('change_requests')
    .columns(['state', 'apply_at'])
    .execute();

  await db.schema
    .createTable('change_request_reviews')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('change_request_id', 'text', (c) =>
      c.notNull().references('change_requests.id').onDelete('cascade'),
    )
    .addColumn('reviewer_id', 'text', (c) => c.notNull())
    .addColumn('reviewer', 'text', (c) => c.notNull())
    .addColumn('decision', 'text', (c) => c.notNull())
    .addColumn('comment', 'text')
    .addColumn('withdrawn', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('change_request_reviews_request')
    .on('change_request_reviews')
    .column('change_request_id')
    .execute();
}
