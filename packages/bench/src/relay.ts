/**
 * Issue 36's "Measured" section: `vexil relay` against the database-backed node it follows and
 * the bare `node:http` ceiling, paired in one run; SSE fan-out of 10,000 streams on one relay;
 * and the memory of a relay holding 10,000 flags. Every server is a real process on 127.0.0.1.
 */
import { loadavg } from 'node:os';
import { sqliteDatabase, type BenchDatabase } from './databases.js';
import { heapUsed, measureFanOut, type FanOutMeasurement } from './fan-out.js';
import {
  MEMORY_ENVIRONMENTS,
  MEMORY_FLAGS,
  cloneTemplates,
  createCatalog,
  measurePhase,
  type MemoryPhase,
} from './memory.js';
import {
  freePort,
  residentMemory,
  startService,
  waitUntilAnswering,
  withCleanup,
  type Service,
} from './processes.js';
import { required } from './required.js';
import { checkScenario, evaluationScenarios, HELLO_SCENARIO } from './scenarios.js';
import { flipFlag, ManagementClient, seedConfiguration, seedSmallProject } from './seed.js';
import { bootstrap, CLI, HELLO_SERVER, startNode, type Node } from './service.js';
import { median } from './statistics.js';
import { runWrk, type LoadScenario } from './wrk.js';

/** The routes of issue 36: server evaluate, client evaluate of 50 flags, the 304 download. */
const RELAY_ROUTES = [
  'server evaluate, 1 flag',
  'client evaluate, 50 flags',
  'config download, 304',
];
const CONNECTIONS = 50;
const ROUNDS = 6;
const ROUND_SECONDS = 2;
const WARM_UP_SECONDS = 2;
export const RELAY_STREAMS = 10_000;
const FAN_OUT_ROUNDS = 3;
const STREAM_PROJECT_FLAGS = 20;
/**
 * How long a relay may take to start: it listens once it holds its upstream's initial set, which
 * for 10,000 flags × 10 environments is 70 MB of documents on a loaded machine.
 */
const RELAY_START_TIMEOUT_MS = 300_000;

/** One route on the three servers, from alternating rounds. */
export interface RelayRouteMeasurement {
  name: string;
  /** Medians over the rounds, requests per second. */
  ceiling: number;
  full: number;
  relay: number;
  /** Per round: relay ÷ full node, measured next to each other. */
  relayToFull: number[];
  relayToFullMedian: number;
  relayToCeilingMedian: number;
  fullToCeilingMedian: number;
  errors: number;
}

export interface RelayMemoryMeasurement {
  flags: number;
  environments: number;
  /** Once `/readyz` answers 200 (the relay holds every environment), bytes. */
  readyRssBytes: number;
  /** From starting the relay process to `/readyz` 200, seconds. */
  readySeconds: number;
  phases: MemoryPhase[];
  peakRssBytes: number;
}

export interface RelayMeasurement {
  connections: number;
  rounds: number;
  roundSeconds: number;
  loadAverage: { start: number; end: number };
  routes: RelayRouteMeasurement[];
  fanOut: FanOutMeasurement & {
    /** Relay RSS and V8 heap before the streams opened (bytes). */
    rssBeforeBytes: number;
    heapBeforeBytes: number | null;
  };
  memory: RelayMemoryMeasurement;
}

/** The parts of {@link measureRelay}, selectable with `VEXIL_BENCH_PARTS` (relay-bench.ts). */
export const RELAY_PARTS = ['throughput', 'fanout', 'memory'] as const;
export type RelayPart = (typeof RELAY_PARTS)[number];

/** What {@link measureRelay} measured of the parts asked for. */
export type RelayPartsMeasurement = Omit<RelayMeasurement, 'routes' | 'fanOut' | 'memory'> &
  Partial<Pick<RelayMeasurement, 'routes' | 'fanOut' | 'memory'>>;

/** One running `vexil relay`. */
interface Relay {
  baseUrl: string;
  service: Service;
  /** From starting the process to `/readyz` 200. */
  readySeconds: number;
}

const loadNow = () => required(loadavg()[0], 'load average');

/**
 * Starts `vexil relay` following `upstream` with `relayKey`, its open-file limit raised to the
 * hard limit (10,000 streams need 10,000 descriptors; `sh` then `exec`s node), and waits for
 * `/readyz` 200: it then holds every environment its key covers.
 */
export async function startRelay(upstream: Node, relayKey: string): Promise<Relay> {
  const port = await freePort();
  const started = performance.now();
  const service = startService(
    'sh',
    [
      '-c',
      'ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"',
      process.execPath,
      CLI,
      'relay',
      '--upstream',
      upstream.baseUrl,
      '--port',
      String(port),
    ],
    {
      VEXIL_RELAY_KEY: relayKey,
      VEXIL_HOST: '127.0.0.1',
      VEXIL_LOG_LEVEL: 'warn',
      VEXIL_RATE_LIMIT: '100000000',
    },
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  await withCleanupOnError(service, async () => {
    await waitUntilAnswering(`${baseUrl}/healthz`, service, RELAY_START_TIMEOUT_MS);
    await until(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, 'relay ready');
  });
  return { baseUrl, service, readySeconds: (performance.now() - started) / 1_000 };
}

async function withCleanupOnError(service: Service, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    await service.stop();
    throw new Error(`${String(error)}\nrelay output:\n${service.output()}`, { cause: error });
  }
}

/** Polls `condition` every 100 ms until it holds. */
async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + RELAY_START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what}: not within ${RELAY_START_TIMEOUT_MS} ms`);
}

/** A relay key of the bench organization. */
export async function createRelayKey(client: ManagementClient): Promise<string> {
  return String((await client.create('/relay-keys', { name: 'bench relay' })).key);
}

/**
 * Loads `scenario` on the ceiling, the full node and the relay in {@link ROUNDS} rounds, each
 * round in a different order (rotating), so all three see the same machine (design record 013).
 */
async function measureRouteOnThree(
  urls: { ceiling: string; full: string; relay: string },
  name: string,
  scenario: LoadScenario,
  scratchDir: string,
  progress: (message: string) => void,
): Promise<RelayRouteMeasurement> {
  const targets = [
    { key: 'ceiling', url: urls.ceiling, scenario: HELLO_SCENARIO },
    { key: 'full', url: urls.full, scenario },
    { key: 'relay', url: urls.relay, scenario },
  ] as const;
  const rates = { ceiling: [] as number[], full: [] as number[], relay: [] as number[] };
  let errors = 0;
  for (const target of targets.slice(1)) {
    await runWrk(target.url, target.scenario, {
      connections: CONNECTIONS,
      durationSeconds: WARM_UP_SECONDS,
      scratchDir,
    });
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = [0, 1, 2].map((offset) => required(targets[(round + offset) % 3], 'target'));
    if (round % 2 === 1) order.reverse();
    for (const target of order) {
      const result = await runWrk(target.url, target.scenario, {
        connections: CONNECTIONS,
        durationSeconds: ROUND_SECONDS,
        scratchDir,
      });
      errors += result.errors;
      rates[target.key].push(result.requestsPerSecond);
    }
  }
  const ratios = (a: number[], b: number[]) =>
    a.map((value, round) => value / required(b[round], 'round'));
  const relayToFull = ratios(rates.relay, rates.full);
  const measured = {
    name,
    ceiling: median(rates.ceiling),
    full: median(rates.full),
    relay: median(rates.relay),
    relayToFull,
    relayToFullMedian: median(relayToFull),
    relayToCeilingMedian: median(ratios(rates.relay, rates.ceiling)),
    fullToCeilingMedian: median(ratios(rates.full, rates.ceiling)),
    errors,
  };
  progress(
    `relay: ${name}: relay ${Math.round(measured.relay)} req/s, full node ` +
      `${Math.round(measured.full)}, node:http ${Math.round(measured.ceiling)}; relay ÷ full ` +
      `${measured.relayToFullMedian.toFixed(2)} (${relayToFull.map((r) => r.toFixed(2)).join(', ')})`,
  );
  return measured;
}

/** Issue 36's routes on the ceiling, `full` and `relay`, paired in one run. */
async function measureThroughput(
  full: Node,
  relay: Relay,
  seeded: Awaited<ReturnType<typeof seedConfiguration>>,
  scratchDir: string,
  progress: (message: string) => void,
): Promise<RelayRouteMeasurement[]> {
  const download = await fetch(`${full.baseUrl}/v1/sdk/flags`, {
    headers: { authorization: seeded.serverKey },
  });
  await download.arrayBuffer();
  const etag = required(download.headers.get('etag') ?? undefined, 'ETag');
  const scenarios = evaluationScenarios(seeded, etag).filter((route) =>
    RELAY_ROUTES.includes(route.name),
  );
  const ceilingPort = await freePort();
  const ceiling = startService(process.execPath, [HELLO_SERVER, String(ceilingPort), 'node']);
  const ceilingUrl = `http://127.0.0.1:${ceilingPort}`;
  const routes = await withCleanup(
    () => ceiling.stop(),
    async () => {
      await waitUntilAnswering(ceilingUrl + HELLO_SCENARIO.path, ceiling);
      const measured = [];
      for (const route of scenarios) {
        await checkScenario(full.baseUrl, route);
        await checkScenario(relay.baseUrl, route);
        measured.push(
          await measureRouteOnThree(
            { ceiling: ceilingUrl, full: full.baseUrl, relay: relay.baseUrl },
            route.name,
            route.scenario,
            scratchDir,
            progress,
          ),
        );
      }
      return measured;
    },
  );
  return routes;
}

/** Throughput and fan-out (those of `parts`), on a full node seeded with the standard configuration. */
async function measureThroughputAndFanOut(
  database: BenchDatabase,
  scratchDir: string,
  parts: ReadonlySet<RelayPart>,
  progress: (message: string) => void,
): Promise<Partial<Pick<RelayMeasurement, 'routes' | 'fanOut'>>> {
  const token = await bootstrap(database);
  const full = await startNode(database);
  return withCleanup(
    () => full.service.stop(),
    async () => {
      progress('relay: seeding the full node');
      const seeded = await seedConfiguration(full.baseUrl, token);
      const client = new ManagementClient(full.baseUrl, token);
      const streams = await seedSmallProject(client, 'streams', STREAM_PROJECT_FLAGS);
      const relay = await startRelay(full, await createRelayKey(client));
      return withCleanup(
        () => relay.service.stop(),
        async () => {
          const routes = parts.has('throughput')
            ? await measureThroughput(full, relay, seeded, scratchDir, progress)
            : undefined;
          if (!parts.has('fanout')) return { routes };
          const relayPid = required(relay.service.child.pid, 'relay pid');
          const document = await (
            await fetch(`${relay.baseUrl}/v1/sdk/flags`, {
              headers: { authorization: streams.serverKey },
            })
          ).text();
          const rssBeforeBytes = (await residentMemory(relayPid)).rss;
          const heapBeforeBytes = await heapUsed(`${relay.baseUrl}/metrics`);
          progress(`relay: opening ${RELAY_STREAMS} streams`);
          const fanOut = await measureFanOut({
            name: 'vexil relay',
            streamUrl: `${relay.baseUrl}/v1/sdk/stream`,
            authorization: streams.serverKey,
            serverPid: relayPid,
            streams: RELAY_STREAMS,
            rounds: FAN_OUT_ROUNDS,
            payloadBytes: Buffer.byteLength(document),
            metricsUrl: `${relay.baseUrl}/metrics`,
            // Changed on the full node; timed from its 204 to each relay stream's `put`.
            trigger: () => flipFlag(client, streams, required(streams.flagKeys[0], 'flag')),
          });
          progress(
            `relay: fan-out to ${fanOut.opened} streams: p50 ${fanOut.p50Ms.toFixed(0)} ms, ` +
              `p99 ${fanOut.p99Ms.toFixed(0)} ms, max ${fanOut.maxMs.toFixed(0)} ms`,
          );
          return {
            routes,
            fanOut: {
              ...fanOut,
              rssBeforeBytes,
              heapBeforeBytes,
            },
          };
        },
      );
    },
  );
}

/** A relay following a full node holding {@link MEMORY_FLAGS} flags × {@link MEMORY_ENVIRONMENTS}. */
async function measureRelayMemory(
  database: BenchDatabase,
  progress: (message: string) => void,
): Promise<RelayMemoryMeasurement> {
  const token = await bootstrap(database);
  const seeding = await startNode(database);
  const client = new ManagementClient(seeding.baseUrl, token);
  let catalog: { keys: string[]; templateIds: string[] };
  let relayKey: string;
  try {
    progress(`relay memory: seeding ${MEMORY_FLAGS} flags × ${MEMORY_ENVIRONMENTS} environments`);
    catalog = await createCatalog(client);
    relayKey = await createRelayKey(client);
  } finally {
    await seeding.service.stop();
  }
  // Copied with no node running (a loaded machine's node can hold SQLite's lock past the copy's
  // busy time-out); the node started next reads every copy.
  await cloneTemplates(database.url, catalog.templateIds);
  const { keys } = catalog;
  const full = await startNode(database);
  return withCleanup(
    () => full.service.stop(),
    async () => {
      const relay = await startRelay(full, relayKey);
      return withCleanup(
        () => relay.service.stop(),
        async () => {
          const pid = required(relay.service.child.pid, 'relay pid');
          const ready = await residentMemory(pid);
          progress('relay memory: downloading and evaluating every environment on the relay');
          const downloads = await measurePhase(
            { baseUrl: relay.baseUrl, pid },
            'one `GET /v1/sdk/flags` per environment',
            async () => {
              for (const key of keys) {
                const response = await fetch(`${relay.baseUrl}/v1/sdk/flags`, {
                  headers: { authorization: key, 'accept-encoding': 'gzip' },
                });
                const flags = ((await response.json()) as { flags?: unknown[] }).flags?.length;
                if (flags !== MEMORY_FLAGS) {
                  throw new Error(`relay GET /v1/sdk/flags: ${response.status}, ${flags} flags`);
                }
              }
            },
          );
          const evaluations = await measurePhase(
            { baseUrl: relay.baseUrl, pid },
            'then one OFREP bulk evaluation of every flag per environment',
            async () => {
              for (const key of keys) {
                const response = await fetch(`${relay.baseUrl}/ofrep/v1/evaluate/flags`, {
                  method: 'POST',
                  headers: { authorization: key, 'content-type': 'application/json' },
                  body: JSON.stringify({ context: { targetingKey: 'user-1', country: 'DE' } }),
                });
                const flags = ((await response.json()) as { flags?: unknown[] }).flags?.length;
                if (flags !== MEMORY_FLAGS) {
                  throw new Error(`relay OFREP bulk: ${response.status}, ${flags} flags`);
                }
              }
            },
          );
          return {
            flags: MEMORY_FLAGS,
            environments: MEMORY_ENVIRONMENTS,
            readyRssBytes: ready.rss,
            readySeconds: relay.readySeconds,
            phases: [downloads, evaluations],
            peakRssBytes: (await residentMemory(pid)).peak,
          };
        },
      );
    },
  );
}

/**
 * Runs issue 36's measurements (on SQLite: the relay's figures do not depend on the upstream's
 * database) with scratch databases in `scratchDir`.
 *
 * @param progress receives human-readable progress lines
 */
export async function measureRelay(
  scratchDir: string,
  progress: (message: string) => void,
): Promise<RelayMeasurement> {
  const { routes, fanOut, memory, ...run } = await measureRelayParts(
    scratchDir,
    new Set(RELAY_PARTS),
    progress,
  );
  return {
    ...run,
    routes: required(routes, 'throughput'),
    fanOut: required(fanOut, 'fan-out'),
    memory: required(memory, 'memory'),
  };
}

/** {@link measureRelay}'s `parts` alone (a run that looks at one of them). */
export async function measureRelayParts(
  scratchDir: string,
  parts: ReadonlySet<RelayPart>,
  progress: (message: string) => void,
): Promise<RelayPartsMeasurement> {
  const start = loadNow();
  progress(`relay: load average ${start.toFixed(2)}`);
  const { routes, fanOut } =
    parts.has('throughput') || parts.has('fanout')
      ? await measureThroughputAndFanOut(
          sqliteDatabase(scratchDir, 'relay'),
          scratchDir,
          parts,
          progress,
        )
      : {};
  const memory = parts.has('memory')
    ? await measureRelayMemory(sqliteDatabase(scratchDir, 'relay-memory'), progress)
    : undefined;
  const end = loadNow();
  progress(`relay: load average ${end.toFixed(2)}`);
  return {
    connections: CONNECTIONS,
    rounds: ROUNDS,
    roundSeconds: ROUND_SECONDS,
    loadAverage: { start, end },
    routes,
    fanOut,
    memory,
  };
}
