import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { flipFlag, forEachConcurrently, type ManagementClient, type SmallProject } from './seed.js';
import { percentile, preciseNow } from './statistics.js';

/** How long to wait for the last delivery before giving up (ms). */
const DELIVERY_TIMEOUT_MS = 60_000;

/** A local webhook receiver answering 204, recording when each event first arrived. */
export interface WebhookReceiver {
  url: string;
  /** Epoch ms of each event's first arrival, with the event's `occurredAt` (its commit time). */
  arrivals: { at: number; occurredAt: number }[];
  /** Resolves once `count` distinct events have arrived; rejects after the time-out. */
  waitFor(count: number): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

/** Starts a node:http receiver on 127.0.0.1 (an OS-chosen port). Retries are counted once. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const seen = new Set<string>();
  const arrivals: { at: number; occurredAt: number }[] = [];
  let waiter: { count: number; resolve: () => void } | null = null;
  const server: Server = createServer((request, response) => {
    const at = preciseNow();
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.once('end', () => {
      response.writeHead(204).end();
      const id = String(request.headers['webhook-id']);
      if (seen.has(id)) return;
      seen.add(id);
      const occurredAt = Date.parse((JSON.parse(body) as { occurredAt: string }).occurredAt);
      arrivals.push({ at, occurredAt });
      if (waiter && arrivals.length >= waiter.count) waiter.resolve();
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    arrivals,
    waitFor(count) {
      if (arrivals.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`only ${arrivals.length} of ${count} webhook deliveries arrived`)),
          DELIVERY_TIMEOUT_MS,
        );
        waiter = {
          count,
          resolve: () => {
            clearTimeout(timer);
            waiter = null;
            resolve();
          },
        };
      });
    },
    reset() {
      arrivals.length = 0;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Subscribes `url` to `flag.toggled` events (the bench service allows private targets). */
export async function subscribe(client: ManagementClient, url: string): Promise<void> {
  await client.create('/webhooks', { name: 'bench receiver', url, eventTypes: ['flag.toggled'] });
}

/**
 * Generates `count` `flag.toggled` events: one worker per flag of `project`, each flipping its
 * own flag in turn, so every toggle is a real change (and an event).
 */
export async function generateToggles(
  client: ManagementClient,
  project: SmallProject,
  count: number,
): Promise<void> {
  const flags = project.flagKeys.length;
  await forEachConcurrently(project.flagKeys, flags, async (flagKey) => {
    const index = project.flagKeys.indexOf(flagKey);
    const flips = Math.floor(count / flags) + (index < count % flags ? 1 : 0);
    for (let flip = 0; flip < flips; flip++) await flipFlag(client, project, flagKey);
  });
}

/** Commit-to-delivery figures from a receiver's arrivals. */
export function deliveryFigures(arrivals: readonly { at: number; occurredAt: number }[]) {
  const latencies = arrivals.map((arrival) => arrival.at - arrival.occurredAt);
  const times = arrivals.map((arrival) => arrival.at);
  const spanSeconds = (Math.max(...times) - Math.min(...times)) / 1_000;
  return {
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    /** Deliveries per second between the first and the last arrival. */
    perSecond: spanSeconds > 0 ? (arrivals.length - 1) / spanSeconds : Number.NaN,
  };
}
