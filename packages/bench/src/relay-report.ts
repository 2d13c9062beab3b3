import { cpus } from 'node:os';
import type { RelayMeasurement } from './relay.js';

const number = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => value.toFixed(value < 10 ? 2 : 0);
const mb = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MB`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const row = (cells: string[]) => `| ${cells.join(' | ')} |`;

/**
 * The "Relay" section of docs/benchmarks.md (issue 36, Measured) from `measured`, taken at
 * `commit` on `date`.
 */
export function renderRelayReport(measured: RelayMeasurement, commit: string, date: Date): string {
  const { fanOut, memory } = measured;
  const streamsOpen = fanOut.opened;
  const rssPerStream = (fanOut.serverRssBytes - fanOut.rssBeforeBytes) / streamsOpen;
  const heapPerStream =
    fanOut.serverHeapUsedBytes !== null && fanOut.heapBeforeBytes !== null
      ? kb((fanOut.serverHeapUsedBytes - fanOut.heapBeforeBytes) / streamsOpen)
      : 'not exported';
  const fanOutMet = streamsOpen === fanOut.streams && fanOut.p99Ms < 1_000;
  return [
    '## Relay (issue 36)',
    '',
    `\`npm run bench:relay\` (also part of \`npm run bench\`) at ${commit}, ${date.toISOString()}, ` +
      `${cpus().length} cores. **The machine was shared and loaded**: load average ` +
      `${measured.loadAverage.start.toFixed(1)} at the start of this section and ` +
      `${measured.loadAverage.end.toFixed(1)} at its end, on ${cpus().length} cores, so absolute ` +
      'figures are low and noisy; the paired ratios are what to read.',
    '',
    '### Throughput: relay, full node, bare node:http',
    '',
    'A `vexil serve` on SQLite seeded with the standard configuration (500 flags, 3 rules each, ' +
      '20 segments), a `vexil relay --upstream` following it with a relay key covering the ' +
      'organization, and the bare `node:http` ceiling (`GET /hello`), all three running ' +
      `throughout. Per route, ${measured.rounds} rounds of ${measured.roundSeconds} s at ` +
      `${measured.connections} connections with wrk, after a warm-up; each round loads the three ` +
      'in a different order (rotated, every other round reversed), so all see the same machine ' +
      '(design record 013). req/s are medians over the rounds; ratios are medians of the ' +
      'per-round ratios. Target: the relay at least the full node.',
    '',
    row([
      'Route',
      'Relay req/s',
      'Full node req/s',
      'node:http req/s',
      'Relay ÷ full (rounds)',
      'Relay ÷ node:http',
      'Full ÷ node:http',
      'Errors',
      'Target',
    ]),
    row(Array<string>(9).fill('---')),
    ...measured.routes.map((route) =>
      row([
        route.name,
        number(route.relay),
        number(route.full),
        number(route.ceiling),
        `${route.relayToFullMedian.toFixed(2)} (${route.relayToFull.map((r) => r.toFixed(2)).join(', ')})`,
        route.relayToCeilingMedian.toFixed(2),
        route.fullToCeilingMedian.toFixed(2),
        String(route.errors),
        route.relayToFullMedian >= 1 ? 'met' : '**missed**',
      ]),
    ),
    '',
    '### Fan-out: 10,000 SSE streams on one relay',
    '',
    `${number(fanOut.streams)} \`GET /v1/sdk/stream\` streams on the relay (one socket each, ` +
      'held by one separate Node client process reading raw `http` responses), on a small ' +
      'project of its own (20 flags). A flag is toggled on the **full node** through the ' +
      `management API ${fanOut.rounds.length} times; latency is per stream and round, from the ` +
      'toggle’s 204 to that relay stream receiving the `put` with the new version: the upstream’s ' +
      'feed, the relay, and its fan-out. The relay’s open-file limit is raised to the hard limit ' +
      'in its child process. Memory per stream is the relay’s RSS (and V8 heap, from `/metrics`) ' +
      'with every stream open minus before they opened, divided by the streams.',
    '',
    row([
      'Streams open',
      'Connect s',
      'put bytes',
      'p50 ms',
      'p99 ms',
      'max ms',
      'RSS before → open',
      'RSS per stream',
      'Heap per stream',
      'Target p99 < 1 s',
    ]),
    row(Array<string>(10).fill('---')),
    row([
      `${number(streamsOpen)} of ${number(fanOut.streams)}`,
      fanOut.connectSeconds.toFixed(1),
      number(fanOut.payloadBytes),
      ms(fanOut.p50Ms),
      ms(fanOut.p99Ms),
      ms(fanOut.maxMs),
      `${mb(fanOut.rssBeforeBytes)} → ${mb(fanOut.serverRssBytes)}`,
      kb(rssPerStream),
      heapPerStream,
      fanOutMet ? 'met' : '**missed**',
    ]),
    '',
    row(['Round', 'p50 ms', 'p99 ms', 'max ms', 'missing', 'toggle round trip ms']),
    row(Array<string>(6).fill('---')),
    ...fanOut.rounds.map((round, index) =>
      row([
        String(index + 1),
        ms(round.p50Ms),
        ms(round.p99Ms),
        ms(round.maxMs),
        String(round.missing),
        ms(round.triggerMs),
      ]),
    ),
    '',
    `### A relay holding ${number(memory.flags * memory.environments)} flag configurations`,
    '',
    `A full node holding ${number(memory.flags)} flags (one three-condition rule each) in ` +
      `${memory.environments} environments, seeded as for "Memory" above, and a relay following ` +
      'it. RSS of the relay once `/readyz` answers 200 (it holds every environment), then after ' +
      'each phase of requests to the relay; "settled" is the lowest RSS within 60 s of idling.',
    '',
    row(['Relay', 'RSS', 'Settled RSS', 'Heap used (settled)']),
    row(Array<string>(4).fill('---')),
    row([
      `ready (every environment held), ${memory.readySeconds.toFixed(0)} s after starting`,
      mb(memory.readyRssBytes),
      '',
      '',
    ]),
    ...memory.phases.map((phase) =>
      row([
        phase.name,
        mb(phase.rssBytes),
        `${mb(phase.settledRssBytes)} after ${phase.settledAfterSeconds.toFixed(0)} s`,
        phase.heapUsedBytes === null ? '' : mb(phase.heapUsedBytes),
      ]),
    ),
    row(['peak (VmHWM)', mb(memory.peakRssBytes), '', '']),
  ].join('\n');
}
