import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_NAMES } from '../db/database.js';
import * as initial from '../db/migrations/0001-initial.js';
import * as retention from '../db/migrations/0002-retention.js';
import * as sealedIdempotentResponses from '../db/migrations/0003-sealed-idempotent-responses.js';
import * as people from '../db/migrations/0004-people.js';
import { createPostgresDatabase, TEST_SECRETS_KEY } from '../test-support/harness.js';
import { CLI, ServeProcess, bootstrapWithCli } from '../test-support/processes.js';
import { OperationRefused, backupSqlite, pgDumpCommand, restoreSqlite } from './backup.js';

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `vexil` command; a non-zero exit is a result, not an exception. */
function vexil(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

const base = '/api/v1/orgs/acme/projects/web';

/** A project with `count` flags (every third one on) and a server-side SDK key; returns the key. */
async function populate(node: ServeProcess, token: string, count: number): Promise<string> {
  expect(
    (
      await node.request('POST', '/api/v1/orgs/acme/projects', {
        token,
        body: { key: 'web', name: 'Web' },
      })
    ).status,
  ).toBe(201);
  for (let index = 0; index < count; index++) {
    const key = `flag-${index}`;
    expect((await node.request('POST', `${base}/flags`, { token, body: { key } })).status).toBe(
      201,
    );
    if (index % 3 === 0)
      await node.request('POST', `${base}/flags/${key}/environments/production/toggle`, {
        token,
        body: { enabled: true },
      });
  }
  const sdkKey = await node.request('POST', `${base}/environments/production/sdk-keys`, {
    token,
    body: { name: 'backend', type: 'ServerSide' },
  });
  expect(sdkKey.status).toBe(201);
  return sdkKey.body.key as string;
}

/** Every row of every table of a SQLite file, each table's rows in a stable order. */
function sqliteTables(file: string): Record<string, string[]> {
  const database = new SQLite(file, { readonly: true });
  try {
    const tables = database
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .all() as { name: string }[];
    return Object.fromEntries(
      tables.map(({ name }) => [
        name,
        database
          .prepare(`SELECT * FROM "${name}"`)
          .all()
          .map((row) => JSON.stringify(row))
          .sort(),
      ]),
    );
  } finally {
    database.close();
  }
}

/** Every row of every table of a PostgreSQL database, each table's rows in a stable order. */
async function postgresTables(url: string): Promise<Record<string, string[]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
    );
    const result: Record<string, string[]> = {};
    for (const { table_name: name } of tables) {
      const { rows } = await client.query(`SELECT * FROM "${name}"`);
      result[name] = rows.map((row) => JSON.stringify(row)).sort();
    }
    return result;
  } finally {
    await client.end();
  }
}

async function evaluations(node: ServeProcess, sdkKey: string, count: number) {
  const values: unknown[] = [];
  for (let index = 0; index < count; index++) {
    const response = await node.request('POST', '/v1/sdk/evaluate', {
      sdkKey,
      body: { flagKey: `flag-${index}`, context: { userId: 'u' } },
    });
    values.push(response.body.value);
  }
  return values;
}

describe('vexil backup and restore on SQLite', { timeout: 120_000 }, () => {
  let directory: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'vexil-backup-'));
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('backs up while vexil serve answers requests, and the restore holds every row', async () => {
    const source = join(directory, 'live', 'vexil.db');
    const env = { VEXIL_DATABASE_URL: source, VEXIL_SECRETS_KEY: TEST_SECRETS_KEY };
    const { token } = await bootstrapWithCli(env);
    const node = await ServeProcess.start(env);
    let sdkKey: string;
    let expected: unknown[];
    const statuses: number[] = [];
    try {
      sdkKey = await populate(node, token, 12);
      expected = await evaluations(node, sdkKey, 12);

      // Writes and evaluations keep going while the backup runs.
      let loading = true;
      let written = 0;
      const load = (async () => {
        while (loading) {
          const created = await node.request('POST', `${base}/flags`, {
            token,
            body: { key: `during-${written++}` },
          });
          const evaluated = await node.request('POST', '/v1/sdk/evaluate', {
            sdkKey,
            body: { flagKey: 'flag-0', context: { userId: 'u' } },
          });
          statuses.push(created.status, evaluated.status);
        }
      })();
      while (statuses.length < 4) await new Promise((resolve) => setTimeout(resolve, 20));
      const before = statuses.length;
      const online = await vexil(['backup', join(directory, 'online.db')], env);
      const after = statuses.length;
      loading = false;
      await load;

      expect(online.stderr).toBe('');
      expect(online.code).toBe(0);
      expect(online.stdout).toContain('backed up');
      // The service answered while the backup ran, and answered everything successfully.
      expect(after).toBeGreaterThan(before);
      expect(statuses.filter((status) => status >= 300)).toEqual([]);

      // The online backup restores into a database that holds everything written before it.
      const fromOnline = join(directory, 'from-online.db');
      const restoredOnline = await vexil(['restore', join(directory, 'online.db')], {
        ...env,
        VEXIL_DATABASE_URL: fromOnline,
      });
      expect(restoredOnline.code).toBe(0);
      const flagKeys = sqliteTables(fromOnline)['flags']!.map(
        (row) => (JSON.parse(row) as { key: string }).key,
      );
      for (let index = 0; index < 12; index++) expect(flagKeys).toContain(`flag-${index}`);
    } finally {
      await node.stop();
    }

    // Stopped, the database no longer changes: a second backup, restored, equals it row by row.
    const offline = join(directory, 'offline.db');
    expect((await vexil(['backup', offline], env)).code).toBe(0);
    const restoredFile = join(directory, 'restored', 'vexil.db');
    const restoreEnv = { ...env, VEXIL_DATABASE_URL: restoredFile };
    const restored = await vexil(['restore', offline], restoreEnv);
    expect(restored.stderr).toBe('');
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain('migrations: up to date');
    const original = sqliteTables(source);
    expect(Object.keys(original).length).toBeGreaterThan(10);
    expect(original['flags']!.length).toBeGreaterThanOrEqual(12);
    expect(sqliteTables(restoredFile)).toEqual(original);

    // The restored database serves the same evaluations.
    const restoredNode = await ServeProcess.start(restoreEnv);
    try {
      expect(await evaluations(restoredNode, sdkKey, 12)).toEqual(expected);
    } finally {
      await restoredNode.stop();
    }

    // A restore never lands on a database that holds data.
    const refused = await vexil(['restore', offline], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is not empty \(rows in .*flags/);
    expect(sqliteTables(source)).toEqual(original);
  });

  it('copies a generated secrets key with the backup and back', async () => {
    const source = join(directory, 'keyed', 'vexil.db');
    const { token } = await bootstrapWithCli({ VEXIL_DATABASE_URL: source });
    expect(token).toBeTruthy();
    await writeFile(`${source}.key`, 'generated-key-for-this-database-0123456789');
    const backup = join(directory, 'keyed-backup.db');
    const report = await backupSqlite(source, backup, { secretsKeyConfigured: false });
    expect(report.messages.join('\n')).toContain(`${backup}.key`);
    // One file (and its key), no -wal or -shm beside it.
    expect((await readdir(directory)).filter((file) => file.startsWith('keyed-backup'))).toEqual([
      'keyed-backup.db',
      'keyed-backup.db.key',
    ]);
    expect(await readFile(`${backup}.key`, 'utf8')).toBe(
      'generated-key-for-this-database-0123456789',
    );
    const target = join(directory, 'keyed-restored.db');
    await restoreSqlite(backup, target, { secretsKeyConfigured: false });
    expect(await readFile(`${target}.key`, 'utf8')).toBe(
      'generated-key-for-this-database-0123456789',
    );
    await expect(backupSqlite(source, backup, { secretsKeyConfigured: false })).rejects.toThrow(
      /already exists/,
    );
  });

  it('migrates a backup made by an older version after restoring it', async () => {
    const older = join(directory, 'older.db');
    const database = new Kysely<unknown>({
      dialect: new SqliteDialect({ database: new SQLite(older) }),
    });
    const frozen = { initial, retention, sealedIdempotentResponses, people };
    const migrator = new Migrator({
      db: database,
      provider: {
        getMigrations: () =>
          Promise.resolve({
            '0001-initial': { up: (db: Kysely<unknown>) => frozen.initial.up(db, 'sqlite') },
            '0002-retention': { up: (db: Kysely<unknown>) => frozen.retention.up(db) },
            '0003-sealed-idempotent-responses': {
              up: (db: Kysely<unknown>) => frozen.sealedIdempotentResponses.up(db),
            },
            '0004-people': { up: (db: Kysely<unknown>) => frozen.people.up(db, 'sqlite') },
          }),
      },
    });
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    await database.destroy();

    const target = join(directory, 'upgraded.db');
    const report = await restoreSqlite(older, target, { secretsKeyConfigured: true });
    expect(report.messages.join('\n')).toMatch(/migrated: .*0005-flag-metadata/);
    const migrations = sqliteTables(target)['kysely_migration']!;
    const names = migrations.map((row) => (JSON.parse(row) as { name: string }).name).sort();
    expect(names).toEqual([...MIGRATION_NAMES].sort());
  });

  it('refuses a backup from a newer version, a damaged file and a file that is no database', async () => {
    const source = join(directory, 'newer', 'vexil.db');
    await bootstrapWithCli({ VEXIL_DATABASE_URL: source });
    const newer = new SQLite(source);
    newer
      .prepare('INSERT INTO kysely_migration (name, timestamp) VALUES (?, ?)')
      .run('9999-from-the-future', new Date().toISOString());
    newer.close();
    const options = { secretsKeyConfigured: true };
    await expect(restoreSqlite(source, join(directory, 'n.db'), options)).rejects.toThrow(
      /newer Vexil \(unknown migrations: 9999-from-the-future\)/,
    );

    const text = join(directory, 'notes.txt');
    await writeFile(text, 'not a database at all, just some words '.repeat(200));
    await expect(restoreSqlite(text, join(directory, 't.db'), options)).rejects.toThrow(
      OperationRefused,
    );

    // A backup whose pages were overwritten in the middle fails SQLite's integrity check.
    const damaged = join(directory, 'damaged.db');
    await backupSqlite(join(directory, 'live', 'vexil.db'), damaged, options);
    const bytes = await readFile(damaged);
    bytes.fill(0x5a, 4096 * 3, 4096 * 6);
    await writeFile(damaged, bytes);
    await expect(restoreSqlite(damaged, join(directory, 'd.db'), options)).rejects.toThrow(
      OperationRefused,
    );
  });
});

describe(
  'backup and restore on PostgreSQL with pg_dump and pg_restore',
  { timeout: 120_000 },
  () => {
    let directory: string;
    const databases: Awaited<ReturnType<typeof createPostgresDatabase>>[] = [];

    beforeAll(async () => {
      directory = await mkdtemp(join(tmpdir(), 'vexil-pg-backup-'));
    });

    afterAll(async () => {
      await Promise.all(databases.map((database) => database.drop()));
      await rm(directory, { recursive: true, force: true });
    });

    /** Runs the command line vexil printed (indented, after `prefix`) with a shell. */
    async function runPrinted(output: string, prefix: string): Promise<void> {
      const line = output
        .split('\n')
        .map((text) => text.trim())
        .find((text) => text.startsWith(prefix));
      expect(line).toBeDefined();
      await new Promise<void>((resolve, reject) => {
        execFile('sh', ['-c', line!], (error, _stdout, stderr) => {
          if (error) reject(new Error(`${line!}: ${stderr}`));
          else resolve();
        });
      });
    }

    it('the printed pg_dump and pg_restore commands copy every table row by row', async () => {
      const source = await createPostgresDatabase();
      databases.push(source);
      const env = { VEXIL_DATABASE_URL: source.url, VEXIL_SECRETS_KEY: TEST_SECRETS_KEY };
      const { token } = await bootstrapWithCli(env);
      const node = await ServeProcess.start(env);
      let sdkKey: string;
      let expected: unknown[];
      try {
        sdkKey = await populate(node, token, 8);
        expected = await evaluations(node, sdkKey, 8);
      } finally {
        await node.stop();
      }

      const file = join(directory, 'vexil.dump');
      const backup = await vexil(['backup', file], env);
      expect(backup.code).toBe(1);
      expect(backup.stderr).toContain('pg_dump --format=custom');
      await runPrinted(backup.stderr, 'pg_dump ');

      const target = await createPostgresDatabase();
      databases.push(target);
      const targetEnv = { ...env, VEXIL_DATABASE_URL: target.url };
      const restore = await vexil(['restore', file], targetEnv);
      expect(restore.code).toBe(1);
      await runPrinted(restore.stderr, 'pg_restore ');

      const original = await postgresTables(source.url);
      expect(original['flags']!.length).toBe(8);
      expect(await postgresTables(target.url)).toEqual(original);

      const restoredNode = await ServeProcess.start(targetEnv);
      try {
        expect(await evaluations(restoredNode, sdkKey, 8)).toEqual(expected);
      } finally {
        await restoredNode.stop();
      }

      const refused = await vexil(['restore', file], targetEnv);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/is not empty/);
      expect(refused.stderr).not.toContain('pg_restore');
    });

    it('prints the connection settings and never the password', () => {
      const command = pgDumpCommand(
        'postgres://vexil:s3cret-pass@db.internal:6543/flags?sslmode=require',
        '/backups/vexil.dump',
      );
      expect(command).toBe(
        'PGPASSWORD=*** PGSSLMODE=require pg_dump --format=custom --no-owner --no-privileges --host=db.internal --port=6543 --username=vexil --dbname=flags --file=/backups/vexil.dump',
      );
      expect(command).not.toContain('s3cret');
    });
  },
);
