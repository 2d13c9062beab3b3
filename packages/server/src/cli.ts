#!/usr/bin/env node
import { text } from 'node:stream/consumers';
import { Command, InvalidArgumentError, Option } from 'commander';
import { createRequire } from 'node:module';
import { createVexil, SERVICE_ROLES, type ServiceRole } from './app.js';
import { systemClock } from './clock.js';
import { clusterWorkerRelay } from './bus/worker-relay.js';
import { runClusterPrimary, workerCount } from './cluster/primary.js';
import { ConfigError, loadConfig, parseWorkers, type Config } from './config.js';
import { migrate, openDatabase } from './db/database.js';
import type { Plan } from './db/schema.js';
import { ApiError } from './http/errors.js';
import { bootstrap } from './management/orgs/bootstrap.js';
import { PLANS } from './management/orgs/routes.js';

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
  .option(
    '--workers <count>',
    'worker processes behind the one port, a number or "auto" (one per core); default VEXIL_WORKERS or 1',
    (value: string) => {
      try {
        return parseWorkers(value, '--workers');
      } catch (error) {
        throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
      }
    },
  )
  .addOption(
    // Set by the primary of `--workers` on the processes it forks: which worker this is.
    new Option('--cluster-worker <index>').hideHelp().argParser((value) => Number(value)),
  )
  .action(
    async (options: {
      only?: ServiceRole[];
      workers?: number | 'auto';
      clusterWorker?: number;
    }) => {
      const config = loadConfig();
      const count = workerCount(options.workers ?? config.workers);
      if (options.clusterWorker === undefined && count > 1) {
        await runClusterPrimary({
          count,
          shutdownTimeoutMs: config.shutdownTimeoutMs,
          logLevel: config.logLevel,
        });
        return;
      }
      await serve(config, options.only, options.clusterWorker);
    },
  );

/**
 * One serving process: the whole service, or worker `clusterWorker` of `--workers` (design
 * record 029), which relays change notices through the primary and, unless it is worker 1,
 * leaves the background jobs to worker 1.
 */
async function serve(
  config: Config,
  only: readonly ServiceRole[] | undefined,
  clusterWorker: number | undefined,
): Promise<void> {
  const requested = only ?? SERVICE_ROLES;
  const roles =
    clusterWorker !== undefined && clusterWorker > 1
      ? requested.filter((role) => role !== 'worker')
      : requested;
  const vexil = await createVexil(config, {
    roles,
    workerRelay: clusterWorker !== undefined ? clusterWorkerRelay() : undefined,
  });
  let stopping = false;
  const shutdown = async (signal: string) => {
    // A terminal's Ctrl-C reaches a worker both directly and through the primary: stop once.
    if (stopping) return;
    stopping = true;
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
}

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
