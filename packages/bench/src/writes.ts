/**
 * `npm run bench:writes`: management write throughput at several numbers of concurrent clients
 * (issue 37, design record 036), on SQLite, on one PostgreSQL node and on two PostgreSQL nodes
 * sharing one database, all running at once and measured in alternation, so that the machine's
 * drift (and whatever else shares its cores) hits every setup alike.
 *
 * Each client sends one write after the other to one project: flag creates (a new key each
 * time), or toggles that flip a flag of its own (always a real change). On two nodes the clients
 * alternate between the nodes. A cell of the table is the median over {@link ROUNDS} rounds of
 * {@link SECONDS} s each; any answer other than 2xx, or a failed request, counts as an error.
 * Writes its section into docs/benchmarks.md (kept there by `npm run bench`) and prints it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { postgresDatabase, sqliteDatabase, type BenchDatabase } from './databases.js';
import { withCleanup } from './processes.js';
import { ENVIRONMENT, forEachConcurrently, ManagementClient } from './seed.js';
import { gitCommit, writeReport } from './report-file.js';
import { bootstrap, startNode, type Node } from './service.js';
import { required } from './required.js';
import { median } from './statistics.js';

const CLIENTS = [1, 10, 50, 200];
/** From how many clients the two-node target is judged: the concurrent bursts of issue 37. */
const BURST_CLIENTS = 50;
const ROUNDS = 3;
const SECONDS = 3;
const PROJECT = 'writes';

const OPERATIONS = ['create', 'toggle'] as const;
type Operation = (typeof OPERATIONS)[number];

interface Setup {
  name: string;
  nodes: Node[];
  /** A management client per node. */
  clients: ManagementClient[];
  /** Per toggling client: its flag and whether it is on now. */
  toggled: { key: string; enabled: boolean }[];
}

interface Cell {
  setup: string;
  operation: Operation;
  clients: number;
  perSecond: number[];
  errors: number;
  /** The first few error answers, for the report. */
  examples: string[];
}

async function prepare(name: string, database: BenchDatabase, nodeCount: number): Promise<Setup> {
  const token = await bootstrap(database);
  const nodes: Node[] = [];
  for (let i = 0; i < nodeCount; i++) nodes.push(await startNode(database));
  const clients = nodes.map((node) => new ManagementClient(node.baseUrl, token));
  const client = required(clients[0], 'client');
  await client.create('/projects', { key: PROJECT, name: PROJECT });
  const toggled = Array.from({ length: Math.max(...CLIENTS) }, (_, i) => ({
    key: `toggled-${i}`,
    enabled: false,
  }));
  await forEachConcurrently(toggled, 10, async ({ key }) => {
    await client.create(`/projects/${PROJECT}/flags`, { key });
  });
  return { name, nodes, clients, toggled };
}

/** Runs `clients` clients against `setup` for {@link SECONDS} s; answers writes per second. */
async function measure(
  setup: Setup,
  operation: Operation,
  clients: number,
  round: number,
  cell: Cell,
): Promise<number> {
  const deadline = performance.now() + SECONDS * 1_000;
  let written = 0;
  const started = performance.now();
  const client = async (index: number) => {
    const management = required(setup.clients[index % setup.clients.length], 'client');
    const flag = required(setup.toggled[index], 'toggled flag');
    for (let n = 0; performance.now() < deadline; n++) {
      const [path, body] =
        operation === 'create'
          ? [`/projects/${PROJECT}/flags`, { key: `c-${clients}-${round}-${index}-${n}` }]
          : [
              `/projects/${PROJECT}/flags/${flag.key}/environments/${ENVIRONMENT}/toggle`,
              { enabled: !flag.enabled },
            ];
      try {
        const answer = await management.post(path, body);
        if (answer.status < 300) {
          written++;
          if (operation === 'toggle') flag.enabled = !flag.enabled;
        } else {
          cell.errors++;
          if (cell.examples.length < 3)
            cell.examples.push(`${answer.status} ${JSON.stringify(answer.body)}`);
        }
      } catch (error) {
        cell.errors++;
        if (cell.examples.length < 3) cell.examples.push(String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, index) => client(index)));
  const perSecond = written / ((performance.now() - started) / 1_000);
  cell.perSecond.push(perSecond);
  return perSecond;
}

function cellOf(cells: Cell[], setup: string, operation: Operation, clients: number): Cell {
  return required(
    cells.find((c) => c.setup === setup && c.operation === operation && c.clients === clients),
    'cell',
  );
}

const formatRate = (value: number) => Math.round(value).toLocaleString('en-US');

function render(cells: Cell[], setups: string[], commit: string, minutes: number): string {
  const rate = (setup: string, operation: Operation, clients: number) =>
    median(cellOf(cells, setup, operation, clients).perSecond);
  const rows = cells.map((cell) => {
    const one = rate(cell.setup, cell.operation, 1);
    return `| ${cell.setup} | ${cell.operation} | ${cell.clients} | ${formatRate(median(cell.perSecond))} | ${cell.perSecond.map(formatRate).join(', ')} | ${(median(cell.perSecond) / one).toFixed(1)} | ${cell.errors} |`;
  });
  const errors = cells.reduce((sum, cell) => sum + cell.errors, 0);
  const verdicts: string[] = [
    `- 0 errors at every concurrency up to ${Math.max(...CLIENTS)}: ${
      errors === 0
        ? 'met'
        : `**not met** (${errors}: ${cells
            .flatMap((c) => c.examples)
            .slice(0, 3)
            .join('; ')})`
    }.`,
  ];
  for (const operation of OPERATIONS) {
    for (const setup of setups.filter((name) => name.startsWith('PostgreSQL'))) {
      const factor = rate(setup, operation, 50) / rate(setup, operation, 1);
      verdicts.push(
        `- ${setup}, ${operation}s, 50 clients ≥ 2 × one client: ${factor.toFixed(1)} × — ${factor >= 2 ? 'met' : '**not met**'}.`,
      );
    }
    const two = setups.find((name) => name.includes('two'));
    const one = setups.find((name) => name.includes('one'));
    if (one && two) {
      const ratios = CLIENTS.map((c) => rate(two, operation, c) / rate(one, operation, c));
      const judged = CLIENTS.flatMap((c, i) => (c >= BURST_CLIENTS ? [ratios[i] ?? 0] : []));
      verdicts.push(
        `- two nodes at least as fast as one, ${operation}s: ${ratios.map((r, i) => `${r.toFixed(2)} at ${CLIENTS[i]}`).join(', ')}; judged at ${BURST_CLIENTS} clients and more — ${judged.every((r) => r >= 1) ? 'met' : '**not met**'}.`,
      );
    }
  }
  return `## Management writes

Generated by \`npm run bench:writes\` (packages/bench/src/writes.ts) at commit ${commit}, ${cpus().length} cores, in ${minutes.toFixed(1)} min. Each setup is \`vexil serve\` process(es) started for the run: SQLite, one PostgreSQL node, and two PostgreSQL nodes on one database (clients alternate between them). Clients write one after the other to one project over HTTP (keep-alive) from the benchmark process: flag creates (a new key each time), or toggles of a flag of each client's own (always a real change). Every setup runs throughout and they are measured in alternation (${ROUNDS} rounds of ${SECONDS} s per cell), so the figures are paired within the run; other work on the machine's cores during the run makes them noisy, alike for every setup. writes/s is the median of the rounds; "× 1" is the ratio to one client of the same setup and operation. Targets (issue 37): 0 errors at any concurrency up to 200; on PostgreSQL at 50 clients at least 2 × the one-client rate; two nodes at least as fast as one, judged where writes are concurrent (${BURST_CLIENTS} clients and more): one client's writes are sequential, so a second node cannot speed them up, and on this one machine the second node's following of every change (a snapshot reload per write) takes CPU from the node that writes.

| Setup | Operation | Clients | writes/s | rounds | × 1 | Errors |
| ----- | --------- | ------- | -------- | ------ | --- | ------ |
${rows.join('\n')}

${verdicts.join('\n')}
`;
}

async function main(): Promise<void> {
  const began = performance.now();
  const scratch = await mkdtemp(join(tmpdir(), 'vexil-bench-writes-'));
  const sqlite = sqliteDatabase(scratch, 'writes');
  const databases: BenchDatabase[] = [sqlite];
  const setups: Setup[] = [];
  await withCleanup(
    async () => {
      await Promise.all(setups.flatMap((setup) => setup.nodes.map((node) => node.service.stop())));
      await Promise.all(databases.map((database) => database.drop()));
      await rm(scratch, { recursive: true, force: true });
    },
    async () => {
      const postgres = async () => {
        const database = await postgresDatabase();
        if ('unavailable' in database) throw new Error(database.unavailable);
        databases.push(database);
        return database;
      };
      setups.push(await prepare('SQLite', sqlite, 1));
      setups.push(await prepare('PostgreSQL, one node', await postgres(), 1));
      setups.push(await prepare('PostgreSQL, two nodes', await postgres(), 2));
      const cells = setups.flatMap((setup) =>
        OPERATIONS.flatMap((operation) =>
          CLIENTS.map((clients): Cell => ({
            setup: setup.name,
            operation,
            clients,
            perSecond: [],
            errors: 0,
            examples: [],
          })),
        ),
      );
      for (let round = 0; round < ROUNDS; round++) {
        for (const operation of OPERATIONS) {
          for (const clients of CLIENTS) {
            // The setups one after the other for each cell, in an order that turns each round.
            for (let i = 0; i < setups.length; i++) {
              const setup = required(setups[(i + round) % setups.length], 'setup');
              const cell = cellOf(cells, setup.name, operation, clients);
              const perSecond = await measure(setup, operation, clients, round, cell);
              console.error(
                `round ${round + 1}: ${setup.name}, ${operation}, ${clients} clients: ${formatRate(perSecond)}/s, ${cell.errors} errors so far`,
              );
            }
          }
        }
      }
      const section = render(
        cells,
        setups.map((setup) => setup.name),
        gitCommit(),
        (performance.now() - began) / 60_000,
      );
      await writeReport({ writes: section });
      console.log(section);
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
