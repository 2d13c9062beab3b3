/**
 * `npm run bench:instructions`: the evaluation hot path's regression benchmark in instructions
 * (issue 23, design record 031). Throughput on a shared two-core VM drifts by a third within
 * minutes and splits fresh processes into fast and slow ones (design records 013, 029, 030);
 * instructions counted by valgrind (`callgrind`) hardly depend on the machine's load, so a
 * change in them is a change in the code.
 *
 * Each server runs under callgrind with V8's hash and random seeds fixed. `wrk` (outside
 * valgrind) warms it up, then the route is loaded for a few windows, each counted from zeroed
 * counters, and the cheapest window is kept: the steady state, once the JIT has settled. Two
 * servers run at a time, one per core.
 *
 * What is counted is the event loop's I/O phase (`uv__io_poll`): reading requests, running the
 * handlers, their microtasks and the garbage collections they trigger, and writing answers.
 * Timers and the JIT compiler's and garbage collector's helper threads are left out: under
 * valgrind a request takes some fifty times longer, so work done once a second (the webhook
 * poll, usage flushes) would weigh fifty times what it does in service.
 *
 * Instructions are not time: a process with a larger heap pays more per instruction in cache
 * misses, and the kernel's share (the socket writes) is not counted. So this benchmark says what
 * the code does per request; `npm run bench` says what it costs.
 *
 * Needs Linux, `valgrind` and `wrk`. Takes about 15 minutes.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { sqliteDatabase, type BenchDatabase } from './databases.js';
import { freePort, startService, waitUntilAnswering, withCleanup } from './processes.js';
import { required } from './required.js';
import { BARE_EVALUATE_SCENARIO, HELLO_SCENARIO, evaluationScenarios } from './scenarios.js';
import { seedConfiguration } from './seed.js';
import {
  bootstrap,
  CLI,
  HELLO_SERVER,
  IDLE_LANE_SERVER,
  nodeEnvironment,
  startNode,
} from './service.js';
import { runWrk, type LoadScenario } from './wrk.js';

/** Under valgrind a server answers a few hundred requests a second; its JIT takes minutes to settle. */
const WARM_UP_SECONDS = 120;
const WINDOWS = 3;
const WINDOW_SECONDS = 30;
const CONNECTIONS = 10;
/** Starting Vexil under valgrind takes a minute or more. */
const START_TIMEOUT_MS = 600_000;

/** One server, and the route loaded on it. */
interface Target {
  name: string;
  script: string;
  args: string[];
  env: Record<string, string>;
  scenario: LoadScenario;
}

/** What one window counted. */
interface Counted {
  name: string;
  requests: number;
  instructionsPerRequest: number;
}

const callgrindControl = promisify(execFile);

/** Runs `target` under callgrind and counts its instructions per request once the JIT has settled. */
async function count(target: Target, scratchDir: string): Promise<Counted> {
  const port = await freePort();
  const outDir = join(scratchDir, `callgrind-${port}`);
  await mkdir(outDir);
  const server = startService(
    'valgrind',
    [
      '--tool=callgrind',
      '--toggle-collect=uv__io_poll',
      `--callgrind-out-file=${join(outDir, 'out.%p')}`,
      process.execPath,
      // Fixed seeds: the hash seed alone moves a process's cost by up to 10% (design record 030).
      '--hash-seed=1',
      '--random-seed=1',
      target.script,
      ...target.args.map((arg) => (arg === '{port}' ? String(port) : arg)),
    ],
    { ...target.env, VEXIL_PORT: String(port) },
  );
  const pid = String(required(server.child.pid, 'valgrind pid'));
  const url = `http://127.0.0.1:${port}`;
  const load = (durationSeconds: number) =>
    runWrk(url, target.scenario, { connections: CONNECTIONS, durationSeconds, scratchDir });
  return withCleanup(
    () => server.stop(),
    async () => {
      await waitUntilAnswering(url, server, START_TIMEOUT_MS);
      progress(`${target.name}: warming up for ${WARM_UP_SECONDS} s`);
      await load(WARM_UP_SECONDS);
      // Later windows cost less until the JIT has settled: the cheapest is the steady state.
      let counted: Counted | null = null;
      for (let window = 1; window <= WINDOWS; window++) {
        await callgrindControl('callgrind_control', ['--zero', pid]);
        const result = await load(WINDOW_SECONDS);
        if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors`);
        await callgrindControl('callgrind_control', ['--dump', pid]);
        const perRequest = (await dumpedInstructions(outDir, window)) / result.requests;
        progress(
          `${target.name}, window ${window}: ${Math.round(perRequest)} instructions/request`,
        );
        if (counted === null || perRequest < counted.instructionsPerRequest) {
          counted = {
            name: target.name,
            requests: result.requests,
            instructionsPerRequest: perRequest,
          };
        }
      }
      return required(counted, 'a window');
    },
  );
}

/** The instruction total of the `number`th dump `callgrind_control --dump` wrote (`out.<pid>.<number>`). */
async function dumpedInstructions(outDir: string, number: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const dump = (await readdir(outDir)).find((file) => file.endsWith(`.${number}`));
    if (dump) {
      const text = await readFile(join(outDir, dump), 'utf8');
      const totals = /^(?:totals|summary): (\d+)/m.exec(text);
      if (totals) return Number(totals[1]);
    }
    await sleep(200);
  }
  throw new Error(`no callgrind dump in ${outDir}`);
}

const started = performance.now();
const progress = (message: string) =>
  console.error(
    `[instructions ${((performance.now() - started) / 1_000).toFixed(0)} s] ${message}`,
  );

/** Seeds the benchmark's configuration (seed.ts) into `database` with a node outside valgrind. */
async function seed(database: BenchDatabase) {
  const token = await bootstrap(database);
  const node = await startNode(database);
  try {
    return await seedConfiguration(node.baseUrl, token);
  } finally {
    await node.service.stop();
  }
}

async function main(): Promise<void> {
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-instructions-'));
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const database = sqliteDatabase(scratchDir, 'instructions');
      const seeded = await seed(database);
      const [serverEvaluate, clientEvaluate] = evaluationScenarios(seeded, '');
      const vexil = nodeEnvironment(database);
      const idleScenario = { ...BARE_EVALUATE_SCENARIO, path: '/v1/sdk/evaluate' };
      const targets: Target[] = [
        {
          name: 'bare node:http GET /hello',
          script: HELLO_SERVER,
          args: ['{port}', 'node'],
          env: {},
          scenario: HELLO_SCENARIO,
        },
        {
          name: 'bare Fastify POST /evaluate',
          script: HELLO_SERVER,
          args: ['{port}', 'fastify'],
          env: {},
          scenario: BARE_EVALUATE_SCENARIO,
        },
        {
          name: 'idle lane route, bare node:http process',
          script: IDLE_LANE_SERVER,
          args: ['{port}', 'bare'],
          env: {},
          scenario: idleScenario,
        },
        {
          name: 'idle lane route, whole Vexil node',
          script: IDLE_LANE_SERVER,
          args: ['{port}', 'vexil'],
          env: vexil,
          scenario: idleScenario,
        },
        {
          name: required(serverEvaluate, 'scenario').name,
          script: CLI,
          args: ['serve'],
          env: vexil,
          scenario: required(serverEvaluate, 'scenario').scenario,
        },
        {
          name: required(clientEvaluate, 'scenario').name,
          script: CLI,
          args: ['serve'],
          env: vexil,
          scenario: required(clientEvaluate, 'scenario').scenario,
        },
      ];
      const counted: Counted[] = [];
      // Two at a time: one server per core (wrk's share is small at a few hundred req/s).
      for (let index = 0; index < targets.length; index += 2) {
        counted.push(
          ...(await Promise.all(
            targets.slice(index, index + 2).map((target) => count(target, scratchDir)),
          )),
        );
      }
      const reference = required(counted[1], 'bare Fastify POST').instructionsPerRequest;
      console.log(
        '| Server and route | Requests counted | Instructions per request | × bare Fastify POST |',
      );
      console.log('| --- | --- | --- | --- |');
      for (const { name, requests, instructionsPerRequest } of counted) {
        console.log(
          `| ${name} | ${requests.toLocaleString('en-US')} | ` +
            `${Math.round(instructionsPerRequest).toLocaleString('en-US')} | ` +
            `${(instructionsPerRequest / reference).toFixed(2)} |`,
        );
      }
    },
  );
}

await main();
