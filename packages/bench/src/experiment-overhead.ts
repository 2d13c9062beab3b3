/**
 * `npm run bench:experiment-overhead`: what a running experiment costs the hot paths (contract
 * `experiments.md` section 3 "Scale": "event intake throughput and evaluation throughput with a
 * running experiment stay within 10% of without (paired in one run)"), by the simultaneous
 * method of design record 016, as `npm run bench:guarded` measures a guarded release plan.
 *
 * Two `vexil serve` processes of the same build, each on its own SQLite file, are pinned to the
 * same core (`taskset -c 1`), both with the same flags and the same two metrics over the
 * `checkout` event (a conversion, and the sum of its `amount`). In one, the evaluated flag has a
 * running 50/50 experiment with both metrics, so every evaluation of it is an exposure and every
 * `checkout` event is counted for its user; in the other the flag serves the same 50/50
 * percentage rollout without an experiment. Two `wrk`s pinned to the other core load both at the
 * same moment with varied user ids; the scheduler splits the core between the servers, so the
 * ratio of their throughputs is the ratio of their CPU per request. Rounds alternate server
 * evaluate, client evaluate and event intake (`Custom` `checkout` events, in batches of
 * {@link EVENTS_PER_BATCH}, from the same users). Writes its section into docs/benchmarks.md and
 * prints it.
 *
 * Needs Linux (`taskset`), `wrk` and two cores.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteDatabase, type BenchDatabase } from './databases.js';
import { freePort, startService, waitUntilAnswering, withCleanup } from './processes.js';
import { ENVIRONMENT, ManagementClient, ORG } from './seed.js';
import { gitCommit, writeReport } from './report-file.js';
import { bootstrap, CLI, nodeEnvironment, type Node } from './service.js';
import { required } from './required.js';
import { median } from './statistics.js';
import { runWrk, type LoadScenario } from './wrk.js';

const SERVER_CORE = 1;
const LOAD_CORE = 0;
const ROUNDS = 5;
const SECONDS = 5;
const CONNECTIONS = 50;
/** Distinct user ids sent in turn: every one is a new exposure until the next flush. */
const USERS = 4_000;
/** `Custom` events per intake request, each from another user. */
const EVENTS_PER_BATCH = 50;
/** Client-visible flags of the project; the first is the one evaluated and experimented on. */
const FLAGS = 10;
const PROJECT = 'experiments';
const EXPERIMENT = 'bigger-button';
/** The event the metrics count. */
const EVENT_KEY = 'checkout';
/** The contract's target: throughput with a running experiment over throughput without. */
const TARGET = 0.9;

/** One seeded node and the keys to evaluate with. */
interface Seeded {
  node: Node;
  token: string;
  serverKey: string;
  clientKey: string;
}

/** Sends a management request under the project; any answer but `expected` aborts the run. */
async function send(
  node: Node,
  token: string,
  method: 'POST' | 'PUT' | 'PATCH',
  path: string,
  body: unknown,
  expected: number,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${node.baseUrl}/api/v1/orgs/${ORG}/projects${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== expected)
    throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/**
 * Starts a pinned node on its own database, seeds {@link FLAGS} client-visible flags switched
 * on, serving `false`, and the two metrics; then, when `experimenting`, starts a 50/50 experiment
 * on the first flag, and otherwise gives that flag the same 50/50 rollout.
 */
async function startSeeded(
  database: BenchDatabase,
  experimenting: boolean,
  nodes: Node[],
): Promise<Seeded> {
  const token = await bootstrap(database);
  const port = await freePort();
  // taskset replaces itself with node, so the child's pid is the server's.
  const service = startService(
    'taskset',
    [
      '-c',
      String(SERVER_CORE),
      process.execPath,
      // Node.js options for the node, e.g. `--cpu-prof` to profile it (as `startNode` takes them).
      ...(process.env.VEXIL_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
      CLI,
      'serve',
    ],
    { ...nodeEnvironment(database), VEXIL_PORT: String(port) },
  );
  const node = { baseUrl: `http://127.0.0.1:${port}`, service };
  nodes.push(node);
  await waitUntilAnswering(`${node.baseUrl}/healthz`, service);
  const client = new ManagementClient(node.baseUrl, token);
  await client.create('/projects', { key: PROJECT, name: PROJECT });
  const project = `/${PROJECT}`;
  for (const metric of [
    { key: 'checkout', name: 'Checkout', kind: 'conversion' },
    { key: 'revenue', name: 'Revenue', kind: 'sum', valueProperty: 'amount' },
  ])
    await send(
      node,
      token,
      'POST',
      `${project}/metrics`,
      { ...metric, eventKey: EVENT_KEY, direction: 'higher_is_better' },
      201,
    );
  for (let index = 0; index < FLAGS; index++) {
    const key = flagKey(index);
    const flag = await send(
      node,
      token,
      'POST',
      `${project}/flags`,
      { key, clientSideVisible: true },
      201,
    );
    const variations = flag.variations as { key: string; id: string }[];
    const variationId = (variationKey: string) =>
      required(
        variations.find((variation) => variation.key === variationKey),
        `${variationKey} variation`,
      ).id;
    const environment = `${project}/flags/${key}/environments/${ENVIRONMENT}`;
    await send(
      node,
      token,
      'PATCH',
      environment,
      { defaultVariationId: variationId('false') },
      200,
    );
    if (!experimenting && index === 0) {
      // Without an experiment, the flag serves what the experiment's split serves: `true` to
      // 50%, so both nodes evaluate alike and only the experiment differs.
      await send(
        node,
        token,
        'PATCH',
        environment,
        {
          strategy: 'PercentageRollout',
          rollout: [
            { variationId: variationId('true'), weight: 50_000 },
            { variationId: variationId('false'), weight: 50_000 },
          ],
        },
        200,
      );
    }
    await send(node, token, 'POST', `${environment}/toggle`, { enabled: true }, 204);
  }
  if (experimenting) {
    const experiments = `${project}/flags/${flagKey(0)}/environments/${ENVIRONMENT}/experiments`;
    await send(
      node,
      token,
      'POST',
      experiments,
      {
        key: EXPERIMENT,
        name: 'Bigger button',
        variations: [
          { key: 'false', weight: 5_000 },
          { key: 'true', weight: 5_000 },
        ],
        controlVariation: 'false',
        primaryMetric: 'checkout',
        secondaryMetrics: ['revenue'],
      },
      201,
    );
    await send(node, token, 'POST', `${experiments}/${EXPERIMENT}/start`, {}, 200);
  }
  const keys = `/projects/${PROJECT}/environments/${ENVIRONMENT}/sdk-keys`;
  const serverKey = await client.create(keys, { name: 'server', type: 'ServerSide' });
  const clientKey = await client.create(keys, { name: 'client', type: 'ClientSide' });
  return { node, token, serverKey: String(serverKey.key), clientKey: String(clientKey.key) };
}

const flagKey = (index: number) => `experiment-flag-${index}`;

/** The three scenarios for one node's keys, all with {@link USERS} varied user ids. */
function scenarios(seeded: Seeded): { name: string; scenario: LoadScenario }[] {
  const json = { 'content-type': 'application/json' };
  const users = Array.from({ length: USERS }, (_, index) => `user-${index}`);
  const batches = Array.from({ length: USERS / EVENTS_PER_BATCH }, (_, batch) =>
    JSON.stringify({
      events: users
        .slice(batch * EVENTS_PER_BATCH, (batch + 1) * EVENTS_PER_BATCH)
        .map((userId, index) => ({
          type: 'Custom',
          flagKey: EVENT_KEY,
          userId,
          metadata: { amount: 10 + (index % 7) },
        })),
    }),
  );
  return [
    {
      name: 'server evaluate, the experiment’s flag',
      scenario: {
        method: 'POST',
        path: '/v1/sdk/evaluate',
        headers: { ...json, authorization: seeded.serverKey },
        bodies: users.map((userId) => JSON.stringify({ flagKey: flagKey(0), context: { userId } })),
      },
    },
    {
      name: `client evaluate, ${FLAGS} flags (one in the experiment)`,
      scenario: {
        method: 'POST',
        path: '/v1/client/evaluate',
        headers: { ...json, authorization: seeded.clientKey },
        bodies: users.map((userId) => JSON.stringify({ context: { userId } })),
      },
    },
    {
      name: `event intake, ${EVENTS_PER_BATCH} \`${EVENT_KEY}\` events per request`,
      scenario: {
        method: 'POST',
        path: '/v1/sdk/events',
        headers: { ...json, authorization: seeded.serverKey },
        bodies: batches,
      },
    },
  ];
}

interface Measured {
  name: string;
  ratios: number[];
  experimentRps: number[];
  plainRps: number[];
}

async function measure(
  experimenting: Seeded,
  plain: Seeded,
  scratchDir: string,
): Promise<Measured[]> {
  const load = { connections: CONNECTIONS, scratchDir, cpu: LOAD_CORE };
  const experimentScenarios = scenarios(experimenting);
  const plainScenarios = scenarios(plain);
  const results: Measured[] = experimentScenarios.map(({ name }) => ({
    name,
    ratios: [],
    experimentRps: [],
    plainRps: [],
  }));
  const both = (index: number, durationSeconds: number) =>
    Promise.all([
      runWrk(
        experimenting.node.baseUrl,
        required(experimentScenarios[index], 'scenario').scenario,
        { ...load, durationSeconds },
      ),
      runWrk(plain.node.baseUrl, required(plainScenarios[index], 'scenario').scenario, {
        ...load,
        durationSeconds,
      }),
    ]);
  // Warm-up: both JITs compiled, the snapshots built, the running experiments read.
  for (let index = 0; index < results.length; index++) await both(index, 2);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [index, result] of results.entries()) {
      const [withExperiment, without] = await both(index, SECONDS);
      if (withExperiment.errors > 0 || without.errors > 0)
        throw new Error(
          `${result.name}: errors (${withExperiment.errors} with the experiment, ${without.errors})`,
        );
      result.ratios.push(withExperiment.requestsPerSecond / without.requestsPerSecond);
      result.experimentRps.push(withExperiment.requestsPerSecond);
      result.plainRps.push(without.requestsPerSecond);
      console.error(
        `${result.name}, round ${round}: experiment ${Math.round(withExperiment.requestsPerSecond)} req/s, ` +
          `without ${Math.round(without.requestsPerSecond)} req/s → ratio ` +
          (result.ratios.at(-1) ?? 0).toFixed(3),
      );
    }
  }
  return results;
}

/** The running experiment's exposed users, from the node's results, to show it was recording. */
async function exposedUsers(node: Node, token: string): Promise<number> {
  const response = await fetch(
    `${node.baseUrl}/api/v1/orgs/${ORG}/projects/${PROJECT}/flags/${flagKey(0)}/environments/${ENVIRONMENT}/experiments/${EXPERIMENT}/results`,
    { headers: { authorization: `Bearer ${token}` } },
  );
  if (!response.ok)
    throw new Error(`results answered ${response.status}: ${await response.text()}`);
  const results = (await response.json()) as { variations: { exposedUsers: number }[] };
  return results.variations.reduce((sum, variation) => sum + variation.exposedUsers, 0);
}

function render(results: Measured[], exposed: number, load: string, minutes: number): string {
  const rows = results.map(({ name, ratios, experimentRps, plainRps }) => {
    const ratio = median(ratios);
    return `| ${name} | ${Math.round(median(experimentRps))} | ${Math.round(median(plainRps))} | ${ratio.toFixed(3)} | ${ratios.map((value) => value.toFixed(3)).join(', ')} | ${ratio >= TARGET ? 'met' : '**not met**'} |`;
  });
  return `## Evaluation and event intake with a running experiment

Generated by \`npm run bench:experiment-overhead\` (packages/bench/src/experiment-overhead.ts) at commit ${gitCommit()}, ${cpus().length} cores, load average ${load} at the start (a shared machine), in ${minutes.toFixed(1)} min. Two \`vexil serve\` processes of the same build, each on its own SQLite file with the same flags and the same two metrics over the \`${EVENT_KEY}\` event (a conversion and the sum of \`amount\`), pinned to one core and loaded at the same moment from the other (design record 016): in one, the evaluated flag has a running 50/50 experiment with both metrics, so each evaluation is an exposure and each \`${EVENT_KEY}\` event is counted for its user; in the other the flag serves the same 50/50 rollout without an experiment. ${CONNECTIONS} connections, ${USERS} user ids in turn (the events from the same users, ${EVENTS_PER_BATCH} per request), ${ROUNDS} rounds of ${SECONDS} s per scenario, the scenarios alternating. The ratio is the throughput with the experiment over the throughput without in the same seconds. At the end the experiment counted ${exposed.toLocaleString('en')} exposed users. Target (contract \`experiments.md\` section 3): at least ${TARGET}.

| Scenario | with experiment req/s (median) | without req/s (median) | median ratio | ratios by round | ≥ ${TARGET} |
| -------- | ------------------------------ | ---------------------- | ------------ | --------------- | ----------- |
${rows.join('\n')}
`;
}

async function main(): Promise<void> {
  const began = performance.now();
  const load = loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
  console.error(`load average: ${load}`);
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-experiment-overhead-'));
  const nodes: Node[] = [];
  await withCleanup(
    async () => {
      await Promise.all(nodes.map((node) => node.service.stop()));
      await rm(scratchDir, { recursive: true, force: true });
    },
    async () => {
      const experimenting = await startSeeded(
        sqliteDatabase(scratchDir, 'experiment'),
        true,
        nodes,
      );
      const plain = await startSeeded(sqliteDatabase(scratchDir, 'plain'), false, nodes);
      const results = await measure(experimenting, plain, scratchDir);
      const exposed = await exposedUsers(experimenting.node, experimenting.token);
      const section = render(results, exposed, load, (performance.now() - began) / 60_000);
      await writeReport({ experimentOverhead: section });
      console.log(section);
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
