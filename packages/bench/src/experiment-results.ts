/**
 * `npm run bench:experiment-results`: how long `GET …/experiments/{experiment}/results` takes at
 * scale (contract `experiments.md` section 3 "Scale": 1,000,000 exposed users and 10,000,000
 * events in under 1 s on PostgreSQL, 100,000 users in under 1 s on SQLite).
 *
 * On each database a `vexil serve` is started and the flag, its three metrics (conversion,
 * count and sum, all over the `checkout` event, so one stream of events feeds all three) and a
 * 50/50 experiment are created and started through the management API, so their ids and JSON
 * columns are the service's own. The per-user rows the service would have written are then
 * inserted directly with SQL (generate_series on PostgreSQL, a recursive CTE on SQLite):
 * one `experiment_exposures` row per user, and for 30% of the users (28% of the control's,
 * 32% of the treatment's) one `experiment_metric_users` row per metric, with 1 to 66 events
 * (33.5 on average: about 10,000,000 `checkout` events per 1,000,000 users). Then the results
 * are read over HTTP, one request at a time, and the table sizes are read from the database.
 * Writes its section into docs/benchmarks.md and prints it.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { postgresDatabase, sqliteDatabase, type BenchDatabase } from './databases.js';
import { withCleanup } from './processes.js';
import { createMetrics, ENVIRONMENT, ManagementClient, startExperiment } from './seed.js';
import { gitCommit, startRun, writeReport } from './report-file.js';
import { required } from './required.js';
import { bootstrap, startNode } from './service.js';
import { median, percentile } from './statistics.js';

const PROJECT = 'experiments';
const FLAG = 'checkout-button';
/** `VEXIL_BENCH_RESULTS_SCALE` scales the users down for a quick trial of the script (default 1). */
const SCALE = Number(process.env.VEXIL_BENCH_RESULTS_SCALE ?? '1');
/** Exposed users per database (the contract's scale). */
const USERS: Record<BenchDatabase['name'], number> = {
  PostgreSQL: Math.round(1_000_000 * SCALE),
  SQLite: Math.round(100_000 * SCALE),
};
/** Timed requests per database, after one untimed. */
const REQUESTS = 20;
/** Direct executions of the two grouped reads, for the database's share of a request. */
const QUERY_RUNS = 5;
/** The contract's target for a results request (ms). */
const TARGET_MS = 1_000;
const METRICS = [
  { key: 'checkout', name: 'Checkout', eventKey: 'checkout', kind: 'conversion' },
  { key: 'checkouts', name: 'Checkouts', eventKey: 'checkout', kind: 'count' },
  {
    key: 'revenue',
    name: 'Revenue',
    eventKey: 'checkout',
    kind: 'sum',
    valueProperty: 'amount',
  },
] as const;

/** What was measured on one database. */
interface Measured {
  database: BenchDatabase['name'];
  users: number;
  metricRows: number;
  events: number;
  seedSeconds: number;
  latenciesMs: number[];
  /** Median time of the two grouped reads run directly on the database, one after the other (ms). */
  queryMs: number;
  /** Bytes of each table, its indexes included. */
  tableBytes: { exposures: number; metricUsers: number };
  /** Bytes of the whole database (a PostgreSQL database or a SQLite file). */
  databaseBytes: number;
}

/** The ids the bulk rows need: the running experiment's and its metrics' (in {@link METRICS} order). */
interface Created {
  experimentId: string;
  metricIds: string[];
  startedMs: number;
  resultsPath: string;
}

/** Creates the flag, metrics and experiment through the management API and starts it. */
async function createExperiment(client: ManagementClient): Promise<Created> {
  await client.send('POST', '/projects', { key: PROJECT, name: PROJECT }, 201);
  const project = `/projects/${PROJECT}`;
  const flag = await client.send('POST', `${project}/flags`, { key: FLAG, name: FLAG }, 201);
  const variations = flag.variations as { key: string; id: string }[];
  const falseId = required(
    variations.find((variation) => variation.key === 'false'),
    'false variation',
  ).id;
  const environment = `${project}/flags/${FLAG}/environments/${ENVIRONMENT}`;
  const singleFalse = { strategy: 'SingleVariation', defaultVariationId: falseId };
  await client.send('PATCH', environment, singleFalse, 200);
  await client.send('POST', `${environment}/toggle`, { enabled: true }, 204);
  const metricIds = await createMetrics(client, project, METRICS);
  const { started, resultsPath } = await startExperiment(client, environment, [
    'checkouts',
    'revenue',
  ]);
  return {
    experimentId: String(started.id),
    metricIds,
    startedMs: Date.parse(String(started.startedAt)),
    resultsPath,
  };
}

/*
 * The bulk rows, in SQL both dialects run: user i (0-based) is in the control (`false`) when i
 * is even, has a `user_hash` of 16 hexadecimal digits whose first 8 scramble the order (a
 * multiplicative hash mod 2^32) as real hashes do, and, with k = i / 2, events when k % 100 is
 * below 28 (control) or 32 (treatment), 1 + (k·7919) % 66 of them, each with an `amount` for
 * the sum metric. Parameters are named $experiment, $started, $users and $metricN below and
 * bound per dialect.
 */
const VARIATION_SQL = `CASE WHEN i % 2 = 0 THEN 'false' ELSE 'true' END`;
const WITH_EVENT_SQL = `(i / 2) % 100 < CASE WHEN i % 2 = 0 THEN 28 ELSE 32 END`;
const EVENTS_SQL = `(1 + ((i / 2) * 7919) % 66)`;

/** The metric rows' columns for metric `valued` (with an amount) or not. */
const metricColumns = (valued: boolean) =>
  valued ? `${EVENTS_SQL}, ${EVENTS_SQL}, ${EVENTS_SQL} * 12.5 + (i % 17)` : `${EVENTS_SQL}, 0, 0`;

/** Inserts the bulk rows on PostgreSQL, analyses the tables and measures them. */
async function seedPostgres(
  url: string,
  created: Created,
  users: number,
): Promise<Omit<Measured, 'latenciesMs' | 'seedSeconds' | 'database' | 'users'>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const hash = `lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') || lpad(to_hex(i), 8, '0')`;
    await client.query(
      `INSERT INTO experiment_exposures (experiment_id, user_hash, variation, exposed_ms)
       SELECT $1, ${hash}, ${VARIATION_SQL}, $2::bigint + i
       FROM generate_series(0::bigint, $3::bigint - 1) AS i`,
      [created.experimentId, created.startedMs, users],
    );
    for (const [index, metricId] of created.metricIds.entries()) {
      await client.query(
        `INSERT INTO experiment_metric_users
           (experiment_id, metric_id, user_hash, variation, events, with_value, value_sum)
         SELECT $1, $2, ${hash}, ${VARIATION_SQL}, ${metricColumns(index === 2)}
         FROM generate_series(0::bigint, $3::bigint - 1) AS i
         WHERE ${WITH_EVENT_SQL}`,
        [created.experimentId, metricId, users],
      );
    }
    // What autovacuum does on its own soon after such a load: statistics and the visibility map.
    await client.query('VACUUM ANALYZE experiment_exposures, experiment_metric_users');
    const counts = await client.query<{ rows: string; events: string }>(
      `SELECT count(*) AS rows, coalesce(sum(events) FILTER (WHERE metric_id = $2), 0) AS events
       FROM experiment_metric_users WHERE experiment_id = $1`,
      [created.experimentId, created.metricIds[0]],
    );
    const queryTimes = [];
    for (let run = 0; run < QUERY_RUNS; run++) {
      const began = performance.now();
      // One after the other (one connection runs one query at a time anyway).
      await client.query(EXPOSED_USERS_SQL.replace('?', '$1'), [created.experimentId]);
      await client.query(METRIC_SUMS_SQL.replace('?', '$1'), [created.experimentId]);
      queryTimes.push(performance.now() - began);
    }
    for (const query of [EXPOSED_USERS_SQL, METRIC_SUMS_SQL]) {
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS) ${query.replace('?', '$1')}`,
        [created.experimentId],
      );
      console.error(plan.rows.map((row) => row['QUERY PLAN']).join('\n'));
    }
    const sizes = await client.query<{ exposures: string; metric_users: string; total: string }>(
      `SELECT pg_total_relation_size('experiment_exposures') AS exposures,
              pg_total_relation_size('experiment_metric_users') AS metric_users,
              pg_database_size(current_database()) AS total`,
    );
    const counted = required(counts.rows[0], 'counts');
    const size = required(sizes.rows[0], 'sizes');
    return {
      metricRows: Number(counted.rows),
      events: Number(counted.events),
      queryMs: median(queryTimes),
      tableBytes: { exposures: Number(size.exposures), metricUsers: Number(size.metric_users) },
      databaseBytes: Number(size.total),
    };
  } finally {
    await client.end();
  }
}

/** The results route's two grouped reads (results.ts), `?` for the experiment id. */
const EXPOSED_USERS_SQL = `SELECT variation, count(*) AS users FROM experiment_exposures
  WHERE experiment_id = ? GROUP BY variation`;
const METRIC_SUMS_SQL = `SELECT metric_id, variation, count(*), sum(events), sum(events * events),
  sum(with_value), sum(with_value * with_value), sum(value_sum), sum(value_sum * value_sum),
  sum(value_sum * with_value)
  FROM experiment_metric_users WHERE experiment_id = ? GROUP BY metric_id, variation`;

/** Inserts the bulk rows into the SQLite file (beside the running service) and measures it. */
function seedSqlite(
  file: string,
  created: Created,
  users: number,
): Omit<Measured, 'latenciesMs' | 'seedSeconds' | 'database' | 'users' | 'databaseBytes'> {
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 10000');
    const numbers = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $users)`;
    const hash = `printf('%08x%08x', (i * 2654435761) % 4294967296, i)`;
    db.transaction(() => {
      db.prepare(
        `${numbers}
         INSERT INTO experiment_exposures (experiment_id, user_hash, variation, exposed_ms)
         SELECT $experiment, ${hash}, ${VARIATION_SQL}, $started + i FROM n`,
      ).run({ experiment: created.experimentId, started: created.startedMs, users });
      for (const [index, metricId] of created.metricIds.entries())
        db.prepare(
          `${numbers}
           INSERT INTO experiment_metric_users
             (experiment_id, metric_id, user_hash, variation, events, with_value, value_sum)
           SELECT $experiment, $metric, ${hash}, ${VARIATION_SQL}, ${metricColumns(index === 2)}
           FROM n WHERE ${WITH_EVENT_SQL}`,
        ).run({ experiment: created.experimentId, metric: metricId, users });
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    const counted = db
      .prepare(
        `SELECT count(*) AS rows, coalesce(sum(CASE WHEN metric_id = ? THEN events END), 0) AS events
         FROM experiment_metric_users WHERE experiment_id = ?`,
      )
      .get(created.metricIds[0], created.experimentId) as { rows: number; events: number };
    const queryTimes = [];
    for (let run = 0; run < QUERY_RUNS; run++) {
      const began = performance.now();
      db.prepare(EXPOSED_USERS_SQL).all(created.experimentId);
      db.prepare(METRIC_SUMS_SQL).all(created.experimentId);
      queryTimes.push(performance.now() - began);
    }
    for (const query of [EXPOSED_USERS_SQL, METRIC_SUMS_SQL])
      console.error(
        (
          db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(created.experimentId) as {
            detail: string;
          }[]
        )
          .map((row) => row.detail)
          .join('\n'),
      );
    // A WITHOUT ROWID table is its primary key's b-tree, named after the table.
    const pages = db
      .prepare(
        `SELECT name, sum(pgsize) AS bytes FROM dbstat
         WHERE name IN ('experiment_exposures', 'experiment_metric_users') GROUP BY name`,
      )
      .all() as { name: string; bytes: number }[];
    const bytes = (name: string) => pages.find((row) => row.name === name)?.bytes ?? 0;
    return {
      metricRows: counted.rows,
      events: counted.events,
      queryMs: median(queryTimes),
      tableBytes: {
        exposures: bytes('experiment_exposures'),
        metricUsers: bytes('experiment_metric_users'),
      },
    };
  } finally {
    db.close();
  }
}

/** Reads the results {@link REQUESTS} times, one at a time, after one untimed read. */
async function timeResults(client: ManagementClient, path: string, users: number) {
  const latencies = [];
  for (let request = 0; request <= REQUESTS; request++) {
    const began = performance.now();
    const results = await client.send('GET', path, undefined, 200);
    const elapsed = performance.now() - began;
    const exposed = (results.variations as { exposedUsers: number }[]).reduce(
      (sum, variation) => sum + variation.exposedUsers,
      0,
    );
    if (exposed !== users || (results.metrics as unknown[]).length !== METRICS.length)
      throw new Error(`results count ${exposed} users, not ${users}: ${JSON.stringify(results)}`);
    if (request > 0) latencies.push(elapsed);
  }
  return latencies;
}

async function measure(database: BenchDatabase): Promise<Measured> {
  const users = USERS[database.name];
  const token = await bootstrap(database);
  const node = await startNode(database);
  try {
    const client = new ManagementClient(node.baseUrl, token);
    const created = await createExperiment(client);
    console.error(`${database.name}: seeding ${users} users`);
    const began = performance.now();
    const seeded =
      database.name === 'PostgreSQL'
        ? await seedPostgres(database.url, created, users)
        : {
            ...seedSqlite(database.url, created, users),
            databaseBytes: (await stat(database.url)).size,
          };
    const seedSeconds = (performance.now() - began) / 1_000;
    console.error(
      `${database.name}: seeded in ${seedSeconds.toFixed(1)} s, ${seeded.metricRows} metric rows, ` +
        `${seeded.events} events; the two grouped reads take ${seeded.queryMs.toFixed(0)} ms`,
    );
    const latenciesMs = await timeResults(client, created.resultsPath, users);
    console.error(
      `${database.name}: results p50 ${percentile(latenciesMs, 50).toFixed(0)} ms, ` +
        `max ${Math.max(...latenciesMs).toFixed(0)} ms`,
    );
    return { database: database.name, users, seedSeconds, latenciesMs, ...seeded };
  } finally {
    await node.service.stop();
  }
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

function render(results: Measured[], skipped: string[], load: string, minutes: number): string {
  const latencyRows = results.map((result) => {
    const max = Math.max(...result.latenciesMs);
    return `| ${result.database} | ${result.users.toLocaleString('en')} | ${result.metricRows.toLocaleString('en')} | ${result.events.toLocaleString('en')} | ${percentile(result.latenciesMs, 50).toFixed(0)} | ${percentile(result.latenciesMs, 95).toFixed(0)} | ${max.toFixed(0)} | ${result.queryMs.toFixed(0)} | ${max < TARGET_MS ? 'met' : '**not met**'} |`;
  });
  const sizeRows = results.map((result) => {
    const perMillion = (bytes: number) => mib((bytes * 1_000_000) / result.users);
    const { exposures, metricUsers } = result.tableBytes;
    return `| ${result.database} | ${mib(exposures)} | ${mib(metricUsers)} | ${perMillion(exposures)} | ${perMillion(metricUsers)} | ${perMillion(exposures + metricUsers)} | ${result.seedSeconds.toFixed(0)} |`;
  });
  return `## Experiment results at scale

Generated by \`npm run bench:experiment-results\` (packages/bench/src/experiment-results.ts) at commit ${gitCommit()}, ${cpus().length} cores, load average ${load} at the start (a shared machine), in ${minutes.toFixed(1)} min. On each database a \`vexil serve\` creates a flag, three metrics over the \`checkout\` event (conversion, count, and sum of \`amount\`) and a 50/50 experiment through the management API and starts it; the rows the service keeps per user are then inserted with SQL: one exposure per user, and one row per metric for 30% of the users (28% of the control's, 32% of the treatment's) with 1 to 66 events each, about 10 million \`checkout\` events per million users. PostgreSQL's tables are vacuumed and analysed after the load, as autovacuum would. Then \`GET …/experiments/{experiment}/results\` is read ${REQUESTS} times one after another (after one untimed read). "SQL" is the median time of the route's two grouped reads run directly on the database, one after the other (the route runs them at once, on PostgreSQL on two connections; SQLite runs them on the service's event loop). Target (contract \`experiments.md\` section 3): under ${TARGET_MS} ms, at 1,000,000 users on PostgreSQL and 100,000 on SQLite.${skipped.length > 0 ? `\n\nSkipped: ${skipped.join('; ')}.` : ''}

| Database | exposed users | metric rows | events (one metric) | p50 ms | p95 ms | max ms | SQL ms | max < ${TARGET_MS} ms |
| -------- | ------------- | ----------- | ------------------- | ------ | ------ | ------ | ------ | --------------------- |
${latencyRows.join('\n')}

Table sizes, indexes included (PostgreSQL: \`pg_total_relation_size\`; SQLite: the pages of each table's b-tree in \`dbstat\`, both tables being \`WITHOUT ROWID\`):

| Database | exposures MiB | metric users MiB | exposures MiB per million users | metric users MiB per million users | both per million users | seeding s |
| -------- | ------------- | ---------------- | ------------------------------- | ---------------------------------- | ---------------------- | --------- |
${sizeRows.join('\n')}
`;
}

async function main(): Promise<void> {
  const run = startRun();
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-experiment-results-'));
  const databases: BenchDatabase[] = [];
  await withCleanup(
    async () => {
      for (const database of databases) await database.drop();
      await rm(scratchDir, { recursive: true, force: true });
    },
    async () => {
      const results: Measured[] = [];
      const skipped: string[] = [];
      const postgres = await postgresDatabase();
      if ('unavailable' in postgres) skipped.push(postgres.unavailable);
      else {
        databases.push(postgres);
        results.push(await measure(postgres));
      }
      results.push(await measure(sqliteDatabase(scratchDir, 'experiment-results')));
      const section = render(results, skipped, run.load, run.minutes());
      await writeReport({ experimentResults: section });
      console.log(section);
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
