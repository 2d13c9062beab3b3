/**
 * `npm run bench`: loads the real service (SQLite and PostgreSQL) and a bare Fastify ceiling with
 * wrk, runs the engine micro-benchmark, writes the report to docs/benchmarks.md and prints it
 * (issue 3 "Speed", issue 8 "Benchmark"). Progress goes to stderr, the report to stdout. All
 * traffic stays on 127.0.0.1; every child process is killed on exit, error or interrupt.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { postgresDatabase, sqliteDatabase, type BenchDatabase } from './databases.js';
import {
  freePort,
  runCommand,
  startService,
  waitUntilAnswering,
  withCleanup,
} from './processes.js';
import {
  renderReport,
  type BenchReport,
  type DatabaseMeasurement,
  type RouteMeasurement,
} from './report.js';
import { HELLO_SCENARIO, checkScenario, evaluationScenarios } from './scenarios.js';
import {
  CLIENT_VISIBLE_EVERY,
  FLAG_COUNT,
  ORG,
  RULES_PER_FLAG,
  SEGMENT_COUNT,
  seedConfiguration,
} from './seed.js';
import { runWrk, type LoadScenario } from './wrk.js';

const CONNECTIONS = [1, 50, 256];
const DURATION_SECONDS = 5;
const WARM_UP_SECONDS = 2;
const WARM_UP_CONNECTIONS = 50;
/** High enough that seeding never meets the management API's rate limit. */
const RATE_LIMIT = '100000000';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../../../..');
const CLI = join(repoRoot, 'packages/server/dist/cli.js');
const HELLO_SERVER = join(here, 'hello-server.js');
const MICRO_BENCH = join(repoRoot, 'packages/engine/dist/micro-bench.js');
const REPORT_FILE = join(repoRoot, 'docs/benchmarks.md');

const progress = (message: string) => console.error(`[bench] ${message}`);

/** Measures `scenario` after a warm-up (so the JIT has settled) at every connection count. */
async function measureRoute(
  baseUrl: string,
  name: string,
  scenario: LoadScenario,
  target: number | null,
  scratchDir: string,
): Promise<RouteMeasurement> {
  progress(`${name}: warming up`);
  await runWrk(baseUrl, scenario, {
    connections: WARM_UP_CONNECTIONS,
    durationSeconds: WARM_UP_SECONDS,
    scratchDir,
  });
  const results = [];
  for (const connections of CONNECTIONS) {
    const result = await runWrk(baseUrl, scenario, {
      connections,
      durationSeconds: DURATION_SECONDS,
      scratchDir,
    });
    progress(
      `${name} @${connections}: ${Math.round(result.requestsPerSecond)} req/s, ` +
        `p99 ${result.p99Ms} ms, ${result.errors} errors`,
    );
    results.push(result);
  }
  return { name, target, results };
}

async function measureCeiling(
  flavour: 'fastify' | 'node',
  scratchDir: string,
): Promise<RouteMeasurement> {
  const port = await freePort();
  const server = startService(process.execPath, [HELLO_SERVER, String(port), flavour]);
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitUntilAnswering(baseUrl + HELLO_SCENARIO.path, server);
    return await measureRoute(baseUrl, `bare ${flavour}`, HELLO_SCENARIO, null, scratchDir);
  } finally {
    await server.stop();
  }
}

/**
 * Bootstraps, starts and seeds the real service on `database`, then loads each route. The
 * database is dropped afterwards, whatever happens.
 */
function measureService(database: BenchDatabase, scratchDir: string): Promise<DatabaseMeasurement> {
  return withCleanup(database.drop, () => measureServiceOn(database, scratchDir));
}

async function measureServiceOn(
  database: BenchDatabase,
  scratchDir: string,
): Promise<DatabaseMeasurement> {
  const port = await freePort();
  const env = {
    VEXIL_DATABASE_URL: database.url,
    VEXIL_HOST: '127.0.0.1',
    VEXIL_PORT: String(port),
    VEXIL_LOG_LEVEL: 'warn',
    VEXIL_RATE_LIMIT: RATE_LIMIT,
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  progress(`${database.name}: bootstrapping`);
  const bootstrapped = JSON.parse(
    await runCommand(
      process.execPath,
      [CLI, 'bootstrap', '--org', ORG, '--email', 'bench@example.test'],
      env,
    ),
  ) as { token: string };
  const service = startService(process.execPath, [CLI, 'serve'], env);
  try {
    await waitUntilAnswering(`${baseUrl}/v1/sdk/flags`, service);
    progress(`${database.name}: seeding ${FLAG_COUNT} flags through the management API`);
    const seedStart = performance.now();
    const seeded = await seedConfiguration(baseUrl, bootstrapped.token);
    const seedSeconds = (performance.now() - seedStart) / 1_000;
    for (const note of seeded.notes) progress(`${database.name}: note: ${note}`);
    const download = await fetch(`${baseUrl}/v1/sdk/flags`, {
      headers: { authorization: seeded.serverKey },
    });
    const configuration = await download.text();
    const etag = download.headers.get('etag');
    if (download.status !== 200 || !etag) {
      throw new Error(`GET /v1/sdk/flags answered ${download.status} without an ETag`);
    }
    const routes = [];
    for (const route of evaluationScenarios(seeded, etag)) {
      await checkScenario(baseUrl, route);
      routes.push(
        await measureRoute(baseUrl, route.name, route.scenario, route.target, scratchDir),
      );
    }
    return {
      database: database.name,
      seedSeconds,
      configurationBytes: Buffer.byteLength(configuration),
      notes: seeded.notes,
      routes,
    };
  } catch (error) {
    throw new Error(`${database.name}: ${String(error)}\nservice output:\n${service.output()}`, {
      cause: error,
    });
  } finally {
    await service.stop();
  }
}

async function microBenchmark(): Promise<string> {
  if (!existsSync(MICRO_BENCH)) return `skipped: ${MICRO_BENCH} does not exist (build the engine)`;
  progress('engine micro-benchmark');
  return runCommand(process.execPath, [MICRO_BENCH]);
}

function wrkInstalled(): boolean {
  // wrk has no --version; `-v` prints its version and usage, and fails only when it is missing.
  return !spawnSync('wrk', ['-v'], { stdio: 'ignore' }).error;
}

async function main(): Promise<void> {
  if (!wrkInstalled()) {
    console.error('install wrk: apt-get install -y wrk');
    process.exit(1);
  }
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-'));
  const loadAtStart = loadavg()[0]!;
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const fastify = await measureCeiling('fastify', scratchDir);
      const node = await measureCeiling('node', scratchDir);
      const databases: DatabaseMeasurement[] = [];
      const skipped: string[] = [];
      databases.push(await measureService(sqliteDatabase(scratchDir), scratchDir));
      const postgres = await postgresDatabase();
      if ('unavailable' in postgres) {
        skipped.push(postgres.unavailable);
        progress(`skipping PostgreSQL: ${postgres.unavailable}`);
      } else {
        databases.push(await measureService(postgres, scratchDir));
      }
      const report: BenchReport = {
        date: new Date(),
        machine: {
          cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
          cores: cpus().length,
          memoryGb: totalmem() / 1024 ** 3,
          node: process.version,
          platform: `${process.platform}-${process.arch}`,
          loadAverage: { start: loadAtStart, end: loadavg()[0]! },
        },
        settings: {
          connections: CONNECTIONS,
          durationSeconds: DURATION_SECONDS,
          warmUpSeconds: WARM_UP_SECONDS,
        },
        seeded: {
          flags: FLAG_COUNT,
          rulesPerFlag: RULES_PER_FLAG,
          segments: SEGMENT_COUNT,
          clientVisible: FLAG_COUNT / CLIENT_VISIBLE_EVERY,
        },
        ceilings: { fastify, node },
        databases,
        skipped,
        microBenchmark: await microBenchmark(),
      };
      // Formatted like every other document, so `npm run lint` (prettier --check) passes.
      const markdown = await format(renderReport(report), {
        ...(await resolveConfig(REPORT_FILE)),
        filepath: REPORT_FILE,
      });
      await writeFile(REPORT_FILE, markdown);
      progress(`wrote ${REPORT_FILE}`);
      console.log(markdown);
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
