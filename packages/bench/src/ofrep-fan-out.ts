/**
 * `npm run bench:ofrep-streams` (issue 45, design record 052): OFREP event-stream clients on one
 * relay. Opens `VEXIL_BENCH_OFREP_STREAMS` (default 10,000) `GET /v1/ofrep/events?sdkKey=…` streams
 * on a relay following a full node, then toggles a flag on the full node
 * `VEXIL_BENCH_OFREP_ROUNDS` (default 10) times and measures the time from the toggle's 204 to
 * each stream's `refetchEvaluation`, and the relay's memory per stream. Writes its section of
 * docs/benchmarks.md and prints the figures as JSON; progress, with the load average, goes to
 * stderr.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteDatabase } from './databases.js';
import { heapUsed, measureFanOut } from './fan-out.js';
import { residentMemory, withCleanup } from './processes.js';
import { createRelayKey, startRelay } from './relay.js';
import { gitCommit, REPORT_FILE, writeReport } from './report-file.js';
import { required } from './required.js';
import { ENVIRONMENT, flipFlag, ManagementClient, seedSmallProject } from './seed.js';
import { bootstrap, startNode } from './service.js';

const STREAMS = Number(process.env.VEXIL_BENCH_OFREP_STREAMS ?? 10_000);
const ROUNDS = Number(process.env.VEXIL_BENCH_OFREP_ROUNDS ?? 10);
/** Flags in the streamed environment: the stream's messages do not depend on it. */
const FLAGS = 20;

const started = performance.now();
const progress = (message: string) =>
  console.error(
    `[bench:ofrep-streams ${((performance.now() - started) / 1_000).toFixed(0)} s, load ${required(loadavg()[0], 'load').toFixed(2)}] ${message}`,
  );

async function main(): Promise<void> {
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-ofrep-'));
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const database = sqliteDatabase(scratchDir, 'ofrep');
      const token = await bootstrap(database);
      const full = await startNode(database);
      await withCleanup(
        () => full.service.stop(),
        async () => {
          const client = new ManagementClient(full.baseUrl, token);
          const project = await seedSmallProject(client, 'ofrep', FLAGS);
          const clientKey = String(
            (
              await client.create(`${project.path}/environments/${ENVIRONMENT}/sdk-keys`, {
                name: 'ofrep web',
                type: 'ClientSide',
              })
            ).key,
          );
          const relay = await startRelay(full, await createRelayKey(client));
          await withCleanup(
            () => relay.service.stop(),
            async () => {
              const relayPid = required(relay.service.child.pid, 'relay pid');
              const rssBefore = (await residentMemory(relayPid)).rss;
              const heapBefore = await heapUsed(`${relay.baseUrl}/metrics`);
              progress(`opening ${STREAMS} OFREP event streams on the relay`);
              const fanOut = await measureFanOut({
                name: 'OFREP event streams on a relay',
                streamUrl: `${relay.baseUrl}/v1/ofrep/events?sdkKey=${encodeURIComponent(clientKey)}`,
                serverPid: relayPid,
                streams: STREAMS,
                rounds: ROUNDS,
                payloadBytes: 0,
                metricsUrl: `${relay.baseUrl}/metrics`,
                trigger: () => flipFlag(client, project, required(project.flagKeys[0], 'flag')),
              });
              const perStream = (after: number, before: number) =>
                Math.round((after - before) / Math.max(1, fanOut.opened));
              const figures = {
                streams: fanOut.opened,
                rounds: fanOut.rounds.length,
                connectSeconds: fanOut.connectSeconds,
                lastRefetchP50Ms: Math.max(...fanOut.rounds.map((round) => round.p50Ms)),
                changeToLastRefetchMs: fanOut.rounds.map((round) => round.maxMs),
                p50Ms: fanOut.p50Ms,
                p99Ms: fanOut.p99Ms,
                maxMs: fanOut.maxMs,
                missing: fanOut.rounds.reduce((sum, round) => sum + round.missing, 0),
                relayRssPerStreamBytes: perStream(fanOut.serverRssBytes, rssBefore),
                relayHeapPerStreamBytes:
                  fanOut.serverHeapUsedBytes === null || heapBefore === null
                    ? null
                    : perStream(fanOut.serverHeapUsedBytes, heapBefore),
                loadAverage: required(loadavg()[0], 'load'),
              };
              await writeReport({ ofrepStreams: renderSection(figures) });
              progress(`wrote the OFREP event-stream section of ${REPORT_FILE}`);
              console.log(JSON.stringify(figures, null, 2));
            },
          );
        },
      );
    },
  );
}

/** The section of docs/benchmarks.md. */
function renderSection(figures: {
  streams: number;
  rounds: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  missing: number;
  relayRssPerStreamBytes: number;
  relayHeapPerStreamBytes: number | null;
  loadAverage: number;
}): string {
  const kib = (bytes: number | null) =>
    bytes === null ? 'n/a' : `${(bytes / 1024).toFixed(1)} KiB`;
  return [
    '## OFREP event streams on one relay (`npm run bench:ofrep-streams`, issue 45)',
    '',
    `Commit ${gitCommit()}, ${new Date().toISOString()}; load average ${figures.loadAverage.toFixed(2)} ` +
      'at the end (a shared, loaded machine: figures are indicative).',
    '',
    '| streams | rounds | change → `refetchEvaluation` p50 | p99 | last (max) | missing | relay RSS per stream | relay heap per stream |',
    '| ------- | ------ | --------------------------------- | --- | ---------- | ------- | -------------------- | --------------------- |',
    `| ${figures.streams} | ${figures.rounds} | ${figures.p50Ms.toFixed(0)} ms | ${figures.p99Ms.toFixed(0)} ms | ${figures.maxMs.toFixed(0)} ms | ${figures.missing} | ${kib(figures.relayRssPerStreamBytes)} | ${kib(figures.relayHeapPerStreamBytes)} |`,
  ].join('\n');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
