import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Identity providers bind to one organization (design record 032): `sso_identities` links an
 * identity a connection asserts (its `sub`) to the account it signs in as. A returning person is
 * found by this link, never by e-mail alone. Frozen once landed.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('sso_identities')
    .addColumn('connection_id', 'text', (c) =>
      c.notNull().references('sso_connections.id').onDelete('cascade'),
    )
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('sso_identities_pk', ['connection_id', 'subject'])
    .execute();
  await db.schema
    .createIndex('sso_identities_user')
    .on('sso_identities')
    .column('user_id')
    .execute();
}
