import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { testDialects } from '../test-support/harness.js';
import {
  ServeProcess,
  createBetaFlag,
  eventually,
  prepareNodes,
  subscribeToToggles,
  type NodeTestbed,
} from '../test-support/processes.js';

/**
 * One kept-alive connection: `node:cluster` hands each new connection to a worker, and every
 * request on it is served by that worker.
 */
class PinnedConnection {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly baseUrl: string) {}

  send(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
    return new Promise<{ status: number; text: string }>((resolve, reject) => {
      const outgoing = httpRequest(
        `${this.baseUrl}${path}`,
        { method, agent: this.agent, headers },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  async evaluate(sdkKey: string): Promise<unknown> {
    const { text } = await this.send(
      'POST',
      '/v1/sdk/evaluate',
      { authorization: sdkKey, 'content-type': 'application/json' },
      JSON.stringify({ flagKey: 'beta', context: { userId: 'u' } }),
    );
    return (JSON.parse(text) as { value: unknown }).value;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The process ids in the log lines that contain `text`, in order. */
function pidsLogging(output: string[], text: string): number[] {
  return output
    .join('')
    .split('\n')
    .filter((line) => line.includes(text))
    .map((line) => (JSON.parse(line) as { pid: number }).pid);
}

/** The process ids in the request log lines of `GET /readyz`, in order. */
const readinessPids = (output: string[]) => pidsLogging(output, '"route":"/readyz"');

/** The process ids of the workers that started listening, in order. */
const listeningPids = (output: string[]) => pidsLogging(output, 'Server listening');

/** Evaluate requests counted in a `/metrics` text, over every status. */
function evaluateCount(metrics: string): number {
  return metrics
    .split('\n')
    .filter((line) =>
      line.startsWith(
        'vexil_http_request_duration_seconds_count{method="POST",route="/v1/sdk/evaluate",',
      ),
    )
    .reduce((total, line) => total + Number(line.split(' ').at(-1)), 0);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `vexil serve --workers 2` as users run it (design record 029). The periodic version check is
 * set to a minute, so a change can reach the other worker within the waits below only by a
 * notice: NOTIFY on PostgreSQL, the primary's relay on SQLite.
 */
describe.each(testDialects())('vexil serve --workers 2 on %s', (dialect) => {
  let testbed: NodeTestbed;
  let serve: ServeProcess;
  let sdkKey: string;
  let evaluations = 0;
  const base = '/api/v1/orgs/acme/projects/web';

  beforeAll(async () => {
    testbed = await prepareNodes(dialect, {
      VEXIL_LOG_LEVEL: 'info',
      VEXIL_USAGE_FLUSH_INTERVAL: '1s',
      VEXIL_SHUTDOWN_TIMEOUT: '10s',
    });
    serve = await ServeProcess.start(testbed.env, ['--workers', '2']);
  }, 60_000);

  afterAll(async () => {
    await serve.stop('SIGKILL');
    await testbed.close();
  });

  /** Connections held by different workers: a readiness check on each is logged with its pid. */
  const connections: PinnedConnection[] = [];
  const workerPids: number[] = [];
  /** Evaluations counted in the database, over every flag and hour. */
  const usageTotal = async () => {
    const database = openDatabase(testbed.databaseUrl);
    try {
      const { total } = await database.db
        .selectFrom('flag_usage')
        .select((eb) => eb.fn.sum<number | string>('count').as('total'))
        .executeTakeFirstOrThrow();
      return Number(total);
    } finally {
      await database.close();
    }
  };
  const evaluate = async (connection: PinnedConnection) => {
    evaluations += 1;
    return connection.evaluate(sdkKey);
  };

  it('a change made through one worker reaches evaluations served by both', async () => {
    while (workerPids.length < 2) {
      const connection = new PinnedConnection(serve.baseUrl);
      const logged = readinessPids(serve.output).length;
      expect((await connection.send('GET', '/readyz')).status).toBe(200);
      expect(await eventually(() => readinessPids(serve.output).length > logged, 5000)).toBe(true);
      const pid = readinessPids(serve.output)[logged]!;
      if (workerPids.includes(pid)) connection.close();
      else {
        workerPids.push(pid);
        connections.push(connection);
      }
    }

    const { token, receiver } = testbed;
    sdkKey = await createBetaFlag(serve, token);
    await subscribeToToggles(serve, token, receiver.url());

    // Both workers build and hold the snapshot before the change.
    for (const connection of connections) expect(await evaluate(connection)).toBe(false);

    const toggled = await serve.request(
      'POST',
      `${base}/flags/beta/environments/production/toggle`,
      { token, body: { enabled: true } },
    );
    expect(toggled.status).toBe(204);
    for (const connection of connections) {
      expect(await eventually(async () => (await evaluate(connection)) === true, 5000)).toBe(true);
    }
  }, 60_000);

  it('/metrics answers for the whole node, whichever worker holds the scrape', async () => {
    // Both workers served evaluations above; each scrape must count them all.
    for (const connection of connections) {
      const scraped = await connection.send('GET', '/metrics');
      expect(scraped.status).toBe(200);
      expect(evaluateCount(scraped.text)).toBe(evaluations);
      // Read from the shared database by every worker, the one delivery is counted once.
      const deliveries = [...scraped.text.matchAll(/^vexil_webhook_deliveries\{.*\} (\d+)$/gm)];
      expect(deliveries.reduce((total, [, count]) => total + Number(count), 0)).toBe(1);
    }
  }, 30_000);

  it('/metrics answers 503 when a worker does not send its metrics in time', async () => {
    const stopped = workerPids[1]!;
    process.kill(stopped, 'SIGSTOP');
    try {
      const refused = await connections[0]!.send('GET', '/metrics');
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.text)).toMatchObject({
        status: 503,
        detail: `Worker process ${stopped} did not send its metrics within 2 s.`,
      });
    } finally {
      process.kill(stopped, 'SIGCONT');
    }
    // The stopped worker's late answer to the refused scrape is ignored; the next one counts.
    const { status, text } = await connections[0]!.send('GET', '/metrics');
    expect(status).toBe(200);
    expect(evaluateCount(text)).toBe(evaluations);
  }, 30_000);

  it('the toggle is delivered to the webhook exactly once', async () => {
    const { token, receiver } = testbed;
    expect(await eventually(() => receiver.received.length >= 1, 10_000)).toBe(true);
    const recorded = await eventually(async () => {
      const hooks = await serve.request('GET', '/api/v1/orgs/acme/webhooks', { token });
      const deliveries = await serve.request(
        'GET',
        `/api/v1/orgs/acme/webhooks/${hooks.body.items[0].id}/deliveries`,
        { token },
      );
      return deliveries.body.items[0]?.status === 'Succeeded';
    }, 10_000);
    expect(recorded).toBe(true);
    expect(receiver.received).toHaveLength(1);
  }, 30_000);

  it('a worker that dies is started again', async () => {
    // Each worker flushes its own counts, and the flushes add up.
    expect(await eventually(async () => (await usageTotal()) === evaluations, 10_000)).toBe(true);
    for (const connection of connections) connection.close();
    // Killed, worker 2 loses nothing: everything it counted has been flushed.
    process.kill(workerPids[1]!, 'SIGKILL');
    expect(
      await eventually(() => serve.output.join('').includes('worker process died'), 10_000),
    ).toBe(true);
    expect(await eventually(() => listeningPids(serve.output).length === 3, 30_000)).toBe(true);
    const connection = new PinnedConnection(serve.baseUrl);
    for (let i = 0; i < 4; i++) expect(await evaluate(connection)).toBe(true);
    connection.close();
  }, 60_000);

  it('SIGTERM stops every worker; the usage counts equal the evaluations served', async () => {
    // Worker 1, worker 2 and worker 2 started again.
    const workers = listeningPids(serve.output);
    expect(workers).toHaveLength(3);
    expect(evaluations).toBeGreaterThan(0);
    expect(await serve.stop('SIGTERM')).toBe(0);
    expect(workers.filter(isAlive)).toEqual([]);

    expect(await usageTotal()).toBe(evaluations);
  }, 30_000);
});
