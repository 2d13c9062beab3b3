/**
 * `npm run bench`: loads the real service (SQLite and PostgreSQL) and a bare Fastify ceiling with
 * wrk, runs the engine micro-benchmark and the code-reference scan (`code-refs-scan.ts`), writes the report to docs/benchmarks.md and prints it
 * (issue 3 "Speed", issue 8 "Benchmark"); then `vexil cleanup` and OpenTelemetry's cost, which run
 * as scripts of their own and print their figures. Progress goes to stderr, the report to stdout. All
 * traffic stays on 127.0.0.1; every child process is killed on exit, error or interrupt.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresDatabase, sqliteDatabase, type BenchDatabase } from './databases.js';
import { measureCodeRefsScan, renderCodeRefsReport } from './code-refs-scan.js';
import { measureMemory } from './memory.js';
import { measureRelay } from './relay.js';
import { renderRelayReport } from './relay-report.js';
import {
  freePort,
  runCommand,
  startService,
  waitUntilAnswering,
  withCleanup,
  type Service,
} from './processes.js';
import {
  renderReport,
  type BenchReport,
  type DatabaseMeasurement,
  type IdleRouteMeasurement,
  type PairedRatio,
  type RouteMeasurement,
  type UsageCostMeasurement,
  type WorkersMeasurement,
} from './report.js';
import { measureScale, type ScaleMeasurement } from './scale.js';
import {
  BARE_EVALUATE_SCENARIO,
  HELLO_SCENARIO,
  checkScenario,
  evaluationScenarios,
  withoutUsageRecording,
  type RouteScenario,
} from './scenarios.js';
import {
  CLIENT_VISIBLE_EVERY,
  FLAG_COUNT,
  RULES_PER_FLAG,
  SEGMENT_COUNT,
  seedConfiguration,
} from './seed.js';
import {
  bootstrap,
  CLI,
  HELLO_SERVER,
  IDLE_LANE_SERVER,
  nodeEnvironment,
  REPO_ROOT,
  startNode,
  type Node,
} from './service.js';
import { median } from './statistics.js';
import { gitCommit, REPORT_FILE, writeReport } from './report-file.js';
import { required } from './required.js';
import { runWrk, type LoadScenario } from './wrk.js';

const CONNECTIONS = [1, 50, 256];
const DURATION_SECONDS = 5;
const WARM_UP_SECONDS = 2;
const WARM_UP_CONNECTIONS = 50;
/**
 * Usage-recording cost: recording and not recording alternate (ABBA order cancels drift) in
 * short rounds at one connection count, and the medians are compared, so background load on a
 * shared machine hits both sides alike.
 */
const USAGE_ROUNDS = 4;
const USAGE_ROUND_SECONDS = 2;
const USAGE_CONNECTIONS = 50;
/** Paired ceiling-and-route rounds per connection count for the routes with a target. */
const PAIRED_ROUNDS = 5;
/** `vexil serve --workers` against one process (issue 23): workers, connections, rounds of seconds. */
const WORKERS = 2;
const WORKERS_CONNECTIONS = 50;
const WORKERS_ROUNDS = 6;
const WORKERS_SECONDS = 4;
const PAIRED_SECONDS = 2;

/** Issue 23's idle-route target is at 50 connections. */
const IDLE_ROUTE_CONNECTIONS = [50];
const MICRO_BENCH = join(REPO_ROOT, 'packages/engine/dist/micro-bench.js');

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1_000).toFixed(0)} s`;
const progress = (message: string) => console.error(`[bench ${elapsed()}] ${message}`);

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

/** Starts a hello server (hello-server.ts) of `flavour` and waits until it answers. */
async function startCeiling(
  flavour: 'fastify' | 'node',
): Promise<{ url: string; server: Service }> {
  const port = await freePort();
  const server = startService(process.execPath, [HELLO_SERVER, String(port), flavour]);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilAnswering(url + HELLO_SCENARIO.path, server);
  return { url, server };
}

async function measureCeiling(
  flavour: 'fastify' | 'node',
  scenario: LoadScenario,
  scratchDir: string,
): Promise<RouteMeasurement> {
  const { url, server } = await startCeiling(flavour);
  try {
    const name = `bare ${flavour} ${scenario.method} ${scenario.path}`;
    return await measureRoute(url, name, scenario, null, scratchDir);
  } finally {
    await server.stop();
  }
}

/**
 * Runs `a` and `b` once per round, alternating which goes first (ABBA order cancels drift in the
 * machine's speed), and returns each one's results in round order.
 */
async function alternatingRounds<T>(
  rounds: number,
  a: () => Promise<T>,
  b: () => Promise<T>,
): Promise<{ a: T[]; b: T[] }> {
  const results = { a: [] as T[], b: [] as T[] };
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      results.a.push(await a());
      results.b.push(await b());
    } else {
      results.b.push(await b());
      results.a.push(await a());
    }
  }
  return results;
}

/**
 * The ratio of `scenario` (named `name`, served at `baseUrl`) to the bare node:http ceiling's
 * `GET /hello` running at `ceilingUrl` (or to the `reference` scenario served there) at each
 * connection count, in rounds that load both one after the other, so that both see the same
 * machine: the speed of a shared VM drifts by a third or more within minutes (design record
 * 013). The order alternates between rounds; the ratio is the median of the rounds' ratios.
 */
async function measurePairedRatios(
  ceilingUrl: string,
  baseUrl: string,
  name: string,
  scenario: LoadScenario,
  scratchDir: string,
  reference: { scenario: LoadScenario; connections: readonly number[] } = {
    scenario: HELLO_SCENARIO,
    connections: CONNECTIONS,
  },
): Promise<PairedRatio[]> {
  const paired: PairedRatio[] = [];
  for (const connections of reference.connections) {
    const load = (url: string, scenario: LoadScenario) => async () =>
      (await runWrk(url, scenario, { connections, durationSeconds: PAIRED_SECONDS, scratchDir }))
        .requestsPerSecond;
    const { a: ceilings, b: measured } = await alternatingRounds(
      PAIRED_ROUNDS,
      load(ceilingUrl, reference.scenario),
      load(baseUrl, scenario),
    );
    const rounds = measured.map((rate, round) => rate / required(ceilings[round], 'ceiling round'));
    const ratio = { connections, rounds, median: median(rounds) };
    progress(
      `${name} @${connections}: paired ratio ${ratio.median.toFixed(2)} ` +
        `(${rounds.map((value) => value.toFixed(2)).join(', ')})`,
    );
    paired.push(ratio);
  }
  return paired;
}

/**
 * Issue 23's idle evaluate route (idle-lane-server.ts) against the bare Fastify POST running at
 * `bareFastifyUrl`, in paired rounds at {@link IDLE_ROUTE_CONNECTIONS} connections: the lane in
 * a whole Vexil node, and the same lane in a bare `node:http` process, which tells the lane's
 * own cost from the cost of the process around it (design record 031).
 */
async function measureIdleRoute(
  bareFastifyUrl: string,
  scratchDir: string,
): Promise<IdleRouteMeasurement[]> {
  // createVexil migrates the empty database; the idle route needs nothing in it.
  const database = sqliteDatabase(scratchDir, 'idle');
  const measured: IdleRouteMeasurement[] = [];
  for (const flavour of ['vexil', 'bare'] as const) {
    const port = await freePort();
    const server = startService(process.execPath, [IDLE_LANE_SERVER, String(port), flavour], {
      ...nodeEnvironment(database),
      VEXIL_PORT: String(port),
    });
    const url = `http://127.0.0.1:${port}`;
    const where = flavour === 'vexil' ? 'a whole Vexil node' : 'a bare node:http server';
    const paired = await withCleanup(
      () => server.stop(),
      async () => {
        await waitUntilAnswering(url, server);
        return measurePairedRatios(
          bareFastifyUrl,
          url,
          `idle evaluate route in ${where}`,
          { ...BARE_EVALUATE_SCENARIO, path: '/v1/sdk/evaluate' },
          scratchDir,
          { scenario: BARE_EVALUATE_SCENARIO, connections: IDLE_ROUTE_CONNECTIONS },
        );
      },
    );
    measured.push({ process: where, paired: required(paired[0], 'idle route rounds') });
  }
  return measured;
}

/**
 * Runs `route` with usage recording (no header) and without it (`X-Service-Reports-Evaluations:
 * 1`, spec: Evaluation API rule 1) in alternating rounds (issue 5, "Done means").
 */
async function measureUsageCost(
  baseUrl: string,
  route: RouteScenario,
  scratchDir: string,
): Promise<UsageCostMeasurement> {
  const withoutRecording = withoutUsageRecording(route);
  await checkScenario(baseUrl, withoutRecording);
  const run = (scenario: LoadScenario) => async () => {
    const result = await runWrk(baseUrl, scenario, {
      connections: USAGE_CONNECTIONS,
      durationSeconds: USAGE_ROUND_SECONDS,
      scratchDir,
    });
    if (result.errors > 0) throw new Error(`${route.name}: ${result.errors} errors`);
    return result.requestsPerSecond;
  };
  const { a: recordingRates, b: skippedRates } = await alternatingRounds(
    USAGE_ROUNDS,
    run(route.scenario),
    run(withoutRecording.scenario),
  );
  const recording = median(recordingRates);
  const skipped = median(skippedRates);
  const costPercent = (1 - recording / skipped) * 100;
  progress(
    `${route.name}: recording ${Math.round(recording)} req/s, not recording ` +
      `${Math.round(skipped)} req/s: cost ${costPercent.toFixed(1)}%`,
  );
  return {
    name: route.name,
    connections: USAGE_CONNECTIONS,
    rounds: USAGE_ROUNDS,
    roundSeconds: USAGE_ROUND_SECONDS,
    recording,
    skipped,
    costPercent,
    recordingRange: [Math.min(...recordingRates), Math.max(...recordingRates)],
    skippedRange: [Math.min(...skippedRates), Math.max(...skippedRates)],
  };
}

/**
 * Server evaluate on `vexil serve --workers` ({@link WORKERS}) against the single process at
 * `single` (issue 23), in alternating rounds on the same database. Both nodes run throughout;
 * the one not loaded is idle.
 */
async function measureWorkers(
  database: BenchDatabase,
  single: Node,
  serverEvaluate: LoadScenario,
  scratchDir: string,
): Promise<WorkersMeasurement> {
  progress(`${database.name}: --workers ${WORKERS} against one process`);
  const workers = await startNode(database, { workers: WORKERS });
  try {
    const run = (node: Node) => async () => {
      const result = await runWrk(node.baseUrl, serverEvaluate, {
        connections: WORKERS_CONNECTIONS,
        durationSeconds: WORKERS_SECONDS,
        scratchDir,
      });
      if (result.errors > 0) throw new Error(`--workers: ${result.errors} errors`);
      return result.requestsPerSecond;
    };
    await run(workers)();
    const { a: singleRates, b: workerRates } = await alternatingRounds(
      WORKERS_ROUNDS,
      run(single),
      run(workers),
    );
    const rounds = workerRates.map((rate, round) => rate / required(singleRates[round], 'round'));
    progress(`--workers ${WORKERS}: ${rounds.map((ratio) => ratio.toFixed(2)).join(', ')}`);
    return {
      workers: WORKERS,
      connections: WORKERS_CONNECTIONS,
      roundSeconds: WORKERS_SECONDS,
      single: median(singleRates),
      several: median(workerRates),
      rounds,
      median: median(rounds),
    };
  } finally {
    await workers.service.stop();
  }
}

/**
 * Bootstraps, starts and seeds the real service on `database`, then loads each route, measures
 * the usage-recording cost and, when `withScale`, the multi-node, streaming and webhook figures.
 * The database is dropped afterwards, whatever happens.
 */
function measureService(
  database: BenchDatabase,
  ceilingUrl: string,
  scratchDir: string,
  withScale: boolean,
): Promise<{ measurement: DatabaseMeasurement; scale: ScaleMeasurement | null }> {
  return withCleanup(database.drop, () =>
    measureServiceOn(database, ceilingUrl, scratchDir, withScale),
  );
}

async function measureServiceOn(
  database: BenchDatabase,
  ceilingUrl: string,
  scratchDir: string,
  withScale: boolean,
): Promise<{ measurement: DatabaseMeasurement; scale: ScaleMeasurement | null }> {
  progress(`${database.name}: bootstrapping`);
  const token = await bootstrap(database);
  const node = await startNode(database);
  const { baseUrl, service } = node;
  try {
    progress(`${database.name}: seeding ${FLAG_COUNT} flags through the management API`);
    const seedStart = performance.now();
    const seeded = await seedConfiguration(baseUrl, token);
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
    const scenarios = evaluationScenarios(seeded, etag);
    const routes = [];
    for (const route of scenarios) {
      await checkScenario(baseUrl, route);
      const measured = await measureRoute(
        baseUrl,
        route.name,
        route.scenario,
        route.target,
        scratchDir,
      );
      if (route.target !== null) {
        measured.paired = await measurePairedRatios(
          ceilingUrl,
          baseUrl,
          route.name,
          route.scenario,
          scratchDir,
        );
      }
      routes.push(measured);
    }
    const usageCost = [];
    for (const route of scenarios.filter((scenario) => scenario.recordsUsage)) {
      usageCost.push(await measureUsageCost(baseUrl, route, scratchDir));
    }
    const serverEvaluate = required(scenarios[0], 'scenario').scenario;
    const workers = await measureWorkers(database, node, serverEvaluate, scratchDir);
    const scale = withScale
      ? await measureScale({
          database,
          node,
          token,
          serverEvaluate,
          scratchDir,
          progress,
        })
      : null;
    return {
      measurement: {
        database: database.name,
        seedSeconds,
        configurationBytes: Buffer.byteLength(configuration),
        notes: seeded.notes,
        routes,
        usageCost,
        workers,
      },
      scale,
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
  const loadAtStart = required(loadavg()[0], 'load average');
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const fastify = await measureCeiling('fastify', HELLO_SCENARIO, scratchDir);
      const node = await measureCeiling('node', HELLO_SCENARIO, scratchDir);
      const fastifyPost = await measureCeiling('fastify', BARE_EVALUATE_SCENARIO, scratchDir);
      const databases: DatabaseMeasurement[] = [];
      const skipped: string[] = [];
      let scale: ScaleMeasurement | null = null;
      let idleRoute: IdleRouteMeasurement[] = [];
      // The ceiling the routes are paired with (issue 23: bare node:http, the higher of the two);
      // idle while a route is loaded.
      const ceiling = await startCeiling('node');
      await withCleanup(
        () => ceiling.server.stop(),
        async () => {
          // What any schema-validated JSON POST reaches on this machine (design record 014).
          const bareFastify = await startCeiling('fastify');
          await withCleanup(
            () => bareFastify.server.stop(),
            async () => {
              fastifyPost.paired = await measurePairedRatios(
                ceiling.url,
                bareFastify.url,
                'bare Fastify POST',
                BARE_EVALUATE_SCENARIO,
                scratchDir,
              );
              idleRoute = await measureIdleRoute(bareFastify.url, scratchDir);
            },
          );
          const sqlite = await measureService(
            sqliteDatabase(scratchDir, 'routes'),
            ceiling.url,
            scratchDir,
            false,
          );
          databases.push(sqlite.measurement);
          const postgres = await postgresDatabase();
          if ('unavailable' in postgres) {
            skipped.push(
              postgres.unavailable,
              'two nodes, SSE fan-out and webhooks: need PostgreSQL',
            );
            progress(`skipping PostgreSQL: ${postgres.unavailable}`);
          } else {
            const measured = await measureService(postgres, ceiling.url, scratchDir, true);
            databases.push(measured.measurement);
            scale = measured.scale;
          }
        },
      );
      // On SQLite: seeding 235,000 rows there takes seconds, on PostgreSQL half a minute; its
      // page cache (2 MB by default) hardly counts next to the snapshots.
      const memory = await measureMemory(sqliteDatabase(scratchDir, 'memory'), progress);
      const relay = await measureRelay(scratchDir, progress);
      const codeRefs = await measureCodeRefsScan(scratchDir, progress);
      const micro = await microBenchmark();
      const report: BenchReport = {
        date: new Date(),
        machine: {
          cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
          cores: cpus().length,
          memoryGb: totalmem() / 1024 ** 3,
          node: process.version,
          platform: `${process.platform}-${process.arch}`,
          loadAverage: { start: loadAtStart, end: required(loadavg()[0], 'load average') },
        },
        settings: {
          connections: CONNECTIONS,
          durationSeconds: DURATION_SECONDS,
          warmUpSeconds: WARM_UP_SECONDS,
          pairedRounds: PAIRED_ROUNDS,
          pairedSeconds: PAIRED_SECONDS,
        },
        seeded: {
          flags: FLAG_COUNT,
          rulesPerFlag: RULES_PER_FLAG,
          segments: SEGMENT_COUNT,
          clientVisible: FLAG_COUNT / CLIENT_VISIBLE_EVERY,
        },
        commit: gitCommit(),
        runSeconds: (performance.now() - started) / 1_000,
        ceilings: { fastify, node, fastifyPost },
        idleRoute,
        databases,
        scale,
        memory,
        skipped,
        microBenchmark: micro,
      };
      const markdown = await writeReport({
        main: renderReport(report),
        relay: renderRelayReport(relay, report.commit, report.date),
        codeRefs: renderCodeRefsReport(codeRefs, report.commit, report.date),
      });
      progress(`wrote ${REPORT_FILE}`);
      console.log(markdown);
      runOwnProcessBenchmarks();
    },
  );
}

/**
 * The benchmarks that run as scripts of their own, in this run too: `vexil cleanup` on the sample
 * application (`bench:cleanup`), OpenTelemetry's cost paired by the simultaneous method, with
 * evaluation events at 1 % and at 100 % (`bench:telemetry`), per-flag changes on 1,000 server
 * streams for a minute and for ten (`bench:stream-patches`, `bench:stream-soak`), 10,000
 * OFREP event streams on a relay (`bench:ofrep-streams`), client evaluate and OFREP bulk at 20,
 * 350 and 2,000 flags against bare `node:http` (`bench:client-scale`) and the memory of their
 * fragments (`bench:fragment-memory`), the seeded simulation of experiments' statistics
 * (`bench:experiments`), experiment results at 1,000,000 users on PostgreSQL and 100,000 on
 * SQLite (`bench:experiment-results`), and a running experiment's cost to evaluation and event
 * intake by the simultaneous method (`bench:experiment-overhead`). They print their figures.
 * @throws Error naming the script that failed
 */
function runOwnProcessBenchmarks(): void {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const runs: [string, Record<string, string>, string[]?][] = [
    ['cleanup-bench.js', {}],
    ...['0.01', '1'].map((sample): [string, Record<string, string>] => [
      'simultaneous.js',
      { VEXIL_BENCH_BASELINE_CLI: CLI, VEXIL_BENCH_CURRENT_OTEL_SAMPLE: sample },
    ]),
    ['stream-patches.js', {}],
    ['stream-patches.js', { VEXIL_BENCH_PATCH_SOAK: '1' }],
    ['ofrep-fan-out.js', {}],
    ['client-scale.js', {}],
    ['fragment-memory.js', {}, ['--expose-gc']],
    ['experiment-simulation.js', {}],
    ['experiment-results.js', {}],
    ['experiment-overhead.js', {}],
  ];
  for (const [script, env, nodeOptions = []] of runs) {
    const run = spawnSync(process.execPath, [...nodeOptions, join(here, script)], {
      stdio: 'inherit',
      env: { ...process.env, ...env },
    });
    if (run.status !== 0) throw new Error(`${script} failed (exit ${String(run.status)})`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
