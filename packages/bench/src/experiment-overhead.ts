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
import { cpus } from 'node:os';
import type { BenchDatabase } from './databases.js';
import {
  alternatedTable,
  ALTERNATING_ROUNDS,
  CONNECTIONS,
  measureTreatment,
  SECONDS,
  startPinnedProject,
  type AlternatedScenario,
  type AlternatingServer,
  type PinnedServer,
} from './pinned-pair.js';
import {
  createMetrics,
  createSdkKeys,
  ENVIRONMENT,
  seedClientVisibleFlags,
  startExperiment,
  type ManagementClient,
  type SdkKeys,
} from './seed.js';
import { gitCommit, startRun, writeReport } from './report-file.js';
import { evaluationsByUser, userIds } from './scenarios.js';
import { required } from './required.js';
import type { NamedScenario } from './wrk.js';

/** Distinct user ids sent in turn: every one is a new exposure until the next flush. */
const USERS = 4_000;
/** `Custom` events per intake request, each from another user. */
const EVENTS_PER_BATCH = 50;
/** Client-visible flags of the project; the first is the one evaluated and experimented on. */
const FLAGS = 10;
const flagKey = (index: number) => `experiment-flag-${index}`;
const PROJECT = 'experiments';
/** The event the metrics count. */
const EVENT_KEY = 'checkout';
/** The contract's target: throughput with a running experiment over throughput without. */
const TARGET = 0.9;
/** Node.js options for the nodes, e.g. `--cpu-prof` to profile them (as `startNode` takes them). */
const NODE_FLAGS = (process.env.VEXIL_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);

/** One seeded node and its scenarios, and where its running experiment's results are, if any. */
interface Seeded extends AlternatingServer {
  client: ManagementClient;
  resultsPath?: string;
}

/**
 * Starts a pinned node on its own database, seeds {@link FLAGS} client-visible flags switched
 * on, serving `false`, and the two metrics; then, when `experimenting`, starts a 50/50 experiment
 * on the first flag, and otherwise gives that flag the same 50/50 rollout.
 */
async function startSeeded(
  database: BenchDatabase,
  experimenting: boolean,
  nodes: PinnedServer[],
): Promise<Seeded> {
  const { node, client, project } = await startPinnedProject(database, PROJECT, nodes, NODE_FLAGS);
  await createMetrics(client, project, [
    { key: 'checkout', name: 'Checkout', kind: 'conversion', eventKey: EVENT_KEY },
    { key: 'revenue', name: 'Revenue', kind: 'sum', valueProperty: 'amount', eventKey: EVENT_KEY },
  ]);
  const flagKeys = Array.from({ length: FLAGS }, (_, index) => flagKey(index));
  await seedClientVisibleFlags(client, project, flagKeys, !experimenting);
  const environment = `${project}/flags/${flagKey(0)}/environments/${ENVIRONMENT}`;
  const experiment = experimenting
    ? await startExperiment(client, environment, ['revenue'])
    : undefined;
  const keys = await createSdkKeys(client, project);
  return { server: node, scenarios: scenarios(keys), client, resultsPath: experiment?.resultsPath };
}

/** The three scenarios for one node's keys, all with {@link USERS} varied user ids. */
function scenarios(keys: SdkKeys): NamedScenario[] {
  const users = userIds(USERS);
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
    ...evaluationsByUser(keys, flagKey(0), users, {
      server: 'server evaluate, the experiment’s flag',
      client: `client evaluate, ${FLAGS} flags (one in the experiment)`,
    }),
    {
      name: `event intake, ${EVENTS_PER_BATCH} \`${EVENT_KEY}\` events per request`,
      scenario: {
        method: 'POST',
        path: '/v1/sdk/events',
        headers: { 'content-type': 'application/json', authorization: keys.serverKey },
        bodies: batches,
      },
    },
  ];
}

/** The running experiment's exposed users, from the node's results, to show it was recording. */
async function exposedUsers(seeded: Seeded): Promise<number> {
  const path = required(seeded.resultsPath, 'running experiment');
  const results = await seeded.client.send('GET', path, undefined, 200);
  const variations = results.variations as { exposedUsers: number }[];
  return variations.reduce((sum, variation) => sum + variation.exposedUsers, 0);
}

function render(
  results: AlternatedScenario[],
  exposed: number,
  load: string,
  minutes: number,
): string {
  return `## Evaluation and event intake with a running experiment

Generated by \`npm run bench:experiment-overhead\` (packages/bench/src/experiment-overhead.ts) at commit ${gitCommit()}, ${cpus().length} cores, load average ${load} at the start (a shared machine), in ${minutes.toFixed(1)} min. Two \`vexil serve\` processes of the same build, each on its own SQLite file with the same flags and the same two metrics over the \`${EVENT_KEY}\` event (a conversion and the sum of \`amount\`), pinned to one core and loaded at the same moment from the other (design record 016): in one, the evaluated flag has a running 50/50 experiment with both metrics, so each evaluation is an exposure and each \`${EVENT_KEY}\` event is counted for its user; in the other the flag serves the same 50/50 rollout without an experiment. ${CONNECTIONS} connections, ${USERS} user ids in turn (the events from the same users, ${EVENTS_PER_BATCH} per request), ${ALTERNATING_ROUNDS} rounds of ${SECONDS} s per scenario, the scenarios alternating. The ratio is the throughput with the experiment over the throughput without in the same seconds. At the end the experiment counted ${exposed.toLocaleString('en')} exposed users. Target (contract \`experiments.md\` section 3): at least ${TARGET}.

${alternatedTable(results, 'with experiment', TARGET)}
`;
}

async function main(): Promise<void> {
  const run = startRun();
  const section = await measureTreatment(
    'experiment-overhead',
    startSeeded,
    { round: 'experiment', errors: 'with the experiment' },
    async (results, experimenting) =>
      render(results, await exposedUsers(experimenting), run.load, run.minutes()),
  );
  await writeReport({ experimentOverhead: section });
  console.log(section);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
