/**
 * `npm run bench:client-scale`: client evaluate and OFREP bulk evaluation as the flag set grows
 * (issue 49), by the simultaneous method (pinned-pair.ts): each route of the full node and of a
 * relay is loaded at the same moment as a bare `node:http` server that reads the body and sends
 * the same bytes, both pinned to one core, `wrk` on the other.
 *
 * The configuration is the shape of Unleash Edge's published benchmark: Boolean flags, every one
 * client-visible, each with one rule of two conditions (`country` in two values and `plan` in
 * one), at 20, 350 and 2,000 flags (one project each). Every request carries another user, so no
 * answer repeats. The ratio is Vexil's throughput over the bare server's; the target at
 * 350 flags is 0.4, on the full node and on the relay. Absolute figures are printed beside it
 * (Edge publishes 6,900 requests/s on one CPU for its 350-flag set).
 *
 * `VEXIL_BENCH_CLIENT_SCALE_FLAGS` (e.g. `350`) measures fewer flag counts, and
 * `VEXIL_BENCH_NODE_FLAGS` passes Node.js options to the node and the relay (e.g. `--cpu-prof`).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { sqliteDatabase } from './databases.js';
import { measurePair, startPinned, startPinnedNode, withPinnedServers } from './pinned-pair.js';
import { freePort, waitUntilAnswering } from './processes.js';
import { createRelayKey } from './relay.js';
import { gitCommit, writeReport } from './report-file.js';
import { ENVIRONMENT, forEachConcurrently, ManagementClient } from './seed.js';
import { bootstrap, CLI, HELLO_SERVER } from './service.js';
import type { LoadScenario } from './wrk.js';

const FLAG_COUNTS = (process.env.VEXIL_BENCH_CLIENT_SCALE_FLAGS ?? '20,350,2000')
  .split(',')
  .map(Number);
const NODE_FLAGS = (process.env.VEXIL_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const CONTEXTS = 500;
/** Rounds per pair: the bare server's own cost varies by a third between rounds on this machine. */
const ROUNDS = 5;
const SEED_CONCURRENCY = 8;
const COUNTRIES = ['NL', 'DE', 'FR', 'US', 'GB'];
const PLANS = ['free', 'pro', 'enterprise'];

/** One seeded project: its SDK keys and its flag count. */
interface ScaleProject {
  flagCount: number;
  clientKey: string;
  serverKey: string;
}

/** Server evaluate of one flag is measured in the project, to compare builds. */
const SERVER_EVALUATE_FLAGS = 350;

/** Seeds project `scale-<n>` with `n` flags of the benchmark's shape, on in production. */
async function seedProject(client: ManagementClient, flagCount: number): Promise<ScaleProject> {
  const project = `/projects/scale-${flagCount}`;
  await client.create('/projects', { key: `scale-${flagCount}`, name: `${flagCount} flags` });
  const keys = Array.from({ length: flagCount }, (_, index) => `flag-${index}`);
  await forEachConcurrently(keys, SEED_CONCURRENCY, async (key) => {
    const flag = await client.create(`${project}/flags`, { key, clientSideVisible: true });
    const variations = flag.variations as { id: string; key: string }[];
    const on = variations.find((variation) => variation.key === 'true')?.id;
    const environment = `${project}/flags/${key}/environments/${ENVIRONMENT}`;
    await client.create(`${environment}/rules`, {
      variationId: on,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [
            { attribute: 'country', operator: 'In', values: ['NL', 'DE'] },
            { attribute: 'plan', operator: 'In', values: ['pro'] },
          ],
        },
      ],
    });
    await client.create(`${environment}/toggle`, { enabled: true }, 204);
  });
  const clientKey = await client.create(`${project}/environments/${ENVIRONMENT}/sdk-keys`, {
    name: 'bench client',
    type: 'ClientSide',
  });
  const serverKey = await client.create(`${project}/environments/${ENVIRONMENT}/sdk-keys`, {
    name: 'bench server',
    type: 'ServerSide',
  });
  return { flagCount, clientKey: String(clientKey.key), serverKey: String(serverKey.key) };
}

/** The users of the requests: each request another `userId`, attributes in rotation. */
const users = Array.from({ length: CONTEXTS }, (_, index) => ({
  country: COUNTRIES[index % COUNTRIES.length] ?? 'NL',
  plan: PLANS[index % PLANS.length] ?? 'pro',
  id: `user-${index}`,
}));

/**
 * The routes measured, as scenarios for Vexil (`baseUrl` is the node's or the relay's): the two
 * bulk routes, and in the 350-flag project server evaluate of one flag.
 */
function routes(project: ScaleProject): { name: string; scenario: LoadScenario }[] {
  const headers = { authorization: project.clientKey, 'content-type': 'application/json' };
  const serverEvaluate: { name: string; scenario: LoadScenario } = {
    name: 'server evaluate',
    scenario: {
      method: 'POST',
      path: '/v1/sdk/evaluate',
      headers: { authorization: project.serverKey, 'content-type': 'application/json' },
      bodies: users.map(({ id, country, plan }) =>
        JSON.stringify({ flagKey: 'flag-0', context: { userId: id, country, plan } }),
      ),
    },
  };
  return [
    ...(project.flagCount === SERVER_EVALUATE_FLAGS ? [serverEvaluate] : []),
    {
      name: 'client evaluate',
      scenario: {
        method: 'POST',
        path: '/v1/client/evaluate',
        headers,
        bodies: users.map(({ id, country, plan }) =>
          JSON.stringify({ context: { userId: id, country, plan } }),
        ),
      },
    },
    {
      name: 'OFREP bulk',
      scenario: {
        method: 'POST',
        path: '/ofrep/v1/evaluate/flags',
        headers,
        bodies: users.map(({ id, country, plan }) =>
          JSON.stringify({ context: { targetingKey: id, country, plan } }),
        ),
      },
    },
  ];
}

/** What `scenario`'s first request answers at `baseUrl`: the bytes the bare server will send. */
async function answerBytes(baseUrl: string, scenario: LoadScenario): Promise<Buffer> {
  const response = await fetch(`${baseUrl}${scenario.path}`, {
    method: 'POST',
    headers: scenario.headers,
    body: scenario.bodies[0] ?? '',
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200)
    throw new Error(`${scenario.path} answered ${response.status}: ${bytes.toString()}`);
  return bytes;
}

interface Figure {
  flagCount: number;
  route: string;
  server: 'full node' | 'relay';
  answerBytes: number;
  throughput: number;
  cpu: number;
  /** Vexil's CPU per request, in microseconds. */
  cpuMicroseconds: number;
}

/** The report's section: one row per flag count, route and server. */
function report(figures: Figure[]): string {
  const at350 = figures.filter(
    (figure) => figure.flagCount === 350 && figure.route !== 'server evaluate',
  );
  const met = at350.length > 0 && at350.every((figure) => figure.throughput >= 0.4);
  const rows = figures.map(
    (figure) =>
      `| ${figure.flagCount} | ${figure.route} | ${figure.server} | ` +
      `${(figure.answerBytes / 1024).toFixed(1)} KB | **${figure.throughput.toFixed(2)}** | ` +
      `${figure.cpu.toFixed(2)} | ${figure.cpuMicroseconds.toFixed(0)} µs | ` +
      // Requests per second of one core: what Vexil would answer alone on it.
      `${Math.round(1e6 / figure.cpuMicroseconds)} |`,
  );
  return [
    '## Client evaluate and OFREP bulk as the flag set grows (`npm run bench:client-scale`, issue 49, design records 062 and 065)',
    '',
    `Commit ${gitCommit()}, ${new Date().toISOString()}; load average ${(loadavg()[0] ?? 0).toFixed(2)} at the end.`,
    '',
    'Boolean flags, all client-visible, each with one rule of two conditions; another user per request. ' +
      'Each route of the full node and of a relay is paired with a bare `node:http` server that reads the ' +
      'body and sends the same bytes, both pinned to one core and loaded at once by `wrk -c50` on the ' +
      'other (medians of five 5 s rounds). The ratio is Vexil’s throughput over the bare server’s; ' +
      'requests/s per core is 1 s over Vexil’s CPU per request. Unleash Edge publishes 6,900 requests/s ' +
      'on one CPU for its 350-flag set (its docs/benchmarking.md).',
    '',
    `Target at 350 flags, client evaluate and OFREP bulk, full node and relay: at least 0.4 of the ceiling: **${met ? 'met' : 'not met'}**. ` +
      'Server evaluate of one flag (in the 350-flag project) is measured to show it did not get slower: design record 065 pairs it with the build before, run by this harness through `VEXIL_BENCH_CLI`.',
    '',
    '| flags | route | server | answer | throughput ratio | CPU ratio | CPU per request | requests/s per core |',
    '| ----- | ----- | ------ | ------ | ---------------- | --------- | --------------- | ------------------- |',
    ...rows,
  ].join('\n');
}

async function main(): Promise<void> {
  await withPinnedServers('vexil-client-scale-', async (scratchDir, servers) => {
    const answersDir = join(scratchDir, 'answers');
    const database = sqliteDatabase(scratchDir, 'client-scale');
    const token = await bootstrap(database);
    const node = await startPinnedNode(database, servers, NODE_FLAGS);
    const client = new ManagementClient(node.baseUrl, token);
    const projects: ScaleProject[] = [];
    for (const flagCount of FLAG_COUNTS) projects.push(await seedProject(client, flagCount));
    console.log(`seeded ${FLAG_COUNTS.join(', ')} flags`);

    const relayPort = await freePort();
    const relay = startPinned(
      [...NODE_FLAGS, CLI, 'relay', '--upstream', node.baseUrl, '--port', String(relayPort)],
      {
        VEXIL_RELAY_KEY: await createRelayKey(client),
        VEXIL_HOST: '127.0.0.1',
        VEXIL_LOG_LEVEL: 'warn',
        VEXIL_RATE_LIMIT: '100000000',
      },
      relayPort,
    );
    servers.push(relay);
    await waitUntilAnswering(`${relay.baseUrl}/readyz`, relay.service);

    // The bare server's answers: the node's bytes for each route's first request.
    await mkdir(answersDir);
    for (const project of projects)
      for (const route of routes(project))
        await writeFile(
          join(answersDir, `${project.flagCount}-${route.name.replace(' ', '-')}`),
          await answerBytes(node.baseUrl, route.scenario),
        );
    const barePort = await freePort();
    const bare = startPinned([HELLO_SERVER, String(barePort), 'node', answersDir], {}, barePort);
    servers.push(bare);
    await waitUntilAnswering(`${bare.baseUrl}/hello`, bare.service);

    const figures: Figure[] = [];
    for (const project of projects) {
      for (const route of routes(project)) {
        const answerName = `${project.flagCount}-${route.name.replace(' ', '-')}`;
        const reference = {
          server: bare,
          scenario: { ...route.scenario, path: `/answer/${answerName}` },
        };
        const size = (await answerBytes(node.baseUrl, route.scenario)).length;
        for (const [label, server] of [
          ['full node', node],
          ['relay', relay],
        ] as const) {
          const name = `${route.name}, ${project.flagCount} flags, ${label}`;
          const measured = await measurePair(
            name,
            reference,
            { server, scenario: route.scenario },
            scratchDir,
            { rounds: ROUNDS },
          );
          figures.push({
            flagCount: project.flagCount,
            route: route.name,
            server: label,
            answerBytes: size,
            ...measured,
          });
        }
      }
    }
    console.log(await writeReport({ clientScale: report(figures) }));
  });
}

await main();
