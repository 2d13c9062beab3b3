import { afterAll, beforeAll } from 'vitest';
import type { Dialect } from '../db/database.js';
import { createTestVexil, TestClock, testWebhookSettings, type TestVexil } from './harness.js';
import {
  createServer,
  type IncomingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the receiver got it: headers and the raw body text. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * How the receiver answers the next requests: a status (once `held` settles, for a receiver the
 * test releases), or hanging without an answer.
 */
export type ReceiverAnswer = { status: number; held?: Promise<void> } | 'hang';

/**
 * A real HTTP webhook receiver on 127.0.0.1 (port 0) whose answers are programmable, for tests.
 * Answers are taken from a queue; when it is empty, `defaultAnswer` applies.
 */
export class WebhookReceiver {
  readonly received: ReceivedRequest[] = [];
  defaultAnswer: ReceiverAnswer = { status: 200 };
  private readonly queue: ReceiverAnswer[] = [];
  private readonly hanging = new Set<ServerResponse>();
  private readonly server: Server;

  private constructor() {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.received.push({
          method: request.method ?? '',
          url: request.url ?? '',
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const answer = this.queue.shift() ?? this.defaultAnswer;
        if (answer === 'hang') {
          this.hanging.add(response);
          return;
        }
        const respond = () => {
          response.statusCode = answer.status;
          response.end('receiver body that Vexil never reads');
        };
        if (answer.held) void answer.held.then(respond);
        else respond();
      });
    });
  }

  /** Starts a receiver on an ephemeral port of 127.0.0.1. */
  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The receiver's address with `path`, over plain http. */
  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Queues answers for the next requests, in order. */
  answer(...answers: ReceiverAnswer[]): void {
    this.queue.push(...answers);
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A port on 127.0.0.1 that nothing listens on (connection refused). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * For a `describe` of webhook deliveries: a node on `dialect` delivering as tests do, and a real
 * receiver, started before its tests and closed after them. The clock keeps real time, since a
 * receiver's signature check refuses timestamps far from now; a test may advance it.
 */
export function nodeWithReceiver(dialect: Dialect): {
  clock: TestClock;
  vexil: TestVexil;
  receiver: WebhookReceiver;
} {
  const clock = new TestClock(new Date());
  const started = { clock } as { clock: TestClock; vexil: TestVexil; receiver: WebhookReceiver };
  beforeAll(async () => {
    started.vexil = await createTestVexil(dialect, {
      clock,
      // The receiver answers at once; a long time-out keeps a loaded machine from turning an
      // attempt into a retry that the standing test clock never makes due.
      config: { webhooks: testWebhookSettings({ timeoutMs: 10_000 }) },
    });
    started.receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await started.receiver.close();
    await started.vexil.close();
  });
  return started;
}
