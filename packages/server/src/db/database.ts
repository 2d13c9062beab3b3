import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration } from 'kysely';
import pg from 'pg';
import { databaseSpans } from '../telemetry/database-spans.js';
import * as initial from './migrations/0001-initial.js';
import * as retention from './migrations/0002-retention.js';
import * as sealedIdempotentResponses from './migrations/0003-sealed-idempotent-responses.js';
import type { Dialect } from './dialect.js';
import * as people from './migrations/0004-people.js';
import * as flagMetadata from './migrations/0005-flag-metadata.js';
import * as environmentCritical from './migrations/0006-environment-critical.js';
import * as ruleRolloutWeight from './migrations/0007-rule-rollout-weight.js';
import * as ssoBinding from './migrations/0008-sso-binding.js';
import * as passwords from './migrations/0009-passwords.js';
import * as environmentVersionBumps from './migrations/0010-environment-version-bumps.js';
import * as webhookProjectScope from './migrations/0013-webhook-project-scope.js';
import * as firstRunSetup from './migrations/0014-first-run-setup.js';
import * as changeRequests from './migrations/0015-change-requests.js';
import * as relayKeys from './migrations/0016-relay-keys.js';
import * as releasePlans from './migrations/0017-release-plans.js';
import * as flagEnvironmentVersions from './migrations/0018-flag-environment-versions.js';
import * as codeReferences from './migrations/0019-code-references.js';
import * as appliedChangeDiff from './migrations/0020-applied-change-diff.js';
import * as experiments from './migrations/0021-experiments.js';
import type { Schema } from './schema.js';

export type { Dialect };

/** An open database: the Kysely handle and which dialect it speaks. */
export interface Database {
  db: Kysely<Schema>;
  dialect: Dialect;
  /**
   * The driver's own handle under Kysely, for a library that speaks to it directly (the password
   * attempt counts, design record 034). On SQLite it is Kysely's one connection: use it only
   * while holding that connection (`db.connection()`), so that no Kysely transaction is open on it.
   */
  driver: { dialect: 'sqlite'; sqlite: SQLite.Database } | { dialect: 'postgres'; pool: pg.Pool };
  close(): Promise<void>;
}

// timestamptz comes back as an ISO-8601 string, the same shape SQLite stores.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (text) => new Date(text).toISOString());
pg.types.setTypeParser(pg.types.builtins.INT8, (text) => Number(text));

/** Connections per process: enough to keep PostgreSQL busy, few enough for several nodes. */
const POOL_SIZE = 10;
const QUERY_TIMEOUT_MS = 30_000;

/** A pool client that gives up connecting after 5 s, however long the pool lets callers queue. */
class ConnectWithin5s extends pg.Client {
  constructor(config: pg.ClientConfig = {}) {
    super({ ...config, connectionTimeoutMillis: 5_000 });
  }
}

/**
 * Opens the database named by `url`: `postgres://…` or `postgresql://…` selects PostgreSQL,
 * anything else is a SQLite file (its folder is created) or `:memory:`.
 */
export function openDatabase(url: string): Database {
  if (/^postgres(ql)?:\/\//.test(url)) {
    // Bounded waits, so that nothing hangs on a database that is gone (design records 019, 036):
    // a new connection within 5 s, an answer to each query within 30 s. A request waiting for a
    // free client only means the pool is busy (a burst of writes queues here), so it waits as long
    // as a query may take before it counts the database as unavailable.
    const pool = new pg.Pool({
      connectionString: url,
      max: POOL_SIZE,
      connectionTimeoutMillis: QUERY_TIMEOUT_MS,
      Client: ConnectWithin5s,
      query_timeout: QUERY_TIMEOUT_MS,
      keepAlive: true,
    });
    // An idle client that dies (a database restart, a terminated backend) must not crash the
    // process: the pool drops it and connects afresh on next use; queries in flight still fail.
    pool.on('error', () => undefined);
    // The pool listens for errors only on idle clients. A connection lost while a client is
    // checked out between two queries (inside a transaction, or just acquired) would otherwise
    // be an unhandled 'error' that ends the process; its next query fails instead, and the pool
    // discards the client when it is released.
    pool.on('connect', (client) => client.on('error', () => undefined));
    const db = new Kysely<Schema>({
      dialect: new PostgresDialect({ pool }),
      log: databaseSpans('postgresql'),
    });
    return {
      db,
      dialect: 'postgres',
      driver: { dialect: 'postgres', pool },
      close: () => db.destroy(),
    };
  }
  if (url !== ':memory:') mkdirSync(dirname(url), { recursive: true });
  const sqlite = new SQLite(url);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  const db = new Kysely<Schema>({
    dialect: new SqliteDialect({ database: sqlite }),
    log: databaseSpans('sqlite'),
  });
  return {
    db,
    dialect: 'sqlite',
    driver: { dialect: 'sqlite', sqlite },
    close: () => db.destroy(),
  };
}

/** Migrations in order. Each file is frozen once landed; new changes are new files. */
const MIGRATIONS: Record<string, (db: Kysely<unknown>, dialect: Dialect) => Promise<void>> = {
  '0001-initial': initial.up,
  '0002-retention': retention.up,
  '0003-sealed-idempotent-responses': sealedIdempotentResponses.up,
  '0004-people': people.up,
  '0005-flag-metadata': flagMetadata.up,
  '0006-environment-critical': environmentCritical.up,
  '0007-rule-rollout-weight': ruleRolloutWeight.up,
  '0008-sso-binding': ssoBinding.up,
  '0009-passwords': passwords.up,
  '0010-environment-version-bumps': environmentVersionBumps.up,
  '0013-webhook-project-scope': webhookProjectScope.up,
  '0014-first-run-setup': firstRunSetup.up,
  '0015-change-requests': changeRequests.up,
  '0016-relay-keys': relayKeys.up,
  '0017-release-plans': releasePlans.up,
  '0018-flag-environment-versions': flagEnvironmentVersions.up,
  '0019-code-references': codeReferences.up,
  '0020-applied-change-diff': appliedChangeDiff.up,
  '0021-experiments': experiments.up,
};

/** The names of the migrations this version knows, in order (a restore refuses a backup with others). */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS);

/** Applies pending migrations. On PostgreSQL Kysely holds an advisory lock, so nodes may race. */
export async function migrate({ db, dialect }: Database): Promise<string[]> {
  const migrations: Record<string, Migration> = {};
  for (const [name, up] of Object.entries(MIGRATIONS)) {
    migrations[name] = { up: (target) => up(target, dialect) };
  }
  const migrator = new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
  });
  const { error, results } = await migrator.migrateToLatest();
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- Kysely hands back whatever the migration threw
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
