import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration } from 'kysely';
import pg from 'pg';
import * as initial from './migrations/0001-initial.js';
import * as retention from './migrations/0002-retention.js';
import * as sealedIdempotentResponses from './migrations/0003-sealed-idempotent-responses.js';
import * as people from './migrations/0004-people.js';
import type { Schema } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

/** An open database: the Kysely handle and which dialect it speaks. */
export interface Database {
  db: Kysely<Schema>;
  dialect: Dialect;
  close(): Promise<void>;
}

// timestamptz comes back as an ISO-8601 string, the same shape SQLite stores.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (text) => new Date(text).toISOString());
pg.types.setTypeParser(pg.types.builtins.INT8, (text) => Number(text));

/**
 * Opens the database named by `url`: `postgres://…` or `postgresql://…` selects PostgreSQL,
 * anything else is a SQLite file (its folder is created) or `:memory:`.
 */
export function openDatabase(url: string): Database {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    // An idle client that dies (a database restart, a terminated backend) must not crash the
    // process: the pool drops it and connects afresh on next use; queries in flight still fail.
    pool.on('error', () => undefined);
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', close: () => db.destroy() };
  }
  if (url !== ':memory:') mkdirSync(dirname(url), { recursive: true });
  const sqlite = new SQLite(url);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

/** Migrations in order. Each file is frozen once landed; new changes are new files. */
const MIGRATIONS: Record<string, (db: Kysely<unknown>, dialect: Dialect) => Promise<void>> = {
  '0001-initial': initial.up,
  '0002-retention': retention.up,
  '0003-sealed-idempotent-responses': sealedIdempotentResponses.up,
  '0004-people': people.up,
};

/** Applies pending migrations. On PostgreSQL Kysely holds an advisory lock, so nodes may race. */
export async function migrate({ db, dialect }: Database): Promise<string[]> {
  const migrations: Record<string, Migration> = {};
  for (const [name, up] of Object.entries(MIGRATIONS)) {
    migrations[name] = { up: (target) => up(target, dialect) };
  }
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
