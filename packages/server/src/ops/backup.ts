import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { generatedKeyFile } from '../auth/secrets-key.js';
import { MIGRATION_NAMES, migrate, openDatabase } from '../db/database.js';

/**
 * A backup or restore that was not done, for a reason the operator can act on (a file that is not
 * a backup, a database that is not empty, a PostgreSQL database). The CLI prints the message and
 * exits non-zero.
 */
export class OperationRefused extends Error {}

/** Kysely's bookkeeping tables: present in every migrated database, holding no user data. */
const MIGRATION_TABLES = ['kysely_migration', 'kysely_migration_lock'];

/** The connection settings of a PostgreSQL URL, as the `pg_dump` / `pg_restore` flags name them. */
interface PostgresTarget {
  host: string;
  port: string;
  username: string;
  database: string;
  hasPassword: boolean;
  sslMode: string | null;
}

/** Whether `url` names a PostgreSQL database (the same rule as `openDatabase`). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** The parts of a PostgreSQL URL; the password only as whether there is one. */
export function postgresTarget(url: string): PostgresTarget {
  const parsed = new URL(url);
  return {
    host: decodeURIComponent(parsed.hostname) || 'localhost',
    port: parsed.port || '5432',
    username: decodeURIComponent(parsed.username) || 'postgres',
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || 'postgres',
    hasPassword: parsed.password !== '',
    sslMode: parsed.searchParams.get('sslmode'),
  };
}

/** Quotes a word for a POSIX shell when it needs it. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** `PGPASSWORD=*** PGSSLMODE=… ` before a command: the password is never printed. */
function environmentPrefix(target: PostgresTarget): string {
  return [
    target.hasPassword ? 'PGPASSWORD=***' : null,
    target.sslMode ? `PGSSLMODE=${shellWord(target.sslMode)}` : null,
  ]
    .filter((part) => part !== null)
    .map((part) => `${part} `)
    .join('');
}

function connectionFlags(target: PostgresTarget): string {
  return [
    `--host=${shellWord(target.host)}`,
    `--port=${shellWord(target.port)}`,
    `--username=${shellWord(target.username)}`,
    `--dbname=${shellWord(target.database)}`,
  ].join(' ');
}

/**
 * The `pg_dump` command that backs up the PostgreSQL database at `url` into `file` (custom format,
 * consistent while the service keeps writing), with the password masked as `***`.
 */
export function pgDumpCommand(url: string, file: string): string {
  const target = postgresTarget(url);
  return `${environmentPrefix(target)}pg_dump --format=custom --no-owner --no-privileges ${connectionFlags(target)} --file=${shellWord(file)}`;
}

/**
 * The `pg_restore` command that restores `file` (made by {@link pgDumpCommand}) into the new,
 * empty PostgreSQL database at `url`, in one transaction, with the password masked as `***`.
 */
export function pgRestoreCommand(url: string, file: string): string {
  const target = postgresTarget(url);
  return `${environmentPrefix(target)}pg_restore --no-owner --no-privileges --single-transaction --exit-on-error ${connectionFlags(target)} ${shellWord(file)}`;
}

/** What a SQLite backup or restore did, for the CLI to print. */
export interface BackupReport {
  /** Lines for the operator, one fact each. */
  messages: string[];
}

function openExisting(file: string, readonly: boolean): SQLite.Database {
  if (!existsSync(file)) throw new OperationRefused(`${file}: no such file`);
  try {
    const database = new SQLite(file, { readonly, fileMustExist: true });
    database.pragma('busy_timeout = 5000');
    return database;
  } catch (error) {
    throw new OperationRefused(`${file}: not a SQLite database (${(error as Error).message})`);
  }
}

/** Runs SQLite's full integrity check; refuses a file that is damaged or not a database at all. */
function checkIntegrity(database: SQLite.Database, file: string): void {
  let problems: string[];
  try {
    problems = (database.pragma('integrity_check') as { integrity_check: string }[]).map(
      (row) => row.integrity_check,
    );
  } catch (error) {
    throw new OperationRefused(`${file}: not a SQLite database (${(error as Error).message})`);
  }
  if (problems.length !== 1 || problems[0] !== 'ok')
    throw new OperationRefused(`${file}: integrity check failed: ${problems.join('; ')}`);
}

function userTables(database: SQLite.Database): string[] {
  return (
    database
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .all() as { name: string }[]
  ).map((row) => row.name);
}

/**
 * Copies the SQLite database `databaseFile` into the new file `target` with SQLite's online backup
 * (design record 028): a consistent snapshot taken while the service keeps reading and writing
 * (WAL mode: the copy holds a read transaction, writers are not blocked). All remaining pages are
 * copied in one step, so that writes from the running service cannot restart the copy over and
 * over. The copy is then integrity-checked. When the database's secrets key was generated beside
 * it (no `VEXIL_SECRETS_KEY`), the key file is copied to `<target>.key`: webhook signing secrets in
 * the backup open with it only.
 *
 * @throws OperationRefused when `databaseFile` is missing or not a database, or `target` exists
 */
export async function backupSqlite(
  databaseFile: string,
  target: string,
  options: { secretsKeyConfigured: boolean },
): Promise<BackupReport> {
  if (existsSync(target))
    throw new OperationRefused(`${target} already exists; choose a new file name`);
  const source = openExisting(databaseFile, false);
  try {
    mkdirSync(dirname(target), { recursive: true });
    const { totalPages } = await source.backup(target, { progress: () => 0x7fffffff });
    const copy = openExisting(target, false);
    try {
      // The copy keeps the source's WAL mode, in which opening it leaves `-wal` and `-shm` files
      // beside it: a backup is one file, in SQLite's rollback-journal mode.
      copy.pragma('journal_mode = DELETE');
      checkIntegrity(copy, target);
    } finally {
      copy.close();
    }
    const messages = [`backed up ${databaseFile} to ${target} (${totalPages} pages)`];
    const keyFile = generatedKeyFile(databaseFile);
    if (!options.secretsKeyConfigured && existsSync(keyFile)) {
      copyFileSync(keyFile, generatedKeyFile(target));
      chmodSync(generatedKeyFile(target), 0o600);
      messages.push(
        `copied the secrets key to ${generatedKeyFile(target)}: keep it with the backup, and as secret`,
      );
    } else if (options.secretsKeyConfigured) {
      messages.push('the backup needs the same VEXIL_SECRETS_KEY to open its webhook secrets');
    }
    return { messages };
  } finally {
    source.close();
  }
}

/**
 * Restores the SQLite backup `backupFile` (made by {@link backupSqlite}) as the database
 * `databaseFile`, then applies the migrations the backup predates. The backup is checked first:
 * SQLite's integrity check, and every migration it records must be one this version knows (a
 * backup from a newer Vexil is refused). The target must be empty: no file, or a database without
 * a single row outside the migration bookkeeping. The service must not be running on it. The
 * backup's `.key` file, when there is one, becomes the database's generated secrets key.
 *
 * @throws OperationRefused for a damaged or foreign backup, a newer backup, or a non-empty target
 */
export async function restoreSqlite(
  backupFile: string,
  databaseFile: string,
  options: { secretsKeyConfigured: boolean },
): Promise<BackupReport> {
  const backup = openExisting(backupFile, true);
  try {
    checkIntegrity(backup, backupFile);
    const tables = userTables(backup);
    if (!tables.includes('kysely_migration'))
      throw new OperationRefused(`${backupFile}: not a Vexil database (no migration record)`);
    const recorded = (
      backup.prepare('SELECT name FROM kysely_migration ORDER BY name').all() as { name: string }[]
    ).map((row) => row.name);
    const unknown = recorded.filter((name) => !MIGRATION_NAMES.includes(name));
    if (unknown.length > 0)
      throw new OperationRefused(
        `${backupFile} was made by a newer Vexil (unknown migrations: ${unknown.join(', ')}); restore it with that version or newer`,
      );
    refuseNonEmpty(databaseFile);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${databaseFile}${suffix}`, { force: true });
    mkdirSync(dirname(databaseFile), { recursive: true });
    await backup.backup(databaseFile, { progress: () => 0x7fffffff });
  } finally {
    backup.close();
  }
  const messages = [`restored ${backupFile} to ${databaseFile}`];
  const backupKey = generatedKeyFile(backupFile);
  if (!options.secretsKeyConfigured && existsSync(backupKey)) {
    copyFileSync(backupKey, generatedKeyFile(databaseFile));
    chmodSync(generatedKeyFile(databaseFile), 0o600);
    messages.push(`restored the secrets key to ${generatedKeyFile(databaseFile)}`);
  }
  const database = openDatabase(databaseFile);
  try {
    const applied = await migrate(database);
    messages.push(
      applied.length > 0 ? `migrated: ${applied.join(', ')}` : 'migrations: up to date',
    );
  } finally {
    await database.close();
  }
  return { messages };
}

/** Refuses a restore over a database that holds any row (design record 028: restore never merges). */
function refuseNonEmpty(databaseFile: string): void {
  if (!existsSync(databaseFile)) return;
  const target = openExisting(databaseFile, true);
  try {
    const holding = userTables(target).filter(
      (table) =>
        !MIGRATION_TABLES.includes(table) &&
        target.prepare(`SELECT 1 FROM "${table.replaceAll('"', '""')}" LIMIT 1`).get() !==
          undefined,
    );
    if (holding.length > 0)
      throw new OperationRefused(
        `${databaseFile} is not empty (rows in ${holding.join(', ')}): restore only into a new database; ` +
          'point VEXIL_DATABASE_URL at a new file, or move this one away first',
      );
  } finally {
    target.close();
  }
}

/**
 * Refuses a PostgreSQL restore target that already holds tables: `pg_restore` creates every table
 * itself, and a restore never merges into existing data (design record 028).
 *
 * @throws OperationRefused when the database has a table in its `public` schema
 */
export async function refuseNonEmptyPostgres(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    if (rows.length > 0)
      throw new OperationRefused(
        `database ${postgresTarget(url).database} is not empty (${rows.length} tables): ` +
          'restore only into a new database (createdb), then point VEXIL_DATABASE_URL at it',
      );
  } finally {
    await client.end();
  }
}
