import type { BenchDatabase } from './databases.js';
import { measureFanOut, type FanOutMeasurement } from './fan-out.js';
import { freePort, startService, waitUntilAnswering } from './processes.js';
import { required } from './required.js';
import { flipFlag, ManagementClient, seedSmallProject } from './seed.js';
import { HELLO_SERVER, startNode, type Node } from './service.js';
import {
  deliveryFigures,
  generateToggles,
  startWebhookReceiver,
  subscribe,
} from './webhook-throughput.js';
import { runWrk, type LoadResult, type LoadScenario } from './wrk.js';

export const STREAMS = 1_000;
const FAN_OUT_ROUNDS = 5;
/** Flags of the streaming project: a small configuration, so the figure is about fan-out. */
const STREAM_PROJECT_FLAGS = 20;
export const WEBHOOK_EVENTS = 500;
/** Concurrent togglers generating webhook events (one flag each). */
const WEBHOOK_TOGGLERS = 8;
export const TWO_NODE_CONNECTIONS = 50;
const TWO_NODE_SECONDS = 5;
const WARM_UP_SECONDS = 2;

/** Both nodes loaded at once, each with its own wrk. */
export interface TwoNodeMeasurement {
  connectionsPerNode: number;
  nodes: LoadResult[];
  totalRequestsPerSecond: number;
}

/** Webhook delivery (issue 8): live while events are generated, and draining a backlog. */
export interface WebhookMeasurement {
  events: number;
  /** The worker runs while toggles commit: commit to first attempt, and deliveries/s. */
  live: { p50Ms: number; p99Ms: number; perSecond: number };
  /** A worker-only node started on a backlog of `events` deliveries: its deliveries/s. */
  drain: { perSecond: number };
}

export interface ScaleMeasurement {
  database: string;
  twoNodes: TwoNodeMeasurement;
  fanOut: FanOutMeasurement;
  fanOutCeiling: FanOutMeasurement;
  webhooks: WebhookMeasurement;
}

async function measureTwoNodes(
  database: BenchDatabase,
  first: Node,
  scenario: LoadScenario,
  scratchDir: string,
): Promise<TwoNodeMeasurement> {
  const second = await startNode(database);
  try {
    const load = (node: Node, durationSeconds: number) =>
      runWrk(node.baseUrl, scenario, {
        connections: TWO_NODE_CONNECTIONS,
        durationSeconds,
        scratchDir,
      });
    await load(second, WARM_UP_SECONDS);
    const nodes = await Promise.all([first, second].map((node) => load(node, TWO_NODE_SECONDS)));
    return {
      connectionsPerNode: TWO_NODE_CONNECTIONS,
      nodes,
      totalRequestsPerSecond: nodes.reduce((sum, result) => sum + result.requestsPerSecond, 0),
    };
  } finally {
    await second.service.stop();
  }
}

async function measureStreams(
  node: Node,
  client: ManagementClient,
): Promise<{ fanOut: FanOutMeasurement; fanOutCeiling: FanOutMeasurement }> {
  const project = await seedSmallProject(client, 'streams', STREAM_PROJECT_FLAGS);
  const document = await (
    await fetch(`${node.baseUrl}/v1/sdk/flags`, { headers: { authorization: project.serverKey } })
  ).text();
  const payloadBytes = Buffer.byteLength(document);
  const fanOut = await measureFanOut({
    name: 'vexil serve',
    streamUrl: `${node.baseUrl}/v1/sdk/stream`,
    authorization: project.serverKey,
    serverPid: required(node.service.child.pid, 'pid of vexil serve'),
    streams: STREAMS,
    rounds: FAN_OUT_ROUNDS,
    payloadBytes,
    trigger: () => flipFlag(client, project, required(project.flagKeys[0], 'flag')),
  });
  const port = await freePort();
  const ceiling = startService(process.execPath, [HELLO_SERVER, String(port), 'node']);
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitUntilAnswering(`${baseUrl}/hello`, ceiling);
    const fanOutCeiling = await measureFanOut({
      name: 'bare node:http',
      streamUrl: `${baseUrl}/stream`,
      serverPid: required(ceiling.child.pid, 'pid of the ceiling'),
      streams: STREAMS,
      rounds: FAN_OUT_ROUNDS,
      payloadBytes,
      trigger: async () => {
        const response = await fetch(`${baseUrl}/broadcast`, { method: 'POST', body: document });
        if (response.status !== 204) throw new Error(`broadcast answered ${response.status}`);
      },
    });
    return { fanOut, fanOutCeiling };
  } finally {
    await ceiling.stop();
  }
}

/**
 * Live delivery on `node` (all roles), then — after `node` is stopped, so no other worker takes
 * deliveries — a backlog queued through a management-only node and drained by a worker-only one.
 */
async function measureWebhooks(
  database: BenchDatabase,
  node: Node,
  token: string,
  client: ManagementClient,
): Promise<WebhookMeasurement> {
  const receiver = await startWebhookReceiver();
  try {
    const project = await seedSmallProject(client, 'hooks', WEBHOOK_TOGGLERS);
    await subscribe(client, receiver.url);
    await generateToggles(client, project, WEBHOOK_EVENTS);
    await receiver.waitFor(WEBHOOK_EVENTS);
    const live = deliveryFigures(receiver.arrivals);

    await node.service.stop();
    receiver.reset();
    const management = await startNode(database, { roles: 'management' });
    try {
      await generateToggles(
        new ManagementClient(management.baseUrl, token),
        project,
        WEBHOOK_EVENTS,
      );
    } finally {
      await management.service.stop();
    }
    const worker = await startNode(database, { roles: 'worker' });
    try {
      await receiver.waitFor(WEBHOOK_EVENTS);
    } finally {
      await worker.service.stop();
    }
    return {
      events: WEBHOOK_EVENTS,
      live,
      drain: { perSecond: deliveryFigures(receiver.arrivals).perSecond },
    };
  } finally {
    await receiver.close();
  }
}

/**
 * The multi-node, streaming and webhook figures of issue 8 on `database`, whose `node` is
 * seeded and warm. Stops `node` on the way (the webhook backlog needs it gone).
 *
 * @param serverEvaluate the server-evaluate load scenario, for the two-node figure
 * @param progress receives human-readable progress lines
 */
export async function measureScale(options: {
  database: BenchDatabase;
  node: Node;
  token: string;
  serverEvaluate: LoadScenario;
  scratchDir: string;
  progress: (message: string) => void;
}): Promise<ScaleMeasurement> {
  const { database, node, progress } = options;
  const client = new ManagementClient(node.baseUrl, options.token);
  progress(`${database.name}: two nodes, server evaluate`);
  const twoNodes = await measureTwoNodes(
    database,
    node,
    options.serverEvaluate,
    options.scratchDir,
  );
  progress(
    `${database.name}: two nodes: ${Math.round(twoNodes.totalRequestsPerSecond)} req/s in total`,
  );
  progress(`${database.name}: SSE fan-out to ${STREAMS} streams`);
  const { fanOut, fanOutCeiling } = await measureStreams(node, client);
  progress(
    `${database.name}: fan-out p50 ${fanOut.p50Ms.toFixed(1)} ms, p99 ${fanOut.p99Ms.toFixed(1)} ms ` +
      `(bare node:http p99 ${fanOutCeiling.p99Ms.toFixed(1)} ms)`,
  );
  progress(`${database.name}: webhooks, ${WEBHOOK_EVENTS} events live and as a backlog`);
  const webhooks = await measureWebhooks(database, node, options.token, client);
  progress(
    `${database.name}: webhooks: live ${Math.round(webhooks.live.perSecond)}/s, ` +
      `p99 ${Math.round(webhooks.live.p99Ms)} ms; backlog ${Math.round(webhooks.drain.perSecond)}/s`,
  );
  return { database: database.name, twoNodes, fanOut, fanOutCeiling, webhooks };
}
