import { once } from 'node:events';
import { setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forkScript, residentMemory } from './processes.js';
import { percentile, preciseNow } from './statistics.js';
import type { ChildMessage, ParentMessage } from './stream-clients.js';

const STREAM_CLIENTS = join(dirname(fileURLToPath(import.meta.url)), 'stream-clients.js');

/** One change pushed to every stream. Latencies in milliseconds from the trigger's 204. */
export interface FanOutRound {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Streams that received no new `put` within the client's time-out. */
  missing: number;
  /** Round trip of the change request itself (the toggle), for context. */
  triggerMs: number;
}

/** SSE fan-out against one server (issue 8, Benchmark). */
export interface FanOutMeasurement {
  name: string;
  /** Streams asked for, and streams that received their first `put`. */
  streams: number;
  opened: number;
  connectSeconds: number;
  payloadBytes: number;
  rounds: FanOutRound[];
  /** Over every stream of every round. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Server resident memory with every stream open, after the last round (bytes). */
  serverRssBytes: number;
  /** V8 heap in use then, from the server's `/metrics` when given (bytes). */
  serverHeapUsedBytes: number | null;
  /** Bytes the streams received over every round, all streams together. */
  receivedBytes: number;
}

/** `nodejs_heap_size_used_bytes` from the Prometheus text at `metricsUrl`; null when absent. */
export async function heapUsed(metricsUrl: string): Promise<number | null> {
  const metrics = await (await fetch(metricsUrl)).text();
  const bytes = /^nodejs_heap_size_used_bytes (\d+)/m.exec(metrics)?.[1];
  return bytes === undefined ? null : Number(bytes);
}

/**
 * Opens `streams` SSE streams at `streamUrl` from a separate client process, then `rounds`
 * times calls `trigger` (one change; resolves on its 204) and measures, per stream, the time
 * from that 204 to the arrival of the `put` carrying the change. A stream can receive the push
 * before the 204 reaches the benchmark, so single latencies may be slightly negative.
 *
 * @throws Error when the client process fails or not a single stream opens
 */
export async function measureFanOut(options: {
  name: string;
  streamUrl: string;
  authorization?: string;
  serverPid: number;
  streams: number;
  rounds: number;
  payloadBytes: number;
  /** The server's `/metrics`, to read its heap with every stream open. */
  metricsUrl?: string;
  trigger: () => Promise<void>;
  /** Called after each round with its index (0-based), e.g. to sample memory. */
  afterRound?: (round: number) => Promise<void>;
  /** Runs the stream clients at the lowest CPU priority (nice 19). */
  lowPriorityClients?: boolean;
}): Promise<FanOutMeasurement> {
  const args = [options.streamUrl, String(options.streams)];
  if (options.authorization) args.push(options.authorization);
  const connectStart = performance.now();
  const clients = forkScript(STREAM_CLIENTS, args);
  if (options.lowPriorityClients && clients.pid !== undefined) setPriority(clients.pid, 19);
  // One listener for the whole run: a soak's hundreds of rounds would each add one.
  const exited = once(clients, 'exit').then(() => {
    throw new Error(`${options.name}: the stream client exited`);
  });
  exited.catch(() => undefined);
  const nextMessage = async (): Promise<ChildMessage> => {
    const [message] = (await Promise.race([once(clients, 'message'), exited])) as [ChildMessage];
    if (message.type === 'failed') throw new Error(`${options.name}: ${message.message}`);
    return message;
  };
  try {
    const ready = await nextMessage();
    if (ready.type !== 'ready' || ready.opened === 0) {
      throw new Error(`${options.name}: no stream opened`);
    }
    const connectSeconds = (performance.now() - connectStart) / 1_000;
    let version = ready.version;
    const rounds: FanOutRound[] = [];
    const all: number[] = [];
    let receivedBytes = 0;
    for (let round = 0; round < options.rounds; round++) {
      const sent = preciseNow();
      await options.trigger();
      const answered = preciseNow();
      clients.send({ type: 'await', after: version } satisfies ParentMessage);
      const arrivals = await nextMessage();
      if (arrivals.type !== 'arrivals') throw new Error(`${options.name}: unexpected message`);
      version = arrivals.version;
      receivedBytes = arrivals.bytes;
      const latencies = arrivals.times
        .filter((time): time is number => time !== null)
        .map((time) => time - answered);
      const missing = arrivals.times.length - latencies.length;
      // A stream that never got the change counts as infinitely slow.
      const counted = [...latencies, ...Array<number>(missing).fill(Number.POSITIVE_INFINITY)];
      all.push(...counted);
      rounds.push({
        p50Ms: percentile(counted, 50),
        p99Ms: percentile(counted, 99),
        maxMs: Math.max(...counted),
        missing,
        triggerMs: answered - sent,
      });
      await options.afterRound?.(round);
    }
    const memory = await residentMemory(options.serverPid);
    const heap = options.metricsUrl ? await heapUsed(options.metricsUrl) : null;
    return {
      name: options.name,
      streams: options.streams,
      opened: ready.opened,
      connectSeconds,
      payloadBytes: options.payloadBytes,
      rounds,
      p50Ms: percentile(all, 50),
      p99Ms: percentile(all, 99),
      // Not Math.max(...all): a soak's hundreds of thousands of arrivals overflow the stack.
      maxMs: all.reduce((max, latency) => Math.max(max, latency), Number.NEGATIVE_INFINITY),
      serverRssBytes: memory.rss,
      serverHeapUsedBytes: heap,
      receivedBytes,
    };
  } finally {
    clients.kill('SIGKILL');
  }
}
