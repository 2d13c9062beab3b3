/**
 * Pairs of servers measured by the simultaneous method (design records 016 and 029): both pinned
 * to one core and loaded at the same moment by two `wrk`s pinned to the other, so the scheduler
 * splits the core between them and the ratio of their throughputs is the ratio of their CPU per
 * request, whatever the machine's drift. {@link measurePair} also reports CPU microseconds per
 * request from `/proc/<pid>/stat`; {@link measureTreatment} pairs two `vexil serve`s that differ
 * by one treatment on several scenarios in alternating rounds. Needs Linux (`taskset`, `/proc`),
 * `wrk` and two cores.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { sqliteDatabase, type BenchDatabase } from './databases.js';
import {
  freePort,
  startService,
  waitUntilAnswering,
  withCleanup,
  type Service,
} from './processes.js';
import { ManagementClient } from './seed.js';
import { bootstrap, CLI, nodeEnvironment, type Node } from './service.js';
import { required } from './required.js';
import { median } from './statistics.js';
import { runWrk, type LoadScenario, type NamedScenario } from './wrk.js';

const SERVER_CORE = 1;
const LOAD_CORE = 0;
const ROUNDS = 3;
/** Rounds of {@link measureTreatment}, each loading every scenario once. */
export const ALTERNATING_ROUNDS = 5;
/** Seconds each measured load lasts. */
export const SECONDS = 5;
/** Connections each `wrk` keeps open. */
export const CONNECTIONS = 50;
/** Linux reports process CPU time in clock ticks of 1/100 s. */
const MICROSECONDS_PER_TICK = 10_000;

/** A server pinned to {@link SERVER_CORE}, and where it answers. */
export interface PinnedServer {
  service: Service;
  baseUrl: string;
}

/** CPU time (user + system) used so far by process `pid`, in microseconds. */
async function cpuMicroseconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * MICROSECONDS_PER_TICK;
}

/** Starts `node args…` pinned to the servers' core; it answers on `port`. */
export function startPinned(
  args: string[],
  env: Record<string, string>,
  port: number,
): PinnedServer {
  // taskset replaces itself with node, so the child's pid is the server's.
  const service = startService(
    'taskset',
    ['-c', String(SERVER_CORE), process.execPath, ...args],
    env,
  );
  return { service, baseUrl: `http://127.0.0.1:${port}` };
}

/**
 * Starts `vexil serve` on `database`, pinned to the servers' core on a free port, and waits
 * until it answers.
 * @param started where the node goes as soon as it runs, for the caller to stop it (also when
 *   it never answers)
 * @param nodeFlags Node.js options for the node, e.g. `--cpu-prof` to profile it
 */
export async function startPinnedNode(
  database: BenchDatabase,
  started: PinnedServer[],
  nodeFlags: string[] = [],
): Promise<Node> {
  const port = await freePort();
  const node = startPinned(
    [...nodeFlags, CLI, 'serve'],
    { ...nodeEnvironment(database), VEXIL_PORT: String(port) },
    port,
  );
  started.push(node);
  await waitUntilAnswering(`${node.baseUrl}/healthz`, node.service);
  return node;
}

/**
 * Bootstraps `database`, starts a pinned node on it (see {@link startPinnedNode}) and creates
 * project `key` there.
 * @returns the node, a management client of it, and the project's path relative to the
 *   organization
 */
export async function startPinnedProject(
  database: BenchDatabase,
  key: string,
  started: PinnedServer[],
  nodeFlags: string[] = [],
): Promise<{ node: Node; client: ManagementClient; project: string }> {
  const token = await bootstrap(database);
  const node = await startPinnedNode(database, started, nodeFlags);
  const client = new ManagementClient(node.baseUrl, token);
  await client.create('/projects', { key, name: key });
  return { node, client, project: `/projects/${key}` };
}

/**
 * Runs `body` with a new scratch directory, named from `prefix`, and a list for the servers it
 * starts; afterwards, also when `body` throws, stops those servers and removes the directory.
 */
export async function withPinnedServers<T>(
  prefix: string,
  body: (scratchDir: string, servers: PinnedServer[]) => Promise<T>,
): Promise<T> {
  const scratchDir = await mkdtemp(join(tmpdir(), prefix));
  const servers: PinnedServer[] = [];
  return withCleanup(
    async () => {
      await Promise.all(servers.map((server) => server.service.stop()));
      await rm(scratchDir, { recursive: true, force: true });
    },
    () => body(scratchDir, servers),
  );
}

/** Loads `first` and `second` at the same moment for `durationSeconds`, from the load core. */
function loadBoth(
  first: { server: PinnedServer; scenario: LoadScenario },
  second: { server: PinnedServer; scenario: LoadScenario },
  scratchDir: string,
  durationSeconds: number,
) {
  const load = { connections: CONNECTIONS, scratchDir, cpu: LOAD_CORE, durationSeconds };
  return Promise.all([
    runWrk(first.server.baseUrl, first.scenario, load),
    runWrk(second.server.baseUrl, second.scenario, load),
  ]);
}

/**
 * One pair: the reference and Vexil loaded at once, {@link ROUNDS} times (or `options.rounds`).
 * @param options.answersAreErrors the scenario answers 4xx by design, so wrk's error count is
 *   not checked
 * @param options.labels what the rounds call the reference and the measured server
 * @returns the medians of the measured server's throughput and CPU per request relative to the
 *   reference's (above 1: the measured server does less work per request), and of its CPU per
 *   request in microseconds
 */
export async function measurePair(
  name: string,
  reference: { server: PinnedServer; scenario: LoadScenario },
  vexil: { server: PinnedServer; scenario: LoadScenario },
  scratchDir: string,
  options: { answersAreErrors?: boolean; labels?: [string, string]; rounds?: number } = {},
): Promise<{ throughput: number; cpu: number; cpuMicroseconds: number }> {
  const [referenceLabel, measuredLabel] = options.labels ?? ['bare', 'Vexil'];
  const pids = [reference.server.service.child.pid ?? 0, vexil.server.service.child.pid ?? 0];
  // Warm-up: both JITs compiled, the snapshot built.
  await loadBoth(reference, vexil, scratchDir, 2);
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  const ourCpus: number[] = [];
  for (let round = 1; round <= (options.rounds ?? ROUNDS); round++) {
    const before = await Promise.all(pids.map(cpuMicroseconds));
    const [bare, ours] = await loadBoth(reference, vexil, scratchDir, SECONDS);
    const after = await Promise.all(pids.map(cpuMicroseconds));
    if (!options.answersAreErrors && (bare.errors > 0 || ours.errors > 0))
      throw new Error(
        `${name}: errors (${bare.errors} ${referenceLabel}, ${ours.errors} ${measuredLabel})`,
      );
    const bareCpu = ((after[0] ?? 0) - (before[0] ?? 0)) / bare.requests;
    const ourCpu = ((after[1] ?? 0) - (before[1] ?? 0)) / ours.requests;
    ratios.push(ours.requestsPerSecond / bare.requestsPerSecond);
    cpuRatios.push(bareCpu / ourCpu);
    ourCpus.push(ourCpu);
    console.log(
      `${name}, round ${round}: ${referenceLabel} ${Math.round(bare.requestsPerSecond)} req/s ` +
        `(${bareCpu.toFixed(1)} µs CPU each), ${measuredLabel} ` +
        `${Math.round(ours.requestsPerSecond)} req/s ` +
        `(${ourCpu.toFixed(1)} µs) → ratio ${(ratios.at(-1) ?? 0).toFixed(2)}`,
    );
  }
  return { throughput: median(ratios), cpu: median(cpuRatios), cpuMicroseconds: median(ourCpus) };
}

/** One server of {@link measureTreatment}, and its scenarios. */
export interface AlternatingServer {
  server: PinnedServer;
  scenarios: NamedScenario[];
}

/** One scenario's rounds in {@link measureTreatment}. */
export interface AlternatedScenario {
  name: string;
  /** Each round's throughput of the treated server over the plain one's. */
  ratios: number[];
  treatedRps: number[];
  plainRps: number[];
}

/**
 * Two servers that differ by one treatment (a guarded release plan, a running experiment),
 * loaded at once on each pair of scenarios (the same index on both sides) in
 * {@link ALTERNATING_ROUNDS} rounds, the scenarios alternating within each round, after a
 * warm-up of each. Prints every round.
 * @param labels what the rounds call the treated server, and what its errors are counted as
 * @returns each scenario's rounds, named as the treated side names it
 * @throws Error when either server answers an error
 */
async function measureAlternating(
  treated: AlternatingServer,
  plain: AlternatingServer,
  scratchDir: string,
  labels: { round: string; errors: string },
): Promise<AlternatedScenario[]> {
  const results: AlternatedScenario[] = treated.scenarios.map(({ name }) => ({
    name,
    ratios: [],
    treatedRps: [],
    plainRps: [],
  }));
  const both = (index: number, durationSeconds: number) =>
    loadBoth(
      { server: treated.server, scenario: required(treated.scenarios[index], 'scenario').scenario },
      { server: plain.server, scenario: required(plain.scenarios[index], 'scenario').scenario },
      scratchDir,
      durationSeconds,
    );
  // Warm-up: both JITs compiled, the snapshots built, the treatment's state read.
  for (let index = 0; index < results.length; index++) await both(index, 2);
  for (let round = 1; round <= ALTERNATING_ROUNDS; round++) {
    for (const [index, result] of results.entries()) {
      const [withTreatment, without] = await both(index, SECONDS);
      if (withTreatment.errors > 0 || without.errors > 0)
        throw new Error(
          `${result.name}: errors (${withTreatment.errors} ${labels.errors}, ${without.errors})`,
        );
      result.ratios.push(withTreatment.requestsPerSecond / without.requestsPerSecond);
      result.treatedRps.push(withTreatment.requestsPerSecond);
      result.plainRps.push(without.requestsPerSecond);
      console.error(
        `${result.name}, round ${round}: ${labels.round} ${Math.round(withTreatment.requestsPerSecond)} req/s, ` +
          `without ${Math.round(without.requestsPerSecond)} req/s → ratio ` +
          (result.ratios.at(-1) ?? 0).toFixed(3),
      );
    }
  }
  return results;
}

/**
 * The whole method for one treatment: starts the treated node and the plain one with `start`,
 * each on its own SQLite file in a new scratch directory, measures them by
 * {@link measureAlternating}, and has `report` make the report while both still run (it may ask
 * the treated node); then, also when any of it throws, stops them and removes the directory.
 * @param benchmark names the scratch directory
 * @param labels what the treated node's database and rounds are called, and what its errors are
 *   counted as
 * @returns what `report` made
 */
export async function measureTreatment<Seeded extends AlternatingServer>(
  benchmark: string,
  start: (database: BenchDatabase, treated: boolean, nodes: PinnedServer[]) => Promise<Seeded>,
  labels: { round: string; errors: string },
  report: (results: AlternatedScenario[], treated: Seeded) => Promise<string> | string,
): Promise<string> {
  return withPinnedServers(`vexil-bench-${benchmark}-`, async (scratchDir, nodes) => {
    const treated = await start(sqliteDatabase(scratchDir, labels.round), true, nodes);
    const plain = await start(sqliteDatabase(scratchDir, 'plain'), false, nodes);
    return report(await measureAlternating(treated, plain, scratchDir, labels), treated);
  });
}

/**
 * The Markdown table of {@link measureTreatment}'s results, a row a scenario: its name, both
 * median throughputs (the treated one's headed by `treated`), the median ratio, the ratios by
 * round, and whether the median reaches `target`.
 */
export function alternatedTable(
  results: AlternatedScenario[],
  treated: string,
  target: number,
): string {
  const treatedColumn = `${treated} req/s (median)`;
  return [
    `| Scenario | ${treatedColumn} | without req/s (median) | median ratio | ratios by round | ≥ ${target} |`,
    `| -------- | ${'-'.repeat(treatedColumn.length)} | ---------------------- | ------------ | --------------- | ----------- |`,
    ...results.map((result) => alternatedRow(result, target)),
  ].join('\n');
}

/** One row of {@link alternatedTable}. */
function alternatedRow(result: AlternatedScenario, target: number): string {
  const ratio = median(result.ratios);
  const byRound = result.ratios.map((value) => value.toFixed(3)).join(', ');
  return `| ${result.name} | ${Math.round(median(result.treatedRps))} | ${Math.round(median(result.plainRps))} | ${ratio.toFixed(3)} | ${byRound} | ${ratio >= target ? 'met' : '**not met**'} |`;
}
