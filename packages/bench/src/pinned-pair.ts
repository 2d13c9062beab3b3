/**
 * Pairs of servers measured by the simultaneous method (design records 016 and 029): both pinned
 * to one core and loaded at the same moment by two `wrk`s pinned to the other, so the scheduler
 * splits the core between them and the ratio of their throughputs is the ratio of their CPU per
 * request, whatever the machine's drift. Each round also reports CPU microseconds per request
 * from `/proc/<pid>/stat`. Needs Linux (`taskset`, `/proc`), `wrk` and two cores.
 */
import { readFile } from 'node:fs/promises';
import process from 'node:process';
import { startService, type Service } from './processes.js';
import { median } from './statistics.js';
import { runWrk, type LoadScenario } from './wrk.js';

const SERVER_CORE = 1;
const LOAD_CORE = 0;
const ROUNDS = 3;
const SECONDS = 5;
const CONNECTIONS = 50;
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
 * One pair: the reference and Vexil loaded at once, {@link ROUNDS} times.
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
  options: { answersAreErrors?: boolean; labels?: [string, string] } = {},
): Promise<{ throughput: number; cpu: number; cpuMicroseconds: number }> {
  const [referenceLabel, measuredLabel] = options.labels ?? ['bare', 'Vexil'];
  const load = { connections: CONNECTIONS, scratchDir, cpu: LOAD_CORE };
  const pids = [reference.server.service.child.pid ?? 0, vexil.server.service.child.pid ?? 0];
  // Warm-up: both JITs compiled, the snapshot built.
  await Promise.all([
    runWrk(reference.server.baseUrl, reference.scenario, { ...load, durationSeconds: 2 }),
    runWrk(vexil.server.baseUrl, vexil.scenario, { ...load, durationSeconds: 2 }),
  ]);
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  const ourCpus: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const before = await Promise.all(pids.map(cpuMicroseconds));
    const [bare, ours] = await Promise.all([
      runWrk(reference.server.baseUrl, reference.scenario, { ...load, durationSeconds: SECONDS }),
      runWrk(vexil.server.baseUrl, vexil.scenario, { ...load, durationSeconds: SECONDS }),
    ]);
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
