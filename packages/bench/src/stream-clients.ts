/**
 * The SSE fan-out benchmark's client, run in its own process (forked by fan-out.ts) so reading
 * thousands of streams does not compete with the server inside one event loop:
 * `node stream-clients.js <url> <count> [authorization]`.
 *
 * It opens `count` streams (one socket each), waits for every stream's first `put`, then reports
 * `{ type: 'ready', version }`. On `{ type: 'await', after }` it waits until every stream has
 * received a change with an id above `after` and answers `{ type: 'arrivals', times, version,
 * bytes }`: each stream's arrival time of its first such change, in epoch milliseconds with
 * sub-millisecond precision (comparable across processes on one machine), `null` for a stream
 * that got none within the time-out, and the bytes every stream received since `ready`. A change
 * is a frame that carries an id: a `put`, the last `patch` or `delete` of a change
 * (`?patches=true`), or an OFREP `refetchEvaluation`.
 */
import { request, type IncomingMessage } from 'node:http';
import { preciseNow } from './statistics.js';
import { required } from './required.js';

/** Streams connecting at once: well under the server's listen backlog. */
const CONNECT_BATCH = 100;
const WAIT_TIMEOUT_MS = 15_000;

export type ParentMessage = { type: 'await'; after: number };
export type ChildMessage =
  | { type: 'ready'; opened: number; version: number }
  | { type: 'arrivals'; times: (number | null)[]; version: number; bytes: number }
  | { type: 'failed'; message: string };

const [url, countText, authorization] = process.argv.slice(2);
const count = Number(countText);

const send = (message: ChildMessage) => process.send?.(message);
const now = preciseNow;

/** Per stream: every change's version seen and when it arrived. */
const received: { version: number; at: number }[][] = [];
/** Bytes received by every stream, and the count when the streams were all ready. */
let bytes = 0;
let bytesWhenReady = 0;
let onPut: (index: number, version: number) => void = () => {};

/** Reads SSE frames (blank-line separated) and records each `put` with its id. */
function follow(response: IncomingMessage, index: number): void {
  let buffer = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    const at = now();
    bytes += Buffer.byteLength(chunk);
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      // Every frame that carries an id completes a change: its id is the configuration version.
      const id = /^id: (\d+)$/m.exec(frame)?.[1];
      if (id !== undefined) {
        required(received[index], 'stream').push({ version: Number(id), at });
        onPut(index, Number(id));
      }
    }
  });
}

function open(index: number): Promise<void> {
  received[index] = [];
  return new Promise((resolve, reject) => {
    const outgoing = request(required(url, 'stream URL argument'), {
      agent: false,
      headers: authorization ? { authorization } : {},
    });
    outgoing.once('response', (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`stream ${index} answered ${response.statusCode}`));
        return;
      }
      follow(response, index);
      resolve();
    });
    outgoing.once('error', reject);
    outgoing.end();
  });
}

/**
 * Resolves once every stream has a `put` above `after`, or after the time-out. Counts the streams
 * still waiting rather than scanning them all on each `put`: with 10,000 streams a scan per
 * arrival would keep this client busier than the server it measures.
 */
function waitForAll(after: number): Promise<void> {
  const waiting = new Set(
    received.flatMap((puts, index) => (puts.some((put) => put.version > after) ? [] : [index])),
  );
  return new Promise((resolve) => {
    if (waiting.size === 0) {
      resolve();
      return;
    }
    const timer = setTimeout(finish, WAIT_TIMEOUT_MS);
    function finish() {
      clearTimeout(timer);
      onPut = () => {};
      resolve();
    }
    onPut = (index, version) => {
      if (version > after && waiting.delete(index) && waiting.size === 0) finish();
    };
  });
}

async function main(): Promise<void> {
  for (let start = 0; start < count; start += CONNECT_BATCH) {
    const batch = Array.from({ length: Math.min(CONNECT_BATCH, count - start) }, (_, i) =>
      open(start + i),
    );
    await Promise.all(batch);
  }
  await waitForAll(-1);
  bytesWhenReady = bytes;
  const first = received.map((puts) => puts[0]?.version ?? -1);
  send({
    type: 'ready',
    opened: first.filter((version) => version >= 0).length,
    version: Math.max(...first),
  });
  process.on('message', (message: ParentMessage) => {
    void waitForAll(message.after).then(() => {
      const arrivals = received.map((puts) => puts.find((put) => put.version > message.after));
      send({
        type: 'arrivals',
        times: arrivals.map((put) => put?.at ?? null),
        version: Math.max(...arrivals.map((put) => put?.version ?? message.after)),
        bytes: bytes - bytesWhenReady,
      });
    });
  });
}

main().catch((error: unknown) => {
  send({ type: 'failed', message: String(error) });
  process.exitCode = 1;
});
