import type { Kysely } from 'kysely';

/**
 * Code references (flag-cleanup contract, section 2; design record 054): the repositories a
 * project's code lives in, each scanned branch (its commit, when, and its count), and the
 * references of a branch, replaced whole by each upload. References name the flag by key, not
 * by id: a key the project does not have is kept (a typo is worth seeing).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('code_reference_repositories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('default_branch', 'text')
    .addColumn('source_url_template', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('code_reference_repositories_name', ['project_id', 'name'])
    .execute();
  await db.schema
    .createTable('code_reference_branches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('repository_id', 'text', (c) =>
      c.notNull().references('code_reference_repositories.id').onDelete('cascade'),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('commit_sha', 'text')
    .addColumn('scanned_at', 'text', (c) => c.notNull())
    .addColumn('reference_count', 'integer', (c) => c.notNull())
    .addColumn('unparsed', 'text', (c) => c.notNull())
    .addUniqueConstraint('code_reference_branches_name', ['repository_id', 'name'])
    .execute();
  await db.schema
    .createTable('code_references')
    .addColumn('branch_id', 'text', (c) =>
      c.notNull().references('code_reference_branches.id').onDelete('cascade'),
    )
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('flag_key', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('line', 'integer', (c) => c.notNull())
    .addColumn('column', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('context', 'text', (c) => c.notNull())
    .addColumn('unknown_key', 'integer', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('code_references_branch')
    .on('code_references')
    .columns(['branch_id', 'flag_key'])
    .execute();
  await db.schema
    .createIndex('code_references_flag')
    .on('code_references')
    .columns(['project_id', 'flag_key'])
    .execute();
}
