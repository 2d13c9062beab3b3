#!/usr/bin/env node
import { text } from 'node:stream/consumers';
import { Command, InvalidArgumentError } from 'commander';
import { createRequire } from 'node:module';
import { createVexil, SERVICE_ROLES, type ServiceRole } from './app.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig } from './config.js';
import { migrate, openDatabase } from './db/database.js';
import type { Plan } from './db/schema.js';
import { ApiError } from './http/errors.js';
import { bootstrap } from './management/orgs/bootstrap.js';
import { PLANS } from './management/orgs/routes.js';
import {
  OperationRefused,
  backupSqlite,
  isPostgresUrl,
  pgDumpCommand,
  pgRestoreCommand,
  refuseNonEmptyPostgres,
  restoreSqlite,
} from './ops/backup.js';

// `../package.json` from both `src/` and `dist/`: the server package's own manifest.
const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

const program = new Command('vexil')
  .description('Vexil feature flag service')
  .version(version, '-V, --version', 'print the version of Vexil');

program
  .command('serve')
  .description(
    'run migrations (in the background while the database is unreachable), then serve the management and evaluation APIs and the background workers',
  )
  .option(
    '--only <roles>',
    `run only some roles, comma-separated (${SERVICE_ROLES.join(', ')}); default all`,
    (value: string) => {
      const roles = value.split(',').map((role) => role.trim());
      const unknown = roles.filter((role) => !SERVICE_ROLES.includes(role as ServiceRole));
      if (unknown.length > 0)
        throw new InvalidArgumentError(`unknown roles: ${unknown.join(', ')}`);
      return roles as ServiceRole[];
    },
  )
  .action(async (options: { only?: ServiceRole[] }) => {
    const config = loadConfig();
    const vexil = await createVexil(config, { roles: options.only });
    const shutdown = async (signal: string) => {
      vexil.app.log.info({ signal }, 'shutting down');
      // Bounded: whatever is still running (a hung receiver, a database gone) is given up.
      setTimeout(() => {
        vexil.app.log.error(
          { timeoutMs: config.shutdownTimeoutMs },
          'shutdown did not finish in time; exiting',
        );
        process.exit(1);
      }, config.shutdownTimeoutMs).unref();
      await vexil.close();
      process.exit(0);
    };
    process.once('SIGINT', () => void shutdown('SIGINT'));
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    await vexil.app.listen({ host: config.host, port: config.port });
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .action(async () => {
    const database = openDatabase(loadConfig().databaseUrl);
    const applied = await migrate(database);
    await database.close();
    console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'up to date');
  });

program
  .command('bootstrap')
  .description('create an organization, its Owner and a personal access token; prints JSON')
  .requiredOption('--org <slug>', 'organization slug')
  .requiredOption('--email <email>', 'Owner email')
  .option('--name <name>', 'Owner name')
  .option(
    '--plan <plan>',
    `plan (${PLANS.join(', ')})`,
    (value: string) => {
      if (!PLANS.includes(value as Plan))
        throw new InvalidArgumentError(`must be one of ${PLANS.join(', ')}`);
      return value as Plan;
    },
    'Enterprise' as Plan,
  )
  .option(
    '--password-stdin',
    "also set the Owner's password for browser sign-in, read from standard input",
  )
  .action(
    async (options: {
      org: string;
      email: string;
      name?: string;
      plan: Plan;
      passwordStdin?: boolean;
    }) => {
      if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(options.org))
        throw new InvalidArgumentError('--org: lowercase letters, digits and dashes');
      const password = options.passwordStdin
        ? (await text(process.stdin)).replace(/\r?\n$/, '')
        : undefined;
      const database = openDatabase(loadConfig().databaseUrl);
      await migrate(database);
      const result = await bootstrap(database.db, {
        slug: options.org,
        email: options.email,
        name: options.name,
        plan: options.plan,
        password,
        now: systemClock.now(),
      });
      await database.close();
      console.log(JSON.stringify(result));
    },
  );

program
  .command('backup')
  .description(
    'copy the SQLite database into <file> while the service keeps serving; for PostgreSQL, print the pg_dump command to use',
  )
  .argument('<file>', 'the backup file to create')
  .action(async (file: string) => {
    const config = loadConfig();
    if (isPostgresUrl(config.databaseUrl)) {
      console.error(
        [
          'vexil backup copies SQLite databases only. Back up PostgreSQL with pg_dump (docs/operations.md):',
          `  ${pgDumpCommand(config.databaseUrl, file)}`,
          'and restore it into a new, empty database with:',
          `  ${pgRestoreCommand(config.databaseUrl, file)}`,
        ].join('\n'),
      );
      process.exitCode = 1;
      return;
    }
    await reportOrRefuse(() =>
      backupSqlite(config.databaseUrl, file, { secretsKeyConfigured: config.secretsKey !== null }),
    );
  });

program
  .command('restore')
  .description(
    'restore a backup made by vexil backup into the configured database, which must be empty, then migrate it; for PostgreSQL, print the pg_restore command to use',
  )
  .argument('<file>', 'the backup file')
  .action(async (file: string) => {
    const config = loadConfig();
    if (isPostgresUrl(config.databaseUrl)) {
      await reportOrRefuse(async () => {
        await refuseNonEmptyPostgres(config.databaseUrl);
        throw new OperationRefused(
          [
            'vexil restore restores SQLite backups only. Restore a pg_dump backup with pg_restore (docs/operations.md):',
            `  ${pgRestoreCommand(config.databaseUrl, file)}`,
            'then start vexil serve: it applies the migrations the backup predates.',
          ].join('\n'),
        );
      });
      return;
    }
    await reportOrRefuse(() =>
      restoreSqlite(file, config.databaseUrl, { secretsKeyConfigured: config.secretsKey !== null }),
    );
  });

/** Prints what a backup or restore did, or why it was refused (then the exit code is 1). */
async function reportOrRefuse(operation: () => Promise<{ messages: string[] }>): Promise<void> {
  try {
    const { messages } = await operation();
    for (const message of messages) console.log(message);
  } catch (error) {
    if (!(error instanceof OperationRefused)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
}

program
  .command('openapi')
  .description('print the OpenAPI 3.1 description of both APIs')
  .action(async () => {
    const vexil = await createVexil(
      { ...loadConfig(), databaseUrl: ':memory:' },
      { logger: false },
    );
    await vexil.app.ready();
    console.log(JSON.stringify(vexil.app.swagger(), null, 2));
    await vexil.close();
  });

program.parseAsync().catch((error: unknown) => {
  console.error(
    error instanceof ConfigError ||
      error instanceof InvalidArgumentError ||
      error instanceof ApiError
      ? error.message
      : error,
  );
  process.exit(1);
});
