import type { FanOutMeasurement } from './fan-out.js';
import type { MemoryMeasurement } from './memory.js';
import type { ScaleMeasurement } from './scale.js';
import type { LoadResult } from './wrk.js';

/** One route measured at each connection count. */
export interface RouteMeasurement {
  name: string;
  /** Minimum ratio to the node:http ceiling (issues 3 and 23), or null when the route has none. */
  target: number | null;
  results: LoadResult[];
  /** For routes with a target: their ratio to the ceiling measured in paired rounds. */
  paired?: PairedRatio[];
}

/**
 * A route's ratio to the bare node:http ceiling at one connection count, from rounds that each load
 * the ceiling and then the route (or the other way round) for a few seconds.
 */
export interface PairedRatio {
  connections: number;
  /** Each round's route req/s divided by its ceiling req/s. */
  rounds: number[];
  median: number;
}

/** One route with and without usage recording (issue 5); rates are medians in req/s. */
export interface UsageCostMeasurement {
  name: string;
  connections: number;
  rounds: number;
  roundSeconds: number;
  recording: number;
  skipped: number;
  /** Share of the not-recording throughput that recording costs, in percent. */
  costPercent: number;
  /** Lowest and highest round of each side, to judge the noise. */
  recordingRange: [number, number];
  skippedRange: [number, number];
}

/** Server evaluate on `vexil serve --workers` against one process (issue 23); rates in req/s. */
export interface WorkersMeasurement {
  workers: number;
  connections: number;
  roundSeconds: number;
  /** Medians of the rounds. */
  single: number;
  several: number;
  /** Each round's `--workers` req/s divided by the single process's. */
  rounds: number[];
  median: number;
}

/** Everything measured against one database. */
export interface DatabaseMeasurement {
  database: string;
  seedSeconds: number;
  configurationBytes: number;
  notes: string[];
  routes: RouteMeasurement[];
  usageCost: UsageCostMeasurement[];
  workers: WorkersMeasurement;
}

/** Issue 23's idle evaluate route against the bare Fastify POST, in one kind of process. */
export interface IdleRouteMeasurement {
  /** Where the lane runs: a whole Vexil node, or a bare `node:http` server. */
  process: string;
  /** Each round's idle-route req/s divided by the bare Fastify POST's. */
  paired: PairedRatio;
}

/** The whole run, as rendered into docs/benchmarks.md. */
export interface BenchReport {
  date: Date;
  machine: {
    cpu: string;
    cores: number;
    memoryGb: number;
    node: string;
    platform: string;
    /** One-minute load average before and after the run: other work skews every figure. */
    loadAverage: { start: number; end: number };
  };
  settings: {
    connections: number[];
    durationSeconds: number;
    warmUpSeconds: number;
    pairedRounds: number;
    pairedSeconds: number;
  };
  /** `git rev-parse --short HEAD`, noting uncommitted changes. */
  commit: string;
  /** Wall-clock time of the whole run. */
  runSeconds: number;
  seeded: { flags: number; rulesPerFlag: number; segments: number; clientVisible: number };
  /** Bare `GET /hello` on Fastify and `node:http`; bare Fastify `POST /evaluate` for reference. */
  ceilings: { fastify: RouteMeasurement; node: RouteMeasurement; fastifyPost: RouteMeasurement };
  idleRoute: IdleRouteMeasurement[];
  databases: DatabaseMeasurement[];
  /** Two nodes, SSE fan-out and webhooks; null without PostgreSQL. */
  scale: ScaleMeasurement | null;
  memory: MemoryMeasurement;
  skipped: string[];
  microBenchmark: string;
}

const number = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);

const mb = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MB`;

function ceilingAt(
  report: BenchReport,
  connections: number,
  flavour: 'fastify' | 'node' | 'fastifyPost' = 'node',
): number | undefined {
  return report.ceilings[flavour].results.find((result) => result.connections === connections)
    ?.requestsPerSecond;
}

const table = (header: string, rows: string[][]) => [
  header,
  rule(header),
  ...rows.map((cells) => `| ${cells.join(' | ')} |`),
];

/** Targets as written in issues 3 and 23: 0.6, 1/3 (0.333). */
const targetText = (target: number) => String(Number(target.toFixed(3)));

function verdict(ratio: number | undefined, target: number | null): string {
  if (target === null || ratio === undefined) return '';
  return `${ratio >= target ? 'met' : '**missed**'} (≥ ${targetText(target)})`;
}

/** A ratio to two decimals, or three when two would hide which side of `target` it is on. */
function ratioText(ratio: number, target: number | null): string {
  const shown = ratio.toFixed(2);
  return target !== null && Number(shown) >= target !== ratio >= target ? ratio.toFixed(3) : shown;
}

function routeRows(report: BenchReport, route: RouteMeasurement, withRatio: boolean): string[] {
  return route.results.map((result) => {
    const ceiling = ceilingAt(report, result.connections);
    const paired = route.paired?.find((ratio) => ratio.connections === result.connections);
    const cells = [
      route.name,
      String(result.connections),
      number(result.requestsPerSecond),
      ms(result.p50Ms),
      ms(result.p99Ms),
      ms(result.p999Ms),
      String(result.errors),
    ];
    if (withRatio) {
      const ratio = paired?.median ?? (ceiling ? result.requestsPerSecond / ceiling : undefined);
      cells.push(
        ceiling ? number(ceiling) : '',
        ratio !== undefined ? ratioText(ratio, route.target) : '',
        paired ? paired.rounds.map((round) => round.toFixed(2)).join(', ') : '',
        verdict(ratio, route.target),
      );
    }
    return `| ${cells.join(' | ')} |`;
  });
}

const HEADER = '| Route | Connections | req/s | p50 ms | p99 ms | p99.9 ms | Errors |';
const RATIO_HEADER = `${HEADER} Ceiling req/s | Ratio | Paired rounds | Target |`;
const rule = (header: string) => header.replace(/[^|]+/g, '---');

/** Renders the run as the Markdown of docs/benchmarks.md. */
export function renderReport(report: BenchReport): string {
  const { machine, settings, seeded } = report;
  const lines = [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` (packages/bench/src/run.ts); do not edit by hand. -->',
    '',
    `Run on ${report.date.toISOString()}: ${machine.cpu}, ${machine.cores} cores, ` +
      `${machine.memoryGb.toFixed(1)} GB RAM, Node ${machine.node} on ${machine.platform}; ` +
      `one-minute load average ${machine.loadAverage.start.toFixed(1)} before the run and ` +
      `${machine.loadAverage.end.toFixed(1)} after it (anything well above 0 means other work ` +
      'shared the cores, and the figures are correspondingly noisy).',
    '',
    `Each service is one Node process started with \`vexil serve\`; load comes from \`wrk\` ` +
      `(one thread, keep-alive) on the same machine, ${settings.durationSeconds} s per figure ` +
      `after a ${settings.warmUpSeconds} s warm-up per route, at ${settings.connections.join(', ')} ` +
      'connections. Latencies are wrk’s, including its own queueing. The configuration is ' +
      `seeded through the management API: ${seeded.flags} flags with ${seeded.rulesPerFlag} ` +
      `targeting rules each in production, ${seeded.segments} segments, ${seeded.clientVisible} ` +
      'flags visible to client SDKs. Server evaluate asks for a different flag and context on ' +
      'each request; client evaluate sends a different context each time. Config download ' +
      'asks without `Accept-Encoding` (the document is inflated for it) and, as SDKs do, with ' +
      '`Accept-Encoding: gzip` (sent as held).',
    '',
    'Ratio is req/s divided by the bare `node:http` ceiling’s req/s at the same connection count ' +
      '(issue 23; it was the bare Fastify ceiling before, which is slightly lower). Targets ' +
      '(issues 3 and 23): server evaluate and 304 downloads ≥ 0.6, client evaluate of 50 flags ' +
      '≥ 1/3. Server and client evaluate are served by the lean lane, outside Fastify’s request ' +
      'lifecycle (design record 030). ' +
      'For the routes with a target the ratio is measured in pairs (design record 013): this ' +
      'machine’s own speed drifts by a third or more within minutes, more than the effects ' +
      `measured, so ${settings.pairedRounds} rounds each load the ceiling and the route for ` +
      `${settings.pairedSeconds} s one after the other (alternating which goes first), and the ` +
      'ratio is the median of the rounds’ ratios. Ceiling req/s is from the ceiling’s own run ' +
      'below.',
    '',
    `Commit ${report.commit}; the whole run took ${(report.runSeconds / 60).toFixed(1)} min. ` +
      `Reproduce with \`npm run bench\` (needs \`wrk\`, and PostgreSQL at ` +
      '127.0.0.1:5432 with trust auth for the PostgreSQL, two-node, streaming and webhook ' +
      'figures). Every process and all traffic stay on 127.0.0.1.',
    '',
    '## Ceiling',
    '',
    'A bare `GET /hello` answering `{"hello":"world"}`, in its own process (hello-server.ts). ' +
      'For reference, not as a target: a bare Fastify `POST /evaluate` with the body and ' +
      'response schemas of `POST /v1/sdk/evaluate` and the same request bodies, answering a ' +
      'constant — what a schema-validated JSON POST costs before any work. ' +
      barePostText(report),
    '',
    HEADER,
    rule(HEADER),
    ...routeRows(report, { ...report.ceilings.fastify, name: 'bare Fastify' }, false),
    ...routeRows(report, { ...report.ceilings.node, name: 'bare node:http' }, false),
    ...routeRows(report, { ...report.ceilings.fastifyPost, name: 'bare Fastify POST' }, false),
  ];
  for (const database of report.databases) {
    lines.push(
      '',
      `## ${database.database}`,
      '',
      `Seeded in ${database.seedSeconds.toFixed(1)} s; the full configuration is ` +
        `${number(database.configurationBytes / 1024)} KB.`,
      ...database.notes.map((note) => `\n> Note: ${note}`),
      '',
      RATIO_HEADER,
      rule(RATIO_HEADER),
      ...database.routes.flatMap((route) => routeRows(report, route, true)),
    );
  }
  lines.push(...idleRouteSection(report));
  lines.push(...usageSection(report));
  lines.push(...workersSection(report));
  if (report.scale) lines.push(...scaleSections(report, report.scale));
  lines.push(...memorySection(report.memory));
  for (const skipped of report.skipped) lines.push('', `> Skipped: ${skipped}`);
  lines.push('', '## Engine micro-benchmark', '', '```', report.microBenchmark.trim(), '```', '');
  return lines.join('\n');
}

/**
 * The bare POST's ratio to the ceiling: paired like the targets (the most a route reading a JSON
 * body can reach, design record 014), or from the two runs when it was not paired.
 */
function barePostText(report: BenchReport): string {
  const { fastifyPost } = report.ceilings;
  const connections = report.settings.connections.join(' / ');
  if (fastifyPost.paired) {
    const medians = fastifyPost.paired.map((ratio) => ratio.median.toFixed(2)).join(' / ');
    const rounds = fastifyPost.paired
      .map((ratio) => ratio.rounds.map((round) => round.toFixed(2)).join(', '))
      .join('; ');
    return (
      `In paired rounds it reaches ${medians} of the \`GET /hello\` ceiling at ${connections} ` +
      `connections (rounds: ${rounds}): what a Fastify route reading a JSON body reaches before ` +
      'any work, which is why the evaluation routes leave Fastify’s request lifecycle.'
    );
  }
  const ratios = fastifyPost.results
    .map((result) =>
      (result.requestsPerSecond / (ceilingAt(report, result.connections) ?? NaN)).toFixed(2),
    )
    .join(' / ');
  return `Its req/s are ${ratios} of the \`GET /hello\` ceiling's at ${connections} connections.`;
}

function idleRouteSection(report: BenchReport): string[] {
  if (report.idleRoute.length === 0) return [];
  const header = '| Lane runs in | Connections | Ratio | Rounds | Target |';
  const rows = report.idleRoute.map(({ process, paired }) => [
    process,
    String(paired.connections),
    paired.median.toFixed(2),
    paired.rounds.map((ratio) => ratio.toFixed(2)).join(', '),
    verdict(paired.median, 0.95),
  ]);
  return [
    '',
    '## Idle evaluate route',
    '',
    'Issue 23: `POST /v1/sdk/evaluate` answering a constant on the lean lane ' +
      '(idle-lane-server.ts), against the bare Fastify `POST /evaluate` with the same bodies, ' +
      `in ${report.settings.pairedRounds} paired rounds of ${report.settings.pairedSeconds} s. ` +
      'The lane runs in a whole Vexil node, whose own lane gives way to it, and in a bare ' +
      '`node:http` server: the difference between the two is the cost of the process around ' +
      'the lane (design record 031). `npm run bench:instructions` counts the same routes in ' +
      'instructions, which do not depend on the machine’s load.',
    '',
    ...table(header, rows),
  ];
}

function usageSection(report: BenchReport): string[] {
  const first = report.databases.flatMap((database) => database.usageCost)[0];
  if (!first) return [];
  const header =
    '| Database | Route | Connections | req/s recording | (rounds) | req/s not recording | (rounds) | Cost | Target | Fastify ceiling req/s | node:http ceiling req/s |';
  const rows = report.databases.flatMap((database) =>
    database.usageCost.map((cost) => [
      database.database,
      cost.name,
      String(cost.connections),
      number(cost.recording),
      cost.recordingRange.map(number).join('–'),
      number(cost.skipped),
      cost.skippedRange.map(number).join('–'),
      `${cost.costPercent.toFixed(1)}%`,
      cost.costPercent < 10
        ? 'met (< 10%)'
        : cost.recordingRange[1] >= cost.skippedRange[0]
          ? '**missed** (< 10%), but the rounds overlap'
          : '**missed** (< 10%)',
      number(ceilingAt(report, cost.connections, 'fastify') ?? Number.NaN),
      number(ceilingAt(report, cost.connections, 'node') ?? Number.NaN),
    ]),
  );
  return [
    '',
    '## Usage recording cost',
    '',
    'Issue 5: recording usage must cost the evaluation hot path less than 10% of its throughput. ' +
      'The same route and bodies are loaded with usage recording (no header) and without it ' +
      '(`X-Service-Reports-Evaluations: 1`, spec: Evaluation API rule 1, so the server records ' +
      `nothing), alternating in ${first.rounds} rounds of ${first.roundSeconds} s each in ABBA ` +
      'order; the figures are the medians. Cost = 1 − recording / not recording. Usage counts ' +
      'are flushed to the database every 5 s (the default), inside the measured time. The ' +
      '(rounds) columns give the slowest and fastest round of each side: when they overlap, ' +
      'the difference is within what other load on the machine does to a round, and a ' +
      'negative cost simply means noise.',
    '',
    ...table(header, rows),
  ];
}

function workersSection(report: BenchReport): string[] {
  const first = report.databases[0]?.workers;
  if (!first) return [];
  const header =
    '| Database | Route | Connections | one process req/s | `--workers` req/s | Ratio | Rounds | Target |';
  const rows = report.databases.map(({ database, workers }) => [
    database,
    'server evaluate, 1 flag',
    String(workers.connections),
    number(workers.single),
    number(workers.several),
    workers.median.toFixed(2),
    workers.rounds.map((ratio) => ratio.toFixed(2)).join(', '),
    verdict(workers.median, 1.3),
  ]);
  return [
    '',
    '## Worker processes',
    '',
    `Issue 23: \`vexil serve --workers ${first.workers}\` against one process on the same ` +
      `database, server evaluate at ${first.connections} connections, alternating in ` +
      `${first.rounds.length} rounds of ${first.roundSeconds} s (ABBA order); the ratio is the ` +
      'median of the rounds’ ratios. Both share this machine’s cores with `wrk`. Design record ' +
      '029 says what a larger machine should expect.',
    '',
    ...table(header, rows),
  ];
}

function twoNodeSection(report: BenchReport, scale: ScaleMeasurement): string[] {
  const { twoNodes } = scale;
  const connections = twoNodes.connectionsPerNode;
  const single = report.databases
    .find((database) => database.database === scale.database)
    ?.routes[0]?.results.find((result) => result.connections === connections);
  const header = `${HEADER} Fastify ceiling req/s | node:http ceiling req/s |`;
  const ceilings = (at: number) => [
    number(ceilingAt(report, at, 'fastify') ?? Number.NaN),
    number(ceilingAt(report, at, 'node') ?? Number.NaN),
  ];
  const row = (name: string, result: LoadResult) => [
    name,
    String(result.connections),
    number(result.requestsPerSecond),
    ms(result.p50Ms),
    ms(result.p99Ms),
    ms(result.p999Ms),
    String(result.errors),
    ...ceilings(result.connections),
  ];
  const rows = twoNodes.nodes.map((result, index) => row(`node ${index + 1}`, result));
  rows.push([
    '**both nodes**',
    String(connections * twoNodes.nodes.length),
    `**${number(twoNodes.totalRequestsPerSecond)}**`,
    '',
    '',
    '',
    String(twoNodes.nodes.reduce((sum, result) => sum + result.errors, 0)),
    ...ceilings(connections),
  ]);
  if (single) rows.push(row('one node (above)', single));
  return [
    '',
    `## Two nodes on one ${scale.database}`,
    '',
    'Server evaluate (the same bodies as above) against two `vexil serve` processes on the same ' +
      `database, each loaded by its own wrk with ${connections} connections at the same time; ` +
      '"both nodes" is the sum. On this machine the two nodes and the two wrk processes share ' +
      `${report.machine.cores} cores, so the sum mostly shows the cost of sharing the cores, ` +
      'not how far more machines would scale: with two cores, one node and its wrk already ' +
      'use both.',
    '',
    ...table(header, rows),
  ];
}

function fanOutSection(report: BenchReport, scale: ScaleMeasurement): string[] {
  const verdict = (fanOut: FanOutMeasurement) =>
    fanOut.opened >= 1_000 && fanOut.p99Ms < 1_000
      ? 'met (1,000 open, p99 < 1 s)'
      : '**missed** (1,000 open, p99 < 1 s)';
  const header =
    '| Server | Streams open | Connect s | put bytes | p50 ms | p99 ms | max ms | Server RSS | Target |';
  const summary = (fanOut: FanOutMeasurement, target: boolean) => [
    fanOut.name,
    `${number(fanOut.opened)} of ${number(fanOut.streams)}`,
    fanOut.connectSeconds.toFixed(1),
    number(fanOut.payloadBytes),
    ms(fanOut.p50Ms),
    ms(fanOut.p99Ms),
    ms(fanOut.maxMs),
    mb(fanOut.serverRssBytes),
    target ? verdict(fanOut) : 'ceiling',
  ];
  const roundsHeader =
    '| Round | vexil p50 ms | vexil p99 ms | vexil max ms | missing | toggle round trip ms | bare p50 ms | bare p99 ms | bare max ms |';
  const rounds = scale.fanOut.rounds.map((round, index) => {
    const bare = scale.fanOutCeiling.rounds[index];
    return [
      String(index + 1),
      ms(round.p50Ms),
      ms(round.p99Ms),
      ms(round.maxMs),
      String(round.missing),
      ms(round.triggerMs),
      bare ? ms(bare.p50Ms) : '',
      bare ? ms(bare.p99Ms) : '',
      bare ? ms(bare.maxMs) : '',
    ];
  });
  return [
    '',
    '## SSE fan-out',
    '',
    `${number(scale.fanOut.streams)} concurrent \`GET /v1/sdk/stream\` streams (server key) ` +
      'are held by a separate Node client process (one socket each), then a flag is toggled ' +
      `through the management API ${scale.fanOut.rounds.length} times. Latency is per stream ` +
      'and round: from the toggle’s 204 reaching the benchmark to that stream receiving the ' +
      '`put` with the new version (a push may beat the 204, so single values can be slightly ' +
      'negative); p50/p99/max are over all streams of all rounds. The streams’ environment ' +
      'is a small project of its own (20 flags), so the figure is about fan-out rather than ' +
      'about writing a large document 1,000 times. The ceiling is bare `node:http` holding as ' +
      'many SSE responses and writing a `put` of the same size to each on `POST /broadcast` ' +
      '(hello-server.ts): the cost of the sockets alone. Target (issue 8): 1,000 open streams ' +
      'on one process, change-to-stream p99 under 1 s.',
    '',
    ...table(header, [summary(scale.fanOut, true), summary(scale.fanOutCeiling, false)]),
    '',
    ...table(roundsHeader, rounds),
  ];
}

function webhookSection(report: BenchReport, scale: ScaleMeasurement): string[] {
  const { webhooks } = scale;
  const header = '| Phase | Events | Deliveries/s | Commit → first attempt p50 ms | p99 ms |';
  return [
    '',
    '## Webhook delivery',
    '',
    `A node:http receiver on 127.0.0.1 answers 204 and records when each event first arrives; ` +
      'one subscription to `flag.toggled`. **Live:** the node (all roles) runs its delivery ' +
      `worker while ${webhooks.events} toggles commit (8 at a time through the management ` +
      'API); latency is from the event’s `occurredAt` (the change’s commit time) to its first ' +
      'attempt reaching the receiver, and deliveries/s counts from the first to the last arrival, ' +
      'so it is bounded by how fast the toggles come. **Backlog:** the same number of events ' +
      'is queued through a management-only node, then a worker-only node (`vexil serve --only ' +
      'worker`) drains them: its deliveries/s is the worker’s own throughput. The worker ' +
      'polls every 500 ms when idle and at once after a full batch of 20, which bounds the live ' +
      'latency from below. For scale, the receiver is a bare node:http server like the ceiling ' +
      `above, which answers ${number(ceilingAt(report, 50, 'node') ?? Number.NaN)} req/s at 50 ` +
      'connections.',
    '',
    ...table(header, [
      [
        'live',
        number(webhooks.events),
        number(webhooks.live.perSecond),
        ms(webhooks.live.p50Ms),
        ms(webhooks.live.p99Ms),
      ],
      ['backlog', number(webhooks.events), number(webhooks.drain.perSecond), '', ''],
    ]),
  ];
}

function scaleSections(report: BenchReport, scale: ScaleMeasurement): string[] {
  return [
    ...twoNodeSection(report, scale),
    ...fanOutSection(report, scale),
    ...webhookSection(report, scale),
  ];
}

function memorySection(memory: MemoryMeasurement): string[] {
  const header =
    '| Phase | Requests s | RSS right after | RSS settled | (after s) | V8 heap used, settled | Target |';
  const limit = 300 * 1024 ** 2;
  return [
    '',
    '## Memory',
    '',
    `One \`vexil serve\` with ${number(memory.flags)} flags in ${memory.environments} ` +
      `environments (on ${memory.database}), each flag with ${memory.rulesPerFlagAndEnvironment} ` +
      'three-condition rule in every environment; half are Boolean, half client-visible String ' +
      'flags with three variations. Two such template flags are created through the management ' +
      'API and their rows (flag, variations, per-environment configurations, rules) copied ' +
      `with fresh ids, keys and salts straight into the database (seeded in ${memory.seedSeconds.toFixed(1)} s; ` +
      'the API would take minutes). One environment’s configuration is ' +
      `${number(memory.configurationBytes / 1024)} KB of JSON, ` +
      `${number(memory.compressedConfigurationBytes / 1024)} KB as downloaded with gzip. ` +
      `RSS after start-up and seeding: ${mb(memory.idleRssBytes)}; highest RSS of the whole run ` +
      `(VmHWM): ${mb(memory.peakRssBytes)}.`,
    '',
    'Each phase is measured right after its requests, and again once settled: the lowest RSS ' +
      'while the service then idles for up to a minute, when V8’s memory reducer has collected ' +
      'the garbage of building the snapshots and handed the pages back. The documents are held ' +
      'compressed and each flag is compiled when first evaluated (design record 012), so the ' +
      'second phase, which evaluates every flag of every environment, shows the cost of the ' +
      'compiled flags. Target (issue 8): RSS under 300 MB.',
    '',
    ...table(
      header,
      memory.phases.map((phase) => [
        phase.name,
        phase.seconds.toFixed(1),
        mb(phase.rssBytes),
        mb(phase.settledRssBytes),
        phase.settledAfterSeconds.toFixed(0),
        phase.heapUsedBytes === null ? '' : mb(phase.heapUsedBytes),
        phase.settledRssBytes < limit ? 'met (< 300 MB)' : '**missed** (< 300 MB)',
      ]),
    ),
  ];
}
