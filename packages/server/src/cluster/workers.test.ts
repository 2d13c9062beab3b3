import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { testDialects } from '../test-support/harness.js';
import {
  PinnedConnection,
  evaluateCount,
  isAlive,
  listeningPids,
  readinessPids,
} from '../test-support/pinned-connection.js';
import {
  ServeProcess,
  createBetaFlag,
  eventually,
  prepareNodes,
  subscribeToToggles,
  type NodeTestbed,
} from '../test-support/processes.js';

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
