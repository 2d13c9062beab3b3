import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCommand } from './processes.js';
import { required } from './required.js';

/** One kind of request to load a server with. */
export interface LoadScenario {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/v1/sdk/flags`. */
  path: string;
  headers: Record<string, string>;
  /** Bodies sent in turn, one per request (varied contexts); empty for none. */
  bodies: string[];
}

/** A load scenario and the name reports give it. */
export interface NamedScenario {
  name: string;
  scenario: LoadScenario;
}

/** What one wrk run measured. Latencies are in milliseconds. */
export interface LoadResult {
  connections: number;
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  /** Socket errors, time-outs and answers with a status of 400 or more. */
  errors: number;
}

/** Marks the line our Lua `done` hook prints, so wrk's own summary can change freely. */
const RESULT_MARKER = 'VEXIL_BENCH';

/** A Lua long-bracket string literal that holds `text` verbatim, whatever it contains. */
function luaString(text: string): string {
  let level = '';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
}

function luaScript(scenario: LoadScenario): string {
  const headers = Object.entries(scenario.headers)
    .map(([name, value]) => `wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`)
    .join('\n');
  // A single request is pre-built by wrk once; varied bodies need a `request` hook per call.
  const requests =
    scenario.bodies.length <= 1
      ? scenario.bodies.length === 1
        ? `wrk.body = ${luaString(required(scenario.bodies[0], 'body'))}`
        : ''
      : `local bodies = {\n${scenario.bodies.map(luaString).join(',\n')}\n}
local next_body = 0
request = function()
  next_body = next_body % #bodies + 1
  return wrk.format(nil, nil, nil, bodies[next_body])
end`;
  return `wrk.method = ${luaString(scenario.method)}
${headers}
${requests}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("${RESULT_MARKER} %.0f %.0f %.0f %.0f %.0f %.0f\\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    e.connect + e.read + e.write + e.status + e.timeout))
end
`;
}

/**
 * Loads `baseUrl + scenario.path` with wrk (one thread, `connections` keep-alive connections,
 * `durationSeconds` seconds) and returns throughput and the latency distribution.
 *
 * @param scratchDir directory for the generated Lua script
 * @throws Error when wrk fails or prints no result line
 */
export async function runWrk(
  baseUrl: string,
  scenario: LoadScenario,
  options: {
    connections: number;
    durationSeconds: number;
    scratchDir: string;
    /** Pins wrk to this core (`taskset`), for the simultaneous method (design record 016). */
    cpu?: number;
  },
): Promise<LoadResult> {
  const script = join(options.scratchDir, `wrk-${process.hrtime.bigint()}.lua`);
  await writeFile(script, luaScript(scenario));
  const wrkArgs = [
    '-t1',
    `-c${options.connections}`,
    `-d${options.durationSeconds}s`,
    '--timeout',
    '10s',
    '-s',
    script,
    baseUrl + scenario.path,
  ];
  const output =
    options.cpu === undefined
      ? await runCommand('wrk', wrkArgs)
      : await runCommand('taskset', ['-c', String(options.cpu), 'wrk', ...wrkArgs]);
  const line = output.split('\n').find((text) => text.startsWith(RESULT_MARKER));
  if (!line) throw new Error(`wrk printed no result:\n${output}`);
  const [requests, durationUs, p50, p99, p999, errors] = line
    .slice(RESULT_MARKER.length)
    .trim()
    .split(/\s+/)
    .map(Number) as [number, number, number, number, number, number];
  return {
    connections: options.connections,
    requests,
    requestsPerSecond: requests / (durationUs / 1e6),
    p50Ms: p50 / 1_000,
    p99Ms: p99 / 1_000,
    p999Ms: p999 / 1_000,
    errors,
  };
}
