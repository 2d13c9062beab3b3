#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { Command, InvalidArgumentError, Option } from 'commander';
import { createRequire } from 'node:module';
import { createVexil, SERVICE_ROLES, type ServiceRole, type Vexil } from './node/full-node.js';
import { systemClock } from './clock.js';
import { runClusterPrimary, workerCount } from './cluster/primary.js';
import { registerCodeRefsCommand } from './code-refs/command.js';
import { registerCleanupCommand } from './code-refs/cleanup/command.js';
import { ConfigError, loadConfig, parseUpstreamUrl, parseWorkers, type Config } from './config.js';
import { migrate, openDatabase } from './db/database.js';
import type { Plan } from './db/schema.js';
import { ApiError } from './errors.js';
import { applyDocument, type ApplyResult } from './writes/apply.js';
import { flagsAsCodeOpener } from './change-requests/flags-as-code-opener.js';
import { documentJsonSchema } from './writes/document.js';
import {
  EXPORT_FORMATS,
  exportProject,
  serializeDocument,
  type ExportFormat,
} from './flags-as-code/export.js';
import { parseDocumentText } from './writes/validation.js';
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
import { bannerText, describeDatabase, nextSteps, type StartUp } from './ops/start-up-banner.js';
import { RELAY_KEY_PREFIX } from './relay-feed/protocol.js';
import { createRelayNode, type VexilRelay } from './node/relay-node.js';
import { startTelemetry } from './telemetry/tracing.js';

// `../package.json` from both `src/` and `dist/`: the server package's own manifest.
const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

const program = new Command('vexil')
  .description('Vexil feature flag service')
  .version(version, '-V, --version', 'print the version of Vexil')
  .option('--debug', 'print the stack trace of an unexpected error');

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
    (value: string) => workersOption(value),
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
  const telemetry = startTelemetry(config.telemetry);
  const vexil = await createVexil(config, {
    roles,
    clusterWorker: clusterWorker !== undefined,
  });
  stopOnSignals(
    vexil.app.log,
    () => vexil.close().finally(() => telemetry.shutdown()),
    config.shutdownTimeoutMs,
  );
  const listening = await vexil.app.listen({ host: config.host, port: config.port });
  // One announcement per node: by the only process, or by worker 1 of `--workers`.
  if (clusterWorker === undefined || clusterWorker === 1) {
    const consoleUrl = roles.includes('management') ? `${config.publicUrl}/` : null;
    const startUp: StartUp = {
      version,
      listening,
      console: consoleUrl,
      database: describeDatabase(config.databaseUrl),
      roles,
      next: await nextSteps(vexil.services.db, consoleUrl, vexil.services.clock.now()),
    };
    if (process.stdout.isTTY) process.stdout.write(bannerText(startUp));
    else vexil.app.log.info(startUp, 'Vexil started');
  }
}

/**
 * Stops the process on SIGINT or SIGTERM (`serve` and `relay`): logs the signal, runs `close`
 * once (a terminal's Ctrl-C reaches a `--workers` worker both directly and through the primary),
 * and exits 0; if closing takes longer than `timeoutMs`, whatever still runs (a hung receiver, a
 * database gone) is given up and the process exits 1.
 */
function stopOnSignals(
  log: Pick<Vexil['app']['log'], 'info' | 'error'>,
  close: () => Promise<void>,
  timeoutMs: number,
): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    setTimeout(() => {
      log.error({ timeoutMs }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, timeoutMs).unref();
    await close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

/** `--workers`' parser, shared by `serve` and `relay`. */
function workersOption(value: string): number | 'auto' {
  try {
    return parseWorkers(value, '--workers');
  } catch (error) {
    throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
  }
}

program
  .command('relay')
  .description(
    'serve the evaluation API from an upstream Vexil (a full node or another relay), without a database: VEXIL_RELAY_KEY holds the relay key',
  )
  .option(
    '--upstream <url>',
    "the upstream's address, e.g. https://flags.example.com; default VEXIL_RELAY_UPSTREAM",
    (value: string) => {
      try {
        return parseUpstreamUrl(value, '--upstream');
      } catch (error) {
        throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
      }
    },
  )
  .option('--port <port>', 'port to listen on; default VEXIL_PORT or 8080', (value: string) => {
    if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535)
      throw new InvalidArgumentError('--port: a port number, 0 to 65535');
    return Number(value);
  })
  .option('--host <host>', 'address to listen on; default VEXIL_HOST or 127.0.0.1')
  .option(
    '--workers <count>',
    'worker processes behind the one port, a number or "auto"; default VEXIL_WORKERS or 1',
    workersOption,
  )
  .addOption(new Option('--cluster-worker <index>').hideHelp().argParser((value) => Number(value)))
  .action(
    async (options: {
      upstream?: string;
      port?: number;
      host?: string;
      workers?: number | 'auto';
      clusterWorker?: number;
    }) => {
      const loaded = loadConfig();
      const config: Config = {
        ...loaded,
        host: options.host ?? loaded.host,
        port: options.port ?? loaded.port,
      };
      const upstreamUrl = options.upstream ?? config.relay.upstreamUrl;
      if (!upstreamUrl)
        throw new ConfigError(
          'vexil relay needs its upstream: --upstream https://flags.example.com (or VEXIL_RELAY_UPSTREAM)',
        );
      const relayKey = config.relay.key;
      if (!relayKey?.startsWith(RELAY_KEY_PREFIX))
        throw new ConfigError(
          `vexil relay needs VEXIL_RELAY_KEY, a relay key (${RELAY_KEY_PREFIX}…) an Admin creates upstream with POST /api/v1/orgs/{org}/relay-keys`,
        );
      const count = workerCount(options.workers ?? config.workers);
      if (options.clusterWorker === undefined && count > 1) {
        await runClusterPrimary({
          count,
          shutdownTimeoutMs: config.shutdownTimeoutMs,
          logLevel: config.logLevel,
        });
        return;
      }
      await relay(config, upstreamUrl, relayKey, options.clusterWorker);
    },
  );

/**
 * One relay process (design record 044). With good copies on disk it serves them at once and
 * follows the upstream in the background; without, it waits for the upstream's initial set, and
 * a wrong address or key ends it with the reason.
 */
async function relay(
  config: Config,
  upstreamUrl: string,
  relayKey: string,
  clusterWorker: number | undefined,
): Promise<void> {
  const telemetry = startTelemetry(config.telemetry);
  const node: VexilRelay = await createRelayNode(config, {
    upstreamUrl,
    relayKey,
    clusterWorker: clusterWorker !== undefined,
  });
  if (!node.source.hasConfigurations()) {
    const problem = await node.follower.firstConnection();
    if (problem) {
      await node.close();
      throw new ConfigError(`vexil relay cannot start: ${problem.detail}`);
    }
  }
  stopOnSignals(
    node.app.log,
    () => node.close().finally(() => telemetry.shutdown()),
    config.shutdownTimeoutMs,
  );
  const listening = await node.app.listen({ host: config.host, port: config.port });
  if (clusterWorker === undefined || clusterWorker === 1)
    node.app.log.info(
      {
        version,
        listening,
        upstream: upstreamUrl,
        environments: node.source.environments().length,
        following: node.follower.following(),
      },
      'Vexil relay started',
    );
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
  .description(
    'create an organization, its Owner and a personal access token; prints JSON. For a user who is the Owner already, it issues a token only with --token',
  )
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
  .option('--token', 'issue a new personal access token even when the user is the Owner already')
  .action(
    async (options: {
      org: string;
      email: string;
      name?: string;
      plan: Plan;
      passwordStdin?: boolean;
      token?: boolean;
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
        token: options.token,
        now: systemClock.now(),
      });
      await database.close();
      // A second organization is rarely what was meant (after the quick start, say): say so.
      if (result.otherOrgs?.length)
        console.error(
          `created organization ${result.org.slug}; this instance has others already: ${result.otherOrgs.join(', ')} (to use one, pass its slug as --org).`,
        );
      console.log(JSON.stringify(result));
      if (result.token === null) {
        console.error(
          `${result.user.email} is the Owner of ${result.org.slug} already: no new token (pass --token for one).`,
        );
        // A pipeline reading `.token` must not go on with "null"; setting a password is a success.
        if (!options.passwordStdin) process.exitCode = 1;
      }
    },
  );

/** Who the audit log names for changes made with the CLI, which acts on the database directly. */
const CLI_ACTOR = { userId: 'vexil-cli', email: null, name: 'vexil CLI (operator)' };

/** The organization a flags-as-code command works on, and its project (null when absent). */
async function findProject(db: Vexil['services']['db'], orgSlug: string, projectKey: string) {
  const org = await db
    .selectFrom('organizations')
    .selectAll()
    .where('slug', '=', orgSlug)
    .executeTakeFirst();
  if (!org) throw new InvalidArgumentError(`organization "${orgSlug}" not found`);
  const project = await db
    .selectFrom('projects')
    .selectAll()
    .where('organization_id', '=', org.id)
    .where('key', '=', projectKey)
    .executeTakeFirst();
  return { org, project: project ?? null };
}

/**
 * Runs `work` with the services wired to the configured database (events reach the webhook
 * outbox and, on PostgreSQL, running nodes), serving nothing and running no worker.
 */
async function withVexil<T>(work: (vexil: Vexil) => Promise<T>): Promise<T> {
  const vexil = await createVexil(loadConfig(), { logger: false, startWorkers: false, roles: [] });
  try {
    return await work(vexil);
  } finally {
    await vexil.close();
  }
}

/** The plan as a person reads it: one line per change, its properties indented below. */
function describePlan(result: ApplyResult): string {
  const symbols = { create: '+', update: '~', archive: '-', restore: '+', delete: '-' } as const;
  const lines = result.changes.flatMap((change) => [
    `${symbols[change.action]} ${change.action} ${change.kind} ${change.key}  (${change.path})${change.proposedIn ? `  [change request in ${change.proposedIn}]` : ''}`,
    ...(change.changes ?? []).map(
      (c) => `    ${c.property}: ${c.from ?? 'null'} -> ${c.to ?? 'null'}`,
    ),
  ]);
  const { summary } = result;
  const proposed = result.changes.filter((change) => change.proposedIn).length;
  const proposedNote =
    proposed === 0
      ? ''
      : `; ${proposed} of these ${result.dryRun ? 'to propose' : 'proposed'} in change requests rather than written`;
  const counts = `${summary.create} to create, ${summary.update} to update, ${summary.archive} to archive, ${summary.restore} to restore, ${summary.delete} to delete`;
  const outcome =
    result.changes.length === 0
      ? 'No changes: the project matches the document.'
      : result.dryRun
        ? `Plan: ${counts}${proposedNote}. Dry run: nothing was changed.`
        : `Applied: ${counts}${proposedNote}.`;
  const requests = result.changeRequests.map(
    (request) =>
      `Change request #${request.number} opened in ${request.environmentKey} (${request.changes} ${request.changes === 1 ? 'change' : 'changes'}, ${request.state}): a person approves it, then it is applied.`,
  );
  return [...lines, ...result.warnings.map((w) => `! ${w}`), outcome, ...requests].join('\n');
}

program
  .command('export')
  .description('print a project as a flags-as-code document')
  .requiredOption('--org <slug>', 'organization slug')
  .requiredOption('--project <key>', 'project key')
  .option(
    '--environment <key>',
    'only this environment (repeat for more); default all',
    (value: string, previous: string[]) => [...previous, value],
    [] as string[],
  )
  .option(
    '--format <format>',
    EXPORT_FORMATS.join(' or '),
    (value: string) => {
      if (!EXPORT_FORMATS.includes(value as ExportFormat))
        throw new InvalidArgumentError(`must be one of ${EXPORT_FORMATS.join(', ')}`);
      return value as ExportFormat;
    },
    'yaml' as ExportFormat,
  )
  .action(
    async (options: {
      org: string;
      project: string;
      environment: string[];
      format: ExportFormat;
    }) =>
      withVexil(async ({ services }) => {
        const { project } = await findProject(services.db, options.org, options.project);
        if (!project)
          throw new InvalidArgumentError(
            `project "${options.project}" not found in "${options.org}"`,
          );
        const document = await exportProject(services.db, project, {
          environmentKeys: options.environment,
        });
        process.stdout.write(serializeDocument(document, options.format));
      }),
  );

/** The options of `vexil apply`. */
interface ApplyOptions {
  org: string;
  dryRun?: boolean;
  prune?: boolean;
  changeRequest?: string;
  changeRequestDescription?: string;
}

program
  .command('apply')
  .description(
    'apply a flags-as-code document (YAML or JSON; - for standard input) to its project in one transaction, creating the project if absent, and print the plan',
  )
  .argument('<file>', 'the document')
  .requiredOption('--org <slug>', 'organization slug')
  .option('--dry-run', 'print the plan; change nothing')
  .option('--prune', 'archive flags and delete segments the document leaves out')
  .option(
    '--change-request <title>',
    'propose the changes to environments that require change requests as change requests with this title (one per environment) and apply the rest; without it such a plan is refused whole (with --dry-run, printed with those changes marked)',
    (value: string) => {
      if (value.trim() === '' || value.length > 200)
        throw new InvalidArgumentError('must be 1 to 200 characters');
      return value;
    },
  )
  .option('--change-request-description <markdown>', 'the description of those change requests')
  .action(async (file: string, options: ApplyOptions) => {
    const input = parseDocumentText(
      file === '-'
        ? await text(process.stdin)
        : await readFile(file, 'utf8').catch((error: unknown) => {
            // Node names the file on some failures (ENOENT) and not on others (EISDIR).
            throw Object.assign(error as Error, { path: file });
          }),
    );
    // The document names its project; its shape is checked with the rest of it.
    const documentProject = (input as { project?: { key?: unknown } } | null)?.project?.key;
    const projectKey = typeof documentProject === 'string' ? documentProject : '';
    const result = await withVexil(async ({ services }) => {
      const { org, project } = await findProject(services.db, options.org, projectKey);
      const target = { organizationId: org.id, project, actor: CLI_ACTOR, mayChangePolicy: true };
      return applyDocument(services, target, input, {
        dryRun: options.dryRun ?? false,
        prune: options.prune ?? false,
        changeRequest: options.changeRequest
          ? {
              title: options.changeRequest,
              description: options.changeRequestDescription,
              open: flagsAsCodeOpener(CLI_ACTOR, CLI_ACTOR.userId),
            }
          : undefined,
      });
    });
    console.log(describePlan(result));
  });

program
  .command('schema')
  .description('print the JSON Schema of flags-as-code documents')
  .action(() => {
    process.stdout.write(documentJsonSchema());
  });

registerCodeRefsCommand(program);
registerCleanupCommand(program);

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
    program.opts<{ debug?: boolean }>().debug && error instanceof Error
      ? (error.stack ?? error.message)
      : failureText(error),
  );
  process.exit(1);
});

/**
 * What a failed command prints: the refusal in the service's words (a refused document lists
 * each problem on a line of its own), a file and what went wrong with it, or one line naming the
 * error, never a stack trace (`--debug` prints that).
 */
function failureText(error: unknown): string {
  if (error instanceof ApiError && error.detail.fields)
    return [
      error.message.replace(/:.*$/s, ':'),
      ...Object.entries(error.detail.fields).map(
        ([field, problems]) => `  ${field}: ${problems.join('; ')}`,
      ),
    ].join('\n');
  if (
    error instanceof ConfigError ||
    error instanceof InvalidArgumentError ||
    error instanceof ApiError
  )
    return error.message;
  const system = error as NodeJS.ErrnoException;
  // Node's words, "ENOENT: no such file or directory, open 'x.yaml'", as "x.yaml: no such file or directory".
  if (typeof system.code === 'string' && typeof system.path === 'string')
    return `${system.path}: ${system.message.replace(/^[A-Z]+: /, '').replace(/, \w+(?: '.*')?$/, '')}`;
  const message = error instanceof Error ? error.message : String(error);
  return `vexil: ${message} (run again with --debug for the stack trace)`;
}
