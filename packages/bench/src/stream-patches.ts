/**
 * `npm run bench:stream-patches` (issue 45, design record 060): one node, many server streams
 * taking per-flag changes (`GET /v1/sdk/stream?patches=true`), a configuration of about 1 MB,
 * evaluations at a steady rate, and a toggle every second.
 *
 * 1. Seeds `VEXIL_BENCH_PATCH_FLAGS` (default 1,000) String flags of five long variations, and
 *    opens `VEXIL_BENCH_PATCH_STREAMS` (default 1,000) streams from a client process.
 * 2. Quiet: `POST /v1/sdk/evaluate` at `VEXIL_BENCH_PATCH_RATE` (default 500) requests/s for
 *    15 s with every stream open, no change. The stream clients run at the lowest CPU priority:
 *    they stand for SDKs on other machines.
 * 3. Changes: the same load while one flag is flipped every second for
 *    `VEXIL_BENCH_PATCH_SECONDS` (default 60; the soak runs 600), each change awaited on every
 *    stream.
 *
 * Reported: bytes each stream received per change against the `put` it replaces, evaluation p50
 * and p99 in both phases (target: p99 during changes under 3x the quiet p50), the server's
 * event-loop delay p99 (prom-client's: during changes, the worst of each 10 s window), change →
 * last stream,
 * and the server's memory every 30 s (the soak: no growth after warm-up). Writes its section of
 * docs/benchmarks.md (`streamPatches`, or `streamSoak` when `VEXIL_BENCH_PATCH_SOAK=1`) and
 * prints the figures as JSON; progress, with the load average, goes to stderr.
 */
import { Agent, request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sqliteDatabase } from './databases.js';
import { measureFanOut } from './fan-out.js';
import { residentMemory, withCleanup } from './processes.js';
import { gitCommit, REPORT_FILE, writeReport } from './report-file.js';
import { required } from './required.js';
import {
  ENVIRONMENT,
  flipFlag,
  forEachConcurrently,
  ManagementClient,
  type SmallProject,
} from './seed.js';
import { bootstrap, startNode } from './service.js';
import { percentile } from './statistics.js';

const FLAGS = Number(process.env.VEXIL_BENCH_PATCH_FLAGS ?? 1_000);
const STREAMS = Number(process.env.VEXIL_BENCH_PATCH_STREAMS ?? 1_000);
const RATE = Number(process.env.VEXIL_BENCH_PATCH_RATE ?? 500);
const SOAK = process.env.VEXIL_BENCH_PATCH_SOAK === '1';
const SECONDS = Number(process.env.VEXIL_BENCH_PATCH_SECONDS ?? (SOAK ? 600 : 60));
const QUIET_SECONDS = 15;
const MEMORY_EVERY_ROUNDS = 30;
const SCRAPE_EVERY_ROUNDS = 10;

const started = performance.now();
const progress = (message: string) =>
  console.error(
    `[bench:stream-patches ${((performance.now() - started) / 1_000).toFixed(0)} s, load ${required(loadavg()[0], 'load').toFixed(2)}] ${message}`,
  );

/** A flag of about a kilobyte of JSON: five String variations of 150 characters. */
const largeFlag = (key: string) => ({
  key,
  name: key,
  type: 'String',
  variations: Array.from({ length: 5 }, (_, index) => ({
    key: `v${index}`,
    value: `${key}-${index}-`.padEnd(150, 'x'),
  })),
  offVariationKey: 'v0',
});

async function seed(client: ManagementClient): Promise<SmallProject> {
  await client.create('/projects', { key: 'patches', name: 'patches' });
  const path = '/projects/patches';
  const flagKeys = Array.from({ length: FLAGS }, (_, index) => `flag-${index}`);
  await forEachConcurrently(flagKeys, 8, async (key) => {
    await client.create(`${path}/flags`, largeFlag(key));
  });
  const serverKey = await client.create(`${path}/environments/${ENVIRONMENT}/sdk-keys`, {
    name: 'server',
    type: 'ServerSide',
  });
  return {
    path,
    serverKey: String(serverKey.key),
    flagKeys,
    enabled: new Map(flagKeys.map((key) => [key, false])),
  };
}

/**
 * Sends `POST /v1/sdk/evaluate` at `rate` requests per second (in ticks of 10 ms) until
 * stopped; the latencies of those answered, in milliseconds.
 */
function steadyEvaluations(baseUrl: string, serverKey: string, flagKeys: readonly string[]) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const latencies: number[] = [];
  let failures = 0;
  let sent = 0;
  const evaluate = () => {
    const body = JSON.stringify({
      flagKey: flagKeys[sent % flagKeys.length],
      context: { userId: `user-${sent}` },
    });
    sent += 1;
    const start = performance.now();
    const outgoing = request(
      `${baseUrl}/v1/sdk/evaluate`,
      {
        method: 'POST',
        agent,
        headers: { authorization: serverKey, 'content-type': 'application/json' },
      },
      (response) => {
        response.resume();
        response.on('end', () => {
          if (response.statusCode === 200) latencies.push(performance.now() - start);
          else failures += 1;
        });
      },
    );
    outgoing.on('error', () => (failures += 1));
    outgoing.end(body);
  };
  const perTick = RATE / 100;
  let owed = 0;
  const timer = setInterval(() => {
    owed += perTick;
    for (; owed >= 1; owed -= 1) evaluate();
  }, 10);
  return {
    /** The latencies so far, and clears them for the next phase. */
    take(): { latencies: number[]; failures: number } {
      const taken = { latencies: latencies.splice(0), failures };
      failures = 0;
      return taken;
    },
    stop(): void {
      clearInterval(timer);
      agent.destroy();
    },
  };
}

/**
 * The server's V8 heap in use and event-loop delay p99 (ms) from its `/metrics`. prom-client
 * resets the delay histogram at every scrape, so the p99 is that of the time since the last one.
 */
async function scrape(
  baseUrl: string,
): Promise<{ heapBytes: number | null; loopP99Ms: number | null }> {
  const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
  const value = (name: string) => {
    const text = new RegExp(`^${name} ([\\d.e+-]+)`, 'm').exec(metrics)?.[1];
    return text === undefined ? null : Number(text);
  };
  const seconds = value('nodejs_eventloop_lag_p99_seconds');
  return {
    heapBytes: value('nodejs_heap_size_used_bytes'),
    loopP99Ms: seconds === null ? null : seconds * 1_000,
  };
}

async function main(): Promise<void> {
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-patches-'));
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const database = sqliteDatabase(scratchDir, 'patches');
      const token = await bootstrap(database);
      const node = await startNode(database);
      await withCleanup(
        () => node.service.stop(),
        async () => {
          const client = new ManagementClient(node.baseUrl, token);
          progress(`seeding ${FLAGS} flags`);
          const project = await seed(client);
          const put = await fetch(`${node.baseUrl}/v1/sdk/flags`, {
            headers: { authorization: project.serverKey },
          });
          const putBytes = (await put.arrayBuffer()).byteLength;
          const serverPid = required(node.service.child.pid, 'server pid');

          const load = steadyEvaluations(node.baseUrl, project.serverKey, project.flagKeys);
          await withCleanup(
            () => {
              load.stop();
              return Promise.resolve();
            },
            async () => {
              progress(
                `opening ${STREAMS} streams with patches; ${QUIET_SECONDS} s quiet, then a change a second for ${SECONDS} s`,
              );
              let quiet = { latencies: [] as number[], failures: 0 };
              let quietLoopP99Ms: number | null = null;
              const memory: { minute: number; rssBytes: number; heapBytes: number | null }[] = [];
              /** The event-loop delay p99 of each window of {@link SCRAPE_EVERY_ROUNDS} changes. */
              const loopP99s: number[] = [];
              let changesStartedAt = 0;
              let nextChangeAt = 0;
              const fanOut = await measureFanOut({
                name: 'server streams with patches',
                streamUrl: `${node.baseUrl}/v1/sdk/stream?patches=true`,
                authorization: project.serverKey,
                serverPid,
                streams: STREAMS,
                rounds: SECONDS,
                payloadBytes: putBytes,
                // They stand for SDKs on other machines: the server and the load come first here.
                lowPriorityClients: true,
                trigger: async () => {
                  if (changesStartedAt === 0) {
                    // Every stream is open: the quiet phase, then the changes.
                    await sleep(2_000);
                    load.take();
                    await scrape(node.baseUrl);
                    await sleep(QUIET_SECONDS * 1_000);
                    quiet = load.take();
                    quietLoopP99Ms = (await scrape(node.baseUrl)).loopP99Ms;
                    changesStartedAt = performance.now();
                    nextChangeAt = changesStartedAt;
                  }
                  await sleep(Math.max(0, nextChangeAt - performance.now()));
                  nextChangeAt += 1_000;
                  const flag = required(
                    project.flagKeys[Math.floor(Math.random() * project.flagKeys.length)],
                    'flag',
                  );
                  await flipFlag(client, project, flag);
                },
                afterRound: async (round) => {
                  const last = round + 1 === SECONDS;
                  if ((round + 1) % SCRAPE_EVERY_ROUNDS !== 0 && !last) return;
                  const { heapBytes, loopP99Ms } = await scrape(node.baseUrl);
                  if (loopP99Ms !== null) loopP99s.push(loopP99Ms);
                  if ((round + 1) % MEMORY_EVERY_ROUNDS !== 0) return;
                  memory.push({
                    minute: (round + 1) / 60,
                    rssBytes: (await residentMemory(serverPid)).rss,
                    heapBytes,
                  });
                  progress(`${round + 1} changes`);
                },
              });
              const changing = load.take();
              const changingLoopP99Ms = loopP99s.length > 0 ? Math.max(...loopP99s) : null;
              const perChangePerStream =
                fanOut.receivedBytes / fanOut.opened / fanOut.rounds.length;
              const figures = {
                flags: FLAGS,
                putBytes,
                streams: fanOut.opened,
                changes: fanOut.rounds.length,
                bytesPerChangePerStream: Math.round(perChangePerStream),
                shareOfPut: perChangePerStream / putBytes,
                quiet: summary(quiet, quietLoopP99Ms),
                changing: summary(changing, changingLoopP99Ms),
                changeToLastStreamP50Ms: percentile(
                  fanOut.rounds.map((round) => round.maxMs),
                  50,
                ),
                changeToLastStreamMaxMs: fanOut.maxMs,
                missing: fanOut.rounds.reduce((sum, round) => sum + round.missing, 0),
                memory,
                loadAverage: required(loadavg()[0], 'load'),
              };
              await writeReport(
                SOAK ? { streamSoak: renderSoak(figures) } : { streamPatches: render(figures) },
              );
              progress(`wrote its section of ${REPORT_FILE}`);
              console.log(JSON.stringify(figures, null, 2));
            },
          );
        },
      );
    },
  );
}

function summary(phase: { latencies: number[]; failures: number }, loopP99Ms: number | null) {
  return {
    evaluations: phase.latencies.length,
    failures: phase.failures,
    p50Ms: percentile(phase.latencies, 50),
    p99Ms: percentile(phase.latencies, 99),
    eventLoopP99Ms: loopP99Ms,
  };
}

type Figures = {
  flags: number;
  putBytes: number;
  streams: number;
  changes: number;
  bytesPerChangePerStream: number;
  shareOfPut: number;
  quiet: ReturnType<typeof summary>;
  changing: ReturnType<typeof summary>;
  changeToLastStreamP50Ms: number;
  changeToLastStreamMaxMs: number;
  missing: number;
  memory: { minute: number; rssBytes: number; heapBytes: number | null }[];
  loadAverage: number;
};

const ms = (value: number | null) => (value === null ? 'n/a' : `${value.toFixed(1)} ms`);
const mib = (bytes: number | null) =>
  bytes === null ? 'n/a' : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

function header(figures: Figures): string[] {
  return [
    `Commit ${gitCommit()}, ${new Date().toISOString()}; load average ${figures.loadAverage.toFixed(2)} ` +
      'at the end. One node (SQLite), the stream clients and the load in other processes on the ' +
      'same two cores: figures are indicative.',
    '',
    `${figures.flags} flags, the \`put\` ${(figures.putBytes / 1024).toFixed(0)} KiB; ${figures.streams} ` +
      `streams with \`?patches=true\`; ${figures.changes} changes, one a second; ${RATE} evaluations/s.`,
    '',
  ];
}

/** The section of docs/benchmarks.md (60 s run). */
function render(figures: Figures): string {
  const row = (name: string, phase: ReturnType<typeof summary>) =>
    `| ${name} | ${phase.evaluations} | ${phase.failures} | ${ms(phase.p50Ms)} | ${ms(phase.p99Ms)} | ${ms(phase.eventLoopP99Ms)} |`;
  return [
    '## Per-flag changes on 1,000 server streams (`npm run bench:stream-patches`, issue 45)',
    '',
    ...header(figures),
    `Bytes each stream received per change: **${figures.bytesPerChangePerStream}**, ` +
      `${(figures.shareOfPut * 100).toFixed(2)}% of a \`put\` (target under 1%). Change → last ` +
      `stream: p50 ${ms(figures.changeToLastStreamP50Ms)}, max ${ms(figures.changeToLastStreamMaxMs)}; ` +
      `${figures.missing} missed. Evaluation p99 during changes against the quiet p50: ` +
      `**${(figures.changing.p99Ms / figures.quiet.p50Ms).toFixed(1)}x** (target under 3x).`,
    '',
    '| phase | evaluations | failed | p50 | p99 | event-loop delay p99 (worst 10 s window) |',
    '| ----- | ----------- | ------ | --- | --- | ---------------------------------------- |',
    row('quiet (15 s)', figures.quiet),
    row(`a change a second (${figures.changes} s)`, figures.changing),
  ].join('\n');
}

/** The soak's section of docs/benchmarks.md. */
function renderSoak(figures: Figures): string {
  return [
    '## Soak: the per-flag change fan-out for 10 minutes (`npm run bench:stream-soak`, issue 45)',
    '',
    ...header(figures),
    `Evaluation p50 ${ms(figures.changing.p50Ms)}, p99 ${ms(figures.changing.p99Ms)}; event-loop ` +
      `delay p99 ${ms(figures.changing.eventLoopP99Ms)}; ${figures.missing} changes missed.`,
    '',
    '| minute | server RSS | V8 heap used |',
    '| ------ | ---------- | ------------ |',
    ...figures.memory.map(
      (sample) =>
        `| ${sample.minute.toFixed(1)} | ${mib(sample.rssBytes)} | ${mib(sample.heapBytes)} |`,
    ),
  ].join('\n');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
