/**
 * `npm run bench:guarded`: what an active guarded release plan costs evaluation (issue 35:
 * "server evaluate and client evaluate with an active guarded plan on the flag, against the same
 * without, paired in one run: at least 0.9"), by the simultaneous method of design record 016.
 *
 * Two `vexil serve` processes of the same build, each on its own SQLite file, are pinned to the
 * same core (`taskset -c 1`); in one, the evaluated flag has an active release plan with a guard
 * (`PUT …/release-plan`, production, which requires no change request) at its first step, 50%,
 * so every evaluation of it goes through the `ExposureRecorder`; in the other it has no plan and
 * serves the same 50% rollout, so both evaluate alike. Two `wrk`s pinned to the
 * other core load both at the same moment with varied user ids; the scheduler splits the core
 * between the servers, so the ratio of their throughputs is the ratio of their CPU per request.
 * Rounds alternate server evaluate and client evaluate. Writes its section into
 * docs/benchmarks.md and prints it.
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
/** Distinct user ids sent in turn: every one is a new user of the plan until the next flush. */
const USERS = 2_000;
/** Client-visible flags of the project; the first is the one evaluated and guarded. */
const FLAGS = 10;
const PROJECT = 'guarded';
/** The target: guarded throughput over unguarded throughput. */
const TARGET = 0.9;

/** One seeded node and the keys to evaluate with. */
interface Seeded {
  node: Node;
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
 * on, serving `false`, and, when `guarded`, a guarded release plan on the first.
 */
async function startSeeded(
  database: BenchDatabase,
  guarded: boolean,
  nodes: Node[],
): Promise<Seeded> {
  const token = await bootstrap(database);
  const port = await freePort();
  // taskset replaces itself with node, so the child's pid is the server's.
  const service = startService(
    'taskset',
    ['-c', String(SERVER_CORE), process.execPath, CLI, 'serve'],
    { ...nodeEnvironment(database), VEXIL_PORT: String(port) },
  );
  const node = { baseUrl: `http://127.0.0.1:${port}`, service };
  nodes.push(node);
  await waitUntilAnswering(`${node.baseUrl}/healthz`, service);
  const client = new ManagementClient(node.baseUrl, token);
  await client.create('/projects', { key: PROJECT, name: PROJECT });
  const project = `/${PROJECT}`;
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
    // The fallthrough serves `false`, so a plan can roll `true` out (on both nodes alike).
    const variations = flag.variations as { key: string; id: string }[];
    const variationId = (variationKey: string) =>
      required(
        variations.find((variation) => variation.key === variationKey),
        `${variationKey} variation`,
      ).id;
    await send(
      node,
      token,
      'PATCH',
      `${project}/flags/${key}/environments/${ENVIRONMENT}`,
      { defaultVariationId: variationId('false') },
      200,
    );
    if (!guarded && index === 0) {
      // Without a plan, the flag serves what the plan's first step serves: `true` to 50%, so
      // both nodes evaluate alike and only the plan and its guard differ.
      await send(
        node,
        token,
        'PATCH',
        `${project}/flags/${key}/environments/${ENVIRONMENT}`,
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
    await send(
      node,
      token,
      'POST',
      `${project}/flags/${key}/environments/${ENVIRONMENT}/toggle`,
      { enabled: true },
      204,
    );
  }
  if (guarded) {
    await send(
      node,
      token,
      'PUT',
      `${project}/flags/${flagKey(0)}/environments/${ENVIRONMENT}/release-plan`,
      {
        variation: 'true',
        steps: [
          { percentage: 50, after: 'PT0S' },
          { percentage: 100, after: 'P30D' },
        ],
        guard: { metric: 'checkout-error', minimumUsers: 100 },
      },
      201,
    );
  }
  const keys = `/projects/${PROJECT}/environments/${ENVIRONMENT}/sdk-keys`;
  const serverKey = await client.create(keys, { name: 'server', type: 'ServerSide' });
  const clientKey = await client.create(keys, { name: 'client', type: 'ClientSide' });
  return { node, serverKey: String(serverKey.key), clientKey: String(clientKey.key) };
}

const flagKey = (index: number) => `guarded-flag-${index}`;

/** The two scenarios for one node's keys, both with {@link USERS} varied user ids. */
function scenarios(seeded: Seeded): { name: string; scenario: LoadScenario }[] {
  const json = { 'content-type': 'application/json' };
  const users = Array.from({ length: USERS }, (_, index) => `user-${index}`);
  return [
    {
      name: 'server evaluate, the guarded flag',
      scenario: {
        method: 'POST',
        path: '/v1/sdk/evaluate',
        headers: { ...json, authorization: seeded.serverKey },
        bodies: users.map((userId) => JSON.stringify({ flagKey: flagKey(0), context: { userId } })),
      },
    },
    {
      name: `client evaluate, ${FLAGS} flags (one guarded)`,
      scenario: {
        method: 'POST',
        path: '/v1/client/evaluate',
        headers: { ...json, authorization: seeded.clientKey },
        bodies: users.map((userId) => JSON.stringify({ context: { userId } })),
      },
    },
  ];
}

interface Measured {
  name: string;
  ratios: number[];
  guardedRps: number[];
  plainRps: number[];
}

async function measure(guarded: Seeded, plain: Seeded, scratchDir: string): Promise<Measured[]> {
  const load = { connections: CONNECTIONS, scratchDir, cpu: LOAD_CORE };
  const guardedScenarios = scenarios(guarded);
  const plainScenarios = scenarios(plain);
  const results: Measured[] = guardedScenarios.map(({ name }) => ({
    name,
    ratios: [],
    guardedRps: [],
    plainRps: [],
  }));
  const both = (index: number, durationSeconds: number) =>
    Promise.all([
      runWrk(guarded.node.baseUrl, required(guardedScenarios[index], 'scenario').scenario, {
        ...load,
        durationSeconds,
      }),
      runWrk(plain.node.baseUrl, required(plainScenarios[index], 'scenario').scenario, {
        ...load,
        durationSeconds,
      }),
    ]);
  // Warm-up: both JITs compiled, the snapshots built, the exposure recorder refreshed.
  for (let index = 0; index < results.length; index++) await both(index, 2);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [index, result] of results.entries()) {
      const [withPlan, without] = await both(index, SECONDS);
      if (withPlan.errors > 0 || without.errors > 0)
        throw new Error(`${result.name}: errors (${withPlan.errors} guarded, ${without.errors})`);
      result.ratios.push(withPlan.requestsPerSecond / without.requestsPerSecond);
      result.guardedRps.push(withPlan.requestsPerSecond);
      result.plainRps.push(without.requestsPerSecond);
      console.error(
        `${result.name}, round ${round}: guarded ${Math.round(withPlan.requestsPerSecond)} req/s, ` +
          `without ${Math.round(without.requestsPerSecond)} req/s → ratio ` +
          (result.ratios.at(-1) ?? 0).toFixed(3),
      );
    }
  }
  return results;
}

function render(results: Measured[], load: string, minutes: number): string {
  const rows = results.map(({ name, ratios, guardedRps, plainRps }) => {
    const ratio = median(ratios);
    return `| ${name} | ${Math.round(median(guardedRps))} | ${Math.round(median(plainRps))} | ${ratio.toFixed(3)} | ${ratios.map((value) => value.toFixed(3)).join(', ')} | ${ratio >= TARGET ? 'met' : '**not met**'} |`;
  });
  return `## Evaluation with an active guarded release plan

Generated by \`npm run bench:guarded\` (packages/bench/src/guarded-evaluate.ts) at commit ${gitCommit()}, ${cpus().length} cores, load average ${load} at the start (a shared machine), in ${minutes.toFixed(1)} min. Two \`vexil serve\` processes of the same build, each on its own SQLite file, pinned to one core and loaded at the same moment from the other (design record 016): in one, the evaluated flag has an active release plan with a guard at its first step (50%), so each evaluation is recorded as an exposure; in the other it has no plan and serves the same 50% rollout. ${CONNECTIONS} connections, ${USERS} user ids in turn, ${ROUNDS} rounds of ${SECONDS} s per scenario, the scenarios alternating. The ratio is guarded throughput over unguarded throughput in the same seconds. Target (issue 35): at least ${TARGET}.

| Scenario | guarded req/s (median) | without req/s (median) | median ratio | ratios by round | ≥ ${TARGET} |
| -------- | ---------------------- | ---------------------- | ------------ | --------------- | ----------- |
${rows.join('\n')}
`;
}

async function main(): Promise<void> {
  const began = performance.now();
  const load = loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
  console.error(`load average: ${load}`);
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-guarded-'));
  const nodes: Node[] = [];
  await withCleanup(
    async () => {
      await Promise.all(nodes.map((node) => node.service.stop()));
      await rm(scratchDir, { recursive: true, force: true });
    },
    async () => {
      const guarded = await startSeeded(sqliteDatabase(scratchDir, 'guarded'), true, nodes);
      const plain = await startSeeded(sqliteDatabase(scratchDir, 'plain'), false, nodes);
      const results = await measure(guarded, plain, scratchDir);
      const section = render(results, load, (performance.now() - began) / 60_000);
      await writeReport({ guarded: section });
      console.log(section);
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
