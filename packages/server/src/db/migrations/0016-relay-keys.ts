import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Relay keys (design record 045): the credential a relay follows its upstream with. Only the
 * SHA-256 of the `vxr_…` secret is stored, as for SDK keys and tokens. `project_scope` and
 * `environment_keys` are JSON arrays (null: every project, every environment).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('relay_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('last_four', 'text', (c) => c.notNull())
    .addColumn('project_scope', 'text')
    .addColumn('environment_keys', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('revoked_at', ts)
    .execute();
  await db.schema
    .createIndex('relay_keys_organization')
    .on('relay_keys')
    .column('organization_id')
    .execute();
}
