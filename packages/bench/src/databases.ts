import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';

/** Where the benchmark's PostgreSQL databases are created (trust auth, as in the tests). */
const POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** A throw-away database for one benchmarked service. */
export interface BenchDatabase {
  name: 'SQLite' | 'PostgreSQL';
  /** Value for `VEXIL_DATABASE_URL`. */
  url: string;
  /** Removes the database (a no-op for SQLite, whose file goes with the scratch directory). */
  drop: () => Promise<void>;
}

/** A SQLite file `vexil-<purpose>.db` inside `scratchDir` (removed with that directory). */
export function sqliteDatabase(scratchDir: string, purpose: string): BenchDatabase {
  return { name: 'SQLite', url: join(scratchDir, `vexil-${purpose}.db`), drop: async () => {} };
}

/**
 * A fresh PostgreSQL database `vexil_bench_<random>`, or the reason PostgreSQL is unavailable.
 * `drop` forces out remaining sessions, so it works even if the service did not shut down.
 */
export async function postgresDatabase(): Promise<BenchDatabase | { unavailable: string }> {
  const name = `vexil_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({
      connectionString: POSTGRES_ADMIN_URL,
      connectionTimeoutMillis: 3_000,
    });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  try {
    await admin(`CREATE DATABASE ${name}`);
  } catch (error) {
    return { unavailable: `PostgreSQL at 127.0.0.1:5432 is unreachable (${String(error)})` };
  }
  return {
    name: 'PostgreSQL',
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
