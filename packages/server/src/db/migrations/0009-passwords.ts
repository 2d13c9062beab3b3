import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Passwords and self-service (design record 034): the password attempt counts, in the shape
 * rate-limiter-flexible's SQLite and PostgreSQL stores read and write (its column order included:
 * it inserts without naming them), and the password reset links, stored by their hash.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';

  await db.schema
    .createTable('password_attempts')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('points', 'integer', (c) => c.notNull().defaultTo(0))
    // Unix milliseconds.
    .addColumn('expire', 'bigint')
    .execute();

  await db.schema
    .createTable('password_resets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .execute();
  await db.schema
    .createIndex('password_resets_user')
    .on('password_resets')
    .column('user_id')
    .execute();
}
