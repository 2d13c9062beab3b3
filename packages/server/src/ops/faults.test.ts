import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCluster, RedisServer } from '../test-support/own-servers.js';
import { ServeProcess, bootstrapWithCli, eventually } from '../test-support/processes.js';
import { SseReader } from '../test-support/sse-reader.js';
import { WebhookReceiver } from '../test-support/webhook-receiver.js';

/** Concurrent SDK clients of the load (issue 21: 20). */
const CLIENTS = 20;
/** How long PostgreSQL is stopped (issue 21: 10 s). */
const OUTAGE_MS = 10_000;

type Outcome = { status: number } | { failed: string };

/** An SDK request the load repeats, and whether a 200 answer is the right one. */
interface LoadRequest {
  name: string;
  send: () => Promise<Response>;
  correct: (response: Response) => Promise<boolean>;
}

/**
 * Bounded load from `CLIENTS` loops (each waits for its answer before the next request) until
 * stopped: counts answers by request and status, network failures, and wrong 200 answers.
 */
function startLoad(requests: LoadRequest[]) {
  const counts = new Map<string, number>();
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  let wrong = 0;
  let running = true;
  const loop = async (offset: number) => {
    for (let i = offset; running; i++) {
      const request = requests[i % requests.length]!;
      let outcome: Outcome;
      try {
        const response = await request.send();
        outcome = { status: response.status };
        if (response.status === 200 && !(await request.correct(response))) wrong++;
        else await response.arrayBuffer().catch(() => undefined);
      } catch (error) {
        outcome = { failed: (error as Error).message };
      }
      count(`${request.name} ${'status' in outcome ? outcome.status : 'network error'}`);
    }
  };
  const loops = Array.from({ length: CLIENTS }, (_, i) => loop(i));
  return {
    counts,
    get wrong() {
      return wrong;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
    /** How many answers of the requests named were 5xx or failed outright. */
    failures(): number {
      return [...counts]
        .filter(([key]) => / (5\d\d|network error)$/.test(key))
        .reduce((sum, [, n]) => sum + n, 0);
    },
  };
}

/** The key of the flag a `flag.created` event body (JSON text) announces. */
function createdFlagKey(body: string): string | undefined {
  const { description } = JSON.parse(body) as { description?: string };
  return /^Flag "(.+)" created$/.exec(description ?? '')?.[1];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Issue 21: serving through faults, with real parts a test can break — a PostgreSQL cluster and
 * a Redis of its own, real `vexil serve` processes, a real webhook receiver. The scenarios run in
 * order on the same cluster. Figures are printed for docs/operations.md.
 */
describe('serving through faults', { timeout: 120_000 }, () => {
  let cluster: PostgresCluster;
  let redis: RedisServer;
  let receiver: WebhookReceiver;
  let env: NodeJS.ProcessEnv;
  let token: string;
  let serverKey: string;
  let clientKey: string;
  const cacheDirs: string[] = [];
  const nodes: ServeProcess[] = [];
  const base = '/api/v1/orgs/acme/projects/web';

  /** A node with its own snapshot cache directory (`cacheDir` to reuse one). */
  async function startNode(cacheDir?: string): Promise<ServeProcess> {
    const directory = cacheDir ?? (await mkdtemp(join(tmpdir(), 'vexil-snapshots-')));
    if (!cacheDir) cacheDirs.push(directory);
    const node = await ServeProcess.start({ ...env, VEXIL_SNAPSHOT_CACHE_DIR: directory });
    nodes.push(node);
    return node;
  }

  const evaluate = (node: ServeProcess, flagKey = 'beta') =>
    node.request('POST', '/v1/sdk/evaluate', {
      sdkKey: serverKey,
      body: { flagKey, context: { userId: 'u' } },
    });

  const toggle = (node: ServeProcess, enabled: boolean) =>
    node.request('POST', `${base}/flags/beta/environments/production/toggle`, {
      token,
      body: { enabled },
    });

  beforeAll(async () => {
    [cluster, redis, receiver] = await Promise.all([
      PostgresCluster.create(),
      RedisServer.create(),
      WebhookReceiver.start(),
    ]);
    env = {
      VEXIL_DATABASE_URL: await cluster.createDatabase('vexil'),
      VEXIL_REDIS_URL: redis.url,
      VEXIL_SNAPSHOT_CHECK_INTERVAL: '2s',
      VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      VEXIL_WEBHOOK_TIMEOUT: '1s',
      VEXIL_WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
      VEXIL_WEBHOOK_POLL_INTERVAL: '200ms',
      VEXIL_SHUTDOWN_TIMEOUT: '10s',
    };
    ({ token } = await bootstrapWithCli(env));
  }, 60_000);

  afterAll(async () => {
    // A node that died on its own is a failure whose cause is in its output.
    for (const node of nodes.filter(
      (node) => node.child.exitCode !== null && node.child.exitCode !== 0,
    ))
      console.error(`node exited ${node.child.exitCode}:`, node.output.join(''));
    await Promise.all(nodes.map((node) => node.stop('SIGKILL')));
    await receiver?.close();
    await redis?.stop();
    await cluster?.destroy();
    await Promise.all(cacheDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('a 10 s database outage fails no evaluation; management answers 503 with Retry-After; changes catch up after', async () => {
    const [a, b] = [await startNode(), await startNode()];
    expect(
      (
        await a.request('POST', '/api/v1/orgs/acme/projects', {
          token,
          body: { key: 'web', name: 'Web' },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await a.request('POST', `${base}/flags`, {
          token,
          body: { key: 'beta', clientSideVisible: true },
        })
      ).status,
    ).toBe(201);
    expect((await toggle(a, true)).status).toBe(204);
    const sdkKey = async (type: string) =>
      (
        await a.request('POST', `${base}/environments/production/sdk-keys`, {
          token,
          body: { name: type, type },
        })
      ).body.key as string;
    serverKey = await sdkKey('ServerSide');
    clientKey = await sdkKey('ClientSide');
    const download = await fetch(`${a.baseUrl}/v1/sdk/flags`, {
      headers: { authorization: serverKey },
    });
    const etag = download.headers.get('etag')!;
    await download.arrayBuffer();

    const json = { 'content-type': 'application/json' };
    const load = startLoad([
      {
        name: 'server evaluate',
        send: () =>
          fetch(`${a.baseUrl}/v1/sdk/evaluate`, {
            method: 'POST',
            headers: { ...json, authorization: serverKey },
            body: JSON.stringify({ flagKey: 'beta', context: { userId: 'u' } }),
          }),
        correct: async (response) => ((await response.json()) as { value: unknown }).value === true,
      },
      {
        name: 'client evaluate',
        send: () =>
          fetch(`${a.baseUrl}/v1/client/evaluate`, {
            method: 'POST',
            headers: { ...json, authorization: clientKey },
            body: JSON.stringify({ context: { userId: 'u' } }),
          }),
        correct: async (response) =>
          ((await response.json()) as { flags: { beta: { value: unknown } } }).flags.beta.value ===
          true,
      },
      {
        name: 'download (If-None-Match)',
        send: () =>
          fetch(`${a.baseUrl}/v1/sdk/flags`, {
            headers: { authorization: serverKey, 'if-none-match': etag },
          }),
        correct: async () => false, // 304 expected: the configuration did not change
      },
      {
        name: 'OFREP',
        send: () =>
          fetch(`${a.baseUrl}/ofrep/v1/evaluate/flags/beta`, {
            method: 'POST',
            headers: { ...json, authorization: `Bearer ${serverKey}` },
            body: JSON.stringify({ context: { targetingKey: 'u' } }),
          }),
        correct: async (response) => ((await response.json()) as { value: unknown }).value === true,
      },
    ]);
    const abort = new AbortController();
    const stream = new SseReader(
      await fetch(`${a.baseUrl}/v1/sdk/stream`, {
        headers: { authorization: serverKey },
        signal: abort.signal,
      }),
      abort,
    );
    try {
      await stream.next(); // the initial put
      await sleep(1000);

      await cluster.stop();
      const management: { status: number; retryAfter: string | null; error: string }[] = [];
      const health: string[] = [];
      const outageEnds = Date.now() + OUTAGE_MS;
      while (Date.now() < outageEnds) {
        for (const response of [
          await a.request('GET', '/api/v1/me', { token }),
          await toggle(a, false),
        ]) {
          management.push({
            status: response.status,
            retryAfter: response.headers.get('retry-after'),
            error: response.body.error,
          });
        }
        health.push((await a.request('GET', '/healthz')).body.status);
        await sleep(500);
      }
      const readyDuringOutage = (await a.request('GET', '/readyz')).status;
      await cluster.start();
      // The load goes on through the recovery, then stops before the flag changes.
      await sleep(3000);
      await load.stop();

      // Through node B, as soon as it can write again: the flag goes off.
      let changedAt = 0;
      expect(
        await eventually(async () => {
          changedAt = Date.now();
          return (await toggle(b, false)).status === 204;
        }, 20_000),
      ).toBe(true);
      const caughtUp = await eventually(
        async () => (await evaluate(a)).body.value === false,
        10_000,
      );
      const catchUpMs = Date.now() - changedAt;
      // The stream stayed open through the outage and carries the change.
      let put = await stream.next();
      while (!put.data.includes('"enabled":false') && stream.unread().length > 0)
        put = await stream.next();

      console.log('database outage', {
        answers: Object.fromEntries(load.counts),
        wrong: load.wrong,
        management: management.length,
        catchUpMs,
      });
      expect(load.failures()).toBe(0);
      expect(load.wrong).toBe(0);
      expect(management.length).toBeGreaterThan(0);
      for (const answer of management) {
        expect(answer).toEqual({ status: 503, retryAfter: '5', error: 'service_unavailable' });
      }
      expect(health).toContain('degraded');
      expect(a.output.join('')).toContain('webhook worker paused: database unavailable');
      expect(readyDuringOutage).toBe(200);
      expect(caughtUp).toBe(true);
      expect(put.data).toContain('"enabled":false');
      expect(
        await eventually(
          async () => (await a.request('GET', '/healthz')).body.status === 'ok',
          10_000,
        ),
      ).toBe(true);
    } finally {
      stream.close();
    }
  });

  it('a node restarted while the database is down serves from its snapshot copy, then switches to the database', async () => {
    const a = nodes[0]!;
    const b = nodes[1]!;
    expect((await evaluate(a)).body.value).toBe(false);
    await cluster.stop();
    // SIGTERM with the database gone still ends cleanly, within VEXIL_SHUTDOWN_TIMEOUT.
    expect(await a.stop('SIGTERM')).toBe(0);
    // ServeProcess.start waits for /readyz: 200 from the copy alone.
    const restarted = await startNode(cacheDirs[0]);
    try {
      const served = await evaluate(restarted);
      expect(served.status).toBe(200);
      expect(served.body.value).toBe(false);
      const client = await restarted.request('POST', '/v1/client/evaluate', {
        sdkKey: clientKey,
        body: { context: { userId: 'u' } },
      });
      expect(client.body.flags.beta.value).toBe(false);
      const health = await restarted.request('GET', '/healthz');
      expect(health.body.status).toBe('degraded');
      expect(health.body.reasons.join(' ')).toContain('snapshot copies');
      expect((await restarted.request('GET', '/api/v1/me', { token })).status).toBe(503);
      // An unknown key is not in any copy: refused, with the time to retry.
      const unknown = await restarted.request('POST', '/v1/sdk/evaluate', {
        sdkKey: 'srv-not-a-key',
        body: { flagKey: 'beta', context: {} },
      });
      expect(unknown.status).toBe(503);
      expect(unknown.headers.get('retry-after')).toBe('5');
    } finally {
      await cluster.start();
    }
    expect(
      await eventually(
        async () => (await restarted.request('GET', '/healthz')).body.status === 'ok',
        15_000,
      ),
    ).toBe(true);
    expect((await restarted.request('GET', '/api/v1/me', { token })).status).toBe(200);
    expect((await toggle(b, true)).status).toBe(204);
    expect(
      await eventually(async () => (await evaluate(restarted)).body.value === true, 10_000),
    ).toBe(true);
  });

  it('stopping Redis fails no request: rate limits count per node, then shared again', async () => {
    const node = nodes[2]!;
    await redis.stop();
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++)
      statuses.push((await node.request('GET', '/api/v1/me', { token })).status);
    const health = await node.request('GET', '/healthz');
    await redis.start();
    expect(statuses.every((status) => status === 200)).toBe(true);
    expect(health.body.status).toBe('degraded');
    expect(health.body.reasons.join(' ')).toContain('Redis unavailable');
    expect(
      await eventually(
        async () => (await node.request('GET', '/healthz')).body.status === 'ok',
        10_000,
      ),
    ).toBe(true);
  });

  it('SIGKILL in a burst of changes loses no acknowledged change and no webhook event', async () => {
    const [, b, node] = nodes;
    const hook = await node!.request('POST', '/api/v1/orgs/acme/webhooks', {
      token,
      body: {
        name: 'r',
        url: receiver.url(),
        provider: 'GenericHttp',
        eventTypes: ['flag.created'],
        projectIds: [],
        environmentIds: [],
      },
    });
    expect(hook.status).toBe(201);
    const acknowledged: string[] = [];
    let next = 0;
    const writer = async () => {
      for (;;) {
        const key = `burst-${next++}`;
        try {
          const created = await node!.request('POST', `${base}/flags`, { token, body: { key } });
          if (created.status === 201) acknowledged.push(key);
        } catch {
          return; // the node is gone
        }
      }
    };
    const writers = [writer(), writer(), writer(), writer()];
    await eventually(async () => acknowledged.length >= 20, 20_000);
    await node!.stop('SIGKILL');
    await Promise.all(writers);
    const restarted = await startNode(cacheDirs[0]);

    for (const key of acknowledged) {
      expect((await b!.request('GET', `${base}/flags/${key}`, { token })).status).toBe(200);
    }
    const database = new pg.Client({ connectionString: env.VEXIL_DATABASE_URL });
    await database.connect();
    try {
      const { rows: events } = await database.query<{ id: string; payload: string }>(
        `select id, payload from webhook_events where type = 'flag.created' and payload like '%burst-%'`,
      );
      const createdKeys = new Set(events.map((event) => createdFlagKey(event.payload)));
      for (const key of acknowledged) expect(createdKeys.has(key)).toBe(true);
      const delivered = await eventually(async () => {
        const ids = new Set(receiver.received.map((request) => request.headers['webhook-id']));
        return events.every((event) => ids.has(event.id));
      }, 30_000);
      expect(delivered).toBe(true);
      // Duplicates (an attempt cut off by the kill) carry the same webhook-id as the original.
      const idsByFlag = new Map<string, Set<string>>();
      for (const request of receiver.received) {
        const key = createdFlagKey(request.body);
        if (!key) continue;
        if (!idsByFlag.has(key)) idsByFlag.set(key, new Set());
        idsByFlag.get(key)!.add(String(request.headers['webhook-id']));
      }
      for (const ids of idsByFlag.values()) expect(ids.size).toBe(1);
      console.log('SIGKILL burst', {
        acknowledged: acknowledged.length,
        events: events.length,
        received: receiver.received.length,
      });
    } finally {
      await database.end();
    }
    expect((await restarted.request('GET', '/readyz')).status).toBe(200);
  });

  it('SIGTERM finishes and records the webhook attempt under way, then exits', async () => {
    const running = nodes.filter((node) => node.child.exitCode === null && !node.child.signalCode);
    const already = receiver.received.length;
    receiver.answer('hang');
    const created = await running[0]!.request('POST', `${base}/flags`, {
      token,
      body: { key: 'drain' },
    });
    expect(created.status).toBe(201);
    expect(await eventually(async () => receiver.received.length > already, 10_000)).toBe(true);
    const eventId = String(receiver.received[already]!.headers['webhook-id']);
    const database = new pg.Client({ connectionString: env.VEXIL_DATABASE_URL });
    await database.connect();
    try {
      const delivery = async () =>
        (
          await database.query<{ id: string; lease_owner: string | null }>(
            'select id, lease_owner from webhook_deliveries where event_id = $1',
            [eventId],
          )
        ).rows[0]!;
      // The lease owner names the worker's process: `host/pid/…`.
      const pid = Number((await delivery()).lease_owner!.split('/')[1]);
      const holder = running.find((node) => node.child.pid === pid)!;
      const { id } = await delivery();
      expect(await holder.stop('SIGTERM')).toBe(0);
      // Recorded before the process exited (another worker may have retried it since).
      const { rows } = await database.query<{ error: string | null }>(
        'select error from webhook_attempts where delivery_id = $1 and attempt_number = 1',
        [id],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.error).not.toBeNull();
    } finally {
      await database.end();
    }
  });
});
