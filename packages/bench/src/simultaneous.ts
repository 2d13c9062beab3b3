/**
 * `npm run bench:simultaneous -w @vexil/bench`: the regression benchmark of the evaluation hot
 * path's fixed cost, by the simultaneous method of design record 016 (design record 029).
 *
 * A `vexil serve` process and the bare Fastify reference server (hello-server.ts) are pinned to
 * the same core (`taskset -c 1`); two `wrk`s pinned to the other core load them at the same
 * moment. The scheduler splits the core between the two servers, so the ratio of their
 * throughputs is the ratio of their CPU per request, and the machine's drift hits both alike.
 * Each round also reports CPU microseconds per request from `/proc/<pid>/stat`.
 *
 * Pairs:
 * - an unmatched `GET` on Vexil against the same on bare Fastify, both answering 404 from their
 *   not-found handler: the cost of Vexil's app (hooks, logger, plugins, process) around a
 *   handler that does nothing (`/healthz` would not do: it asks the database);
 * - Vexil `POST /v1/sdk/evaluate` (one flag, no rules) against bare `POST /evaluate` with the same
 *   body and schemas.
 *
 * With `VEXIL_BENCH_BASELINE_CLI` naming another build's `packages/server/dist/cli.js`, it pairs
 * that build (the baseline) with this one instead, on the SDK routes: server evaluate, client
 * evaluate and the 304 configuration download. Each build has its own SQLite file, bootstrapped
 * by its own CLI and seeded through its own API (an older build has an older schema); the ratio
 * is this build's throughput over the baseline's, so below 1 means this build does more work
 * per request.
 *
 * With `VEXIL_BENCH_CURRENT_OTEL_SAMPLE` as well (0 to 1), the current build runs with
 * OpenTelemetry on (design record 055): traces and metrics exported to an OTLP/HTTP sink this
 * process runs (it answers 200 to everything), and that share of evaluations recorded as
 * `feature_flag.evaluation` events. Naming this build's own `cli.js` as the baseline then measures
 * what OpenTelemetry costs the hot path (`npm run bench:telemetry`).
 *
 * `VEXIL_BENCH_PROCESS_PAIRS` sets how many fresh pairs of processes are measured (3), and
 * `VEXIL_BENCH_NODE_FLAGS` passes Node.js options to the Vexil processes.
 *
 * Needs Linux (`taskset`, `/proc`), `wrk` and two cores. Prints every round, then for each pair
 * of routes the median over the pairs of processes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteDatabase, type BenchDatabase } from './databases.js';
import { freePort, waitUntilAnswering, withCleanup } from './processes.js';
import { evaluationScenarios } from './scenarios.js';
import {
  ManagementClient,
  seedConfiguration,
  seedSmallProject,
  type SmallProject,
} from './seed.js';
import { required } from './required.js';
import { bootstrap, CLI, HELLO_SERVER, nodeEnvironment } from './service.js';
import { measurePair, startPinned, type PinnedServer } from './pinned-pair.js';
import { median } from './statistics.js';
import type { LoadScenario } from './wrk.js';

/**
 * Fresh processes per measurement: one pair of processes keeps its ratio from round to round,
 * but two fresh pairs of the same builds differ by up to 20% (design record 029), so the
 * verdict is the median over several pairs of processes.
 */
const PROCESS_PAIRS = Number(process.env.VEXIL_BENCH_PROCESS_PAIRS ?? 3);
/**
 * Node.js and V8 options for the Vexil processes (space-separated), to compare process modes
 * (design record 031): e.g. `--use-largepages=silent`, or fixed `--hash-seed` and `--random-seed`.
 */
const NODE_FLAGS = (process.env.VEXIL_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
/** Another build's `cli.js` to pair this build with, instead of bare Fastify (see above). */
const BASELINE_CLI = process.env.VEXIL_BENCH_BASELINE_CLI;
/** The share of evaluations the current build records as OpenTelemetry events, if it traces. */
const CURRENT_OTEL_SAMPLE = process.env.VEXIL_BENCH_CURRENT_OTEL_SAMPLE;

const list = (values: number[]) => values.map((value) => value.toFixed(2)).join(', ');

/** The pairs' names, in the order they run. */
const UNMATCHED_PAIR = 'unmatched GET (404) vs the same on bare Fastify';
const EVALUATE_PAIR = 'server evaluate vs bare POST /evaluate';

/**
 * Starts a fresh pinned pair of processes, measures both pairs of routes, stops them.
 * @param project the seeded project; seeded on the first call
 */
async function measureProcessPair(
  database: ReturnType<typeof sqliteDatabase>,
  token: string,
  project: SmallProject | null,
  scratchDir: string,
): Promise<{ project: SmallProject; medians: Map<string, { throughput: number; cpu: number }> }> {
  const barePort = await freePort();
  const vexilPort = await freePort();
  const bare = startPinned([HELLO_SERVER, String(barePort), 'fastify'], {}, barePort);
  const vexil = startPinned(
    [...NODE_FLAGS, CLI, 'serve'],
    { ...nodeEnvironment(database), VEXIL_PORT: String(vexilPort) },
    vexilPort,
  );
  try {
    await waitUntilAnswering(`${bare.baseUrl}/hello`, bare.service);
    await waitUntilAnswering(`${vexil.baseUrl}/healthz`, vexil.service);
    const seeded =
      project ?? (await seedSmallProject(new ManagementClient(vexil.baseUrl, token), 'idle', 1));
    const body = JSON.stringify({ flagKey: seeded.flagKeys[0], context: { userId: 'u' } });
    const unmatched: LoadScenario = {
      method: 'GET',
      path: '/no-such-route',
      headers: {},
      bodies: [],
    };
    const medians = new Map<string, { throughput: number; cpu: number }>();
    medians.set(
      UNMATCHED_PAIR,
      await measurePair(
        UNMATCHED_PAIR,
        { server: bare, scenario: unmatched },
        { server: vexil, scenario: unmatched },
        scratchDir,
        { answersAreErrors: true },
      ),
    );
    const post = { 'content-type': 'application/json' };
    medians.set(
      EVALUATE_PAIR,
      await measurePair(
        EVALUATE_PAIR,
        {
          server: bare,
          scenario: { method: 'POST', path: '/evaluate', headers: post, bodies: [body] },
        },
        {
          server: vexil,
          scenario: {
            method: 'POST',
            path: '/v1/sdk/evaluate',
            headers: { ...post, authorization: seeded.serverKey },
            bodies: [body],
          },
        },
        scratchDir,
      ),
    );
    return { project: seeded, medians };
  } finally {
    await Promise.all([bare.service.stop(), vexil.service.stop()]);
  }
}

/** Medians per pair of routes, gathered over the pairs of processes. */
type ByPair = Map<string, { throughput: number[]; cpu: number[] }>;

function gather(byPair: ByPair, medians: Map<string, { throughput: number; cpu: number }>): void {
  for (const [name, { throughput, cpu }] of medians) {
    const entry = byPair.get(name) ?? { throughput: [], cpu: [] };
    entry.throughput.push(throughput);
    entry.cpu.push(cpu);
    byPair.set(name, entry);
  }
}

function summarize(byPair: ByPair): void {
  for (const [name, { throughput, cpu }] of byPair) {
    console.log(
      `${name}: throughput ratio ${median(throughput).toFixed(2)} ` +
        `(medians of ${PROCESS_PAIRS} process pairs: ${list(throughput)}); ` +
        `CPU-per-request ratio ${median(cpu).toFixed(2)} (${list(cpu)})`,
    );
  }
}

async function main(): Promise<void> {
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-simultaneous-'));
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const database = sqliteDatabase(scratchDir, 'simultaneous');
      const token = await bootstrap(database);
      let project: SmallProject | null = null;
      const byPair: ByPair = new Map();
      for (let processPair = 1; processPair <= PROCESS_PAIRS; processPair++) {
        const measured = await measureProcessPair(database, token, project, scratchDir);
        project = measured.project;
        gather(byPair, measured.medians);
      }
      summarize(byPair);
    },
  );
}

/** The SDK routes paired build against build, as `evaluationScenarios` names them. */
const BUILD_ROUTES = ['server evaluate', 'client evaluate', 'config download, 304'];

/** One build of Vexil: its CLI, its own database, and once seeded, its routes' scenarios. */
interface Build {
  cli: string;
  /** Variables added to the build's environment. */
  env: Record<string, string>;
  database: BenchDatabase;
  token: string;
  scenarios: Map<string, LoadScenario> | null;
}

/**
 * Seeds the benchmark's configuration through the build's own API, and answers its scenarios
 * of {@link BUILD_ROUTES} (the 304 one with the build's own `ETag`).
 * @throws Error when the configuration download answers without an `ETag`
 */
async function seedBuild(baseUrl: string, token: string): Promise<Map<string, LoadScenario>> {
  const seeded = await seedConfiguration(baseUrl, token);
  const download = await fetch(`${baseUrl}/v1/sdk/flags`, {
    headers: { authorization: seeded.serverKey },
  });
  await download.arrayBuffer();
  const etag = download.headers.get('etag');
  if (download.status !== 200 || !etag)
    throw new Error(`GET /v1/sdk/flags answered ${download.status} without an ETag`);
  return new Map(
    evaluationScenarios(seeded, etag)
      .filter((route) => BUILD_ROUTES.some((prefix) => route.name.startsWith(prefix)))
      .map((route) => [route.name, route.scenario]),
  );
}

/** Starts a fresh pinned process of each build, measures each route of both, stops them. */
async function measureBuildPair(
  baseline: Build,
  current: Build,
  scratchDir: string,
): Promise<Map<string, { throughput: number; cpu: number }>> {
  const builds = [baseline, current];
  const servers = await Promise.all(
    builds.map(async (build) => {
      const port = await freePort();
      return startPinned(
        [build.cli, 'serve'],
        { ...nodeEnvironment(build.database), ...build.env, VEXIL_PORT: String(port) },
        port,
      );
    }),
  );
  try {
    const scenarios = [];
    for (const [index, build] of builds.entries()) {
      const server = required(servers[index], 'server');
      await waitUntilAnswering(`${server.baseUrl}/healthz`, server.service);
      build.scenarios ??= await seedBuild(server.baseUrl, build.token);
      scenarios.push(build.scenarios);
    }
    const [baselineServer, currentServer] = servers as [PinnedServer, PinnedServer];
    const medians = new Map<string, { throughput: number; cpu: number }>();
    for (const [name, scenario] of required(scenarios[0], 'baseline scenarios')) {
      const paired = required(scenarios[1]?.get(name), `current scenario ${name}`);
      medians.set(
        name,
        await measurePair(
          name,
          { server: baselineServer, scenario },
          { server: currentServer, scenario: paired },
          scratchDir,
          { labels: ['baseline', 'current'] },
        ),
      );
    }
    return medians;
  } finally {
    await Promise.all(servers.map((server) => server.service.stop()));
  }
}

/**
 * An OTLP/HTTP sink on 127.0.0.1 that reads each export and answers 200, as a collector would.
 * @returns its base address and the function that closes it
 */
async function startOtlpSink(): Promise<{ endpoint: string; close: () => Promise<void> }> {
  const sink = createServer((request, response) => {
    request.resume();
    request.on('end', () =>
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
    );
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => sink.close(() => resolve())),
  };
}

async function mainBuilds(baselineCli: string): Promise<void> {
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-builds-'));
  const sink = CURRENT_OTEL_SAMPLE === undefined ? null : await startOtlpSink();
  await withCleanup(
    async () => {
      await sink?.close();
      await rm(scratchDir, { recursive: true, force: true });
    },
    async () => {
      const build = async (
        cli: string,
        purpose: string,
        env: Record<string, string> = {},
      ): Promise<Build> => {
        const database = sqliteDatabase(scratchDir, purpose);
        return { cli, env, database, token: await bootstrap(database, cli), scenarios: null };
      };
      const baseline = await build(baselineCli, 'baseline');
      const current = await build(
        CLI,
        'current',
        sink && CURRENT_OTEL_SAMPLE !== undefined
          ? {
              OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
              VEXIL_OTEL_EVALUATION_SAMPLE: CURRENT_OTEL_SAMPLE,
            }
          : {},
      );
      if (sink)
        console.log(`current build: OpenTelemetry on, evaluation events at ${CURRENT_OTEL_SAMPLE}`);
      const byPair: ByPair = new Map();
      for (let processPair = 1; processPair <= PROCESS_PAIRS; processPair++)
        gather(byPair, await measureBuildPair(baseline, current, scratchDir));
      summarize(byPair);
    },
  );
}

await (BASELINE_CLI ? mainBuilds(BASELINE_CLI) : main());
