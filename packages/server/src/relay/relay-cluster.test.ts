import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  type NodeTestbed,
} from '../test-support/processes.js';
import { RoundRobinBalancer } from '../test-support/round-robin-balancer.js';
import type { SseReader } from '../test-support/sse-reader.js';

const base = '/api/v1/orgs/acme/projects/web';

/** The value of `vexil_relay_feeds_open` in a node's `/metrics`: relays following it now. */
async function relayFeedsOpen(node: ServeProcess): Promise<number> {
  const text = await (await fetch(`${node.baseUrl}/metrics`)).text();
  const line = /^vexil_relay_feeds_open (\d+)$/m.exec(text);
  if (!line) throw new Error('vexil_relay_feeds_open missing from /metrics');
  return Number(line[1]);
}

/** Whether a `put` event on `stream` has come, since it was read last, with `beta` as `enabled`. */
async function betaPushed(stream: SseReader, enabled: boolean): Promise<boolean> {
  await stream.until(() => stream.unread().some((event) => event.event === 'put'), 'a put event');
  while (stream.unread().length > 0) {
    const event = await stream.next();
    if (event.event !== 'put') continue;
    const { flags } = JSON.parse(event.data) as { flags: { key: string; enabled: boolean }[] };
    if (flags.find((flag) => flag.key === 'beta')?.enabled === enabled) return true;
  }
  return false;
}

/**
 * Real relays in front of a real upstream cluster (issue 36): two `vexil serve` nodes on a
 * PostgreSQL database of the test's own, behind a round-robin TCP load balancer the relays
 * connect through, as in production. Loopback only; every wait bounded.
 */
describe('vexil relay processes in front of two full nodes on postgres', () => {
  let testbed: NodeTestbed;
  let nodes: ServeProcess[];
  let balancer: RoundRobinBalancer;
  let upstream: string;
  let sdkKey: string;
  let relayEnv: NodeJS.ProcessEnv;
  const toggle = (node: ServeProcess, enabled: boolean) =>
    node.request('POST', `${base}/flags/beta/environments/production/toggle`, {
      token: testbed.token,
      body: { enabled },
    });

  beforeAll(async () => {
    testbed = await prepareNodes('postgres');
    nodes = await Promise.all([ServeProcess.start(testbed.env), ServeProcess.start(testbed.env)]);
    balancer = new RoundRobinBalancer(nodes.map((node) => Number(new URL(node.baseUrl).port)));
    upstream = await balancer.listen();
    sdkKey = await createBetaFlag(nodes[0]!, testbed.token);
    const relayKey = await nodes[0]!.request('POST', '/api/v1/orgs/acme/relay-keys', {
      token: testbed.token,
      body: { name: 'edge' },
    });
    expect(relayKey.status).toBe(201);
    relayEnv = {
      VEXIL_RELAY_KEY: relayKey.body.key as string,
      VEXIL_LOG_LEVEL: 'info',
      VEXIL_USAGE_FLUSH_INTERVAL: '1s',
    };
  }, 120_000);

  afterAll(async () => {
    await Promise.all((nodes ?? []).map((node) => node.stop('SIGKILL')));
    await balancer?.close();
    await testbed?.close();
  });

  it('--workers 2: both workers serve and stream changes; /healthz, /readyz, /metrics answer for the relay; SIGTERM stops every worker', async () => {
    const relay = await ServeProcess.start(
      relayEnv,
      ['--upstream', upstream, '--workers', '2'],
      'relay',
    );
    const connections: PinnedConnection[] = [];
    const workerPids: number[] = [];
    try {
      // The second worker starts once the first is listening.
      expect(
        await eventually(() => listeningPids(relay.output).length === 2, 30_000),
        relay.output.join(''),
      ).toBe(true);
      // Connections held by different workers: a readiness check on each is logged with its pid.
      for (let attempt = 0; workerPids.length < 2 && attempt < 20; attempt += 1) {
        const connection = new PinnedConnection(relay.baseUrl);
        const logged = readinessPids(relay.output).length;
        const ready = await connection.send('GET', '/readyz');
        expect(ready.status).toBe(200);
        expect(JSON.parse(ready.text)).toEqual({ status: 'ready' });
        expect(await eventually(() => readinessPids(relay.output).length > logged, 5000)).toBe(
          true,
        );
        const pid = readinessPids(relay.output)[logged]!;
        if (workerPids.includes(pid)) connection.close();
        else {
          workerPids.push(pid);
          connections.push(connection);
        }
      }
      expect(workerPids).toHaveLength(2);

      let evaluations = 0;
      for (const connection of connections)
        for (let i = 0; i < 3; i += 1) {
          expect(await connection.evaluate(sdkKey)).toBe(false);
          evaluations += 1;
        }
      for (const connection of connections) {
        const health = await connection.send('GET', '/healthz');
        expect([health.status, JSON.parse(health.text)]).toEqual([200, { status: 'ok' }]);
        // Every worker follows the upstream, and a scrape on either counts both workers' traffic.
        const scraped = await connection.send('GET', '/metrics');
        expect(scraped.status).toBe(200);
        expect(evaluateCount(scraped.text)).toBe(evaluations);
        expect(scraped.text).toMatch(/^vexil_relay_upstream_connected 1$/m);
      }

      // A stream on each worker; a change made upstream reaches both.
      const streams = await Promise.all(
        connections.map((connection) =>
          connection.stream('/v1/sdk/stream', { authorization: sdkKey }),
        ),
      );
      for (const stream of streams) expect((await stream.next()).event).toBe('put');
      expect((await toggle(nodes[1]!, true)).status).toBe(204);
      for (const stream of streams) expect(await betaPushed(stream, true)).toBe(true);
      for (const stream of streams) stream.close();
    } finally {
      for (const connection of connections) connection.close();
    }
    const workers = listeningPids(relay.output);
    expect(workers).toHaveLength(2);
    expect(await relay.stop('SIGTERM')).toBe(0);
    expect(workers.filter(isAlive)).toEqual([]);
    expect(
      await eventually(
        async () => (await Promise.all(nodes.map(relayFeedsOpen))).every((open) => open === 0),
        5000,
      ),
    ).toBe(true);
  }, 120_000);

  it('moves to the other node when the node holding its feed is killed with SIGKILL, with 0 5xx', async () => {
    const relay = await ServeProcess.start(relayEnv, ['--upstream', upstream], 'relay');
    let stopTraffic = false;
    try {
      const holders = await Promise.all(nodes.map(relayFeedsOpen));
      expect(holders.reduce((sum, open) => sum + open, 0)).toBe(1);
      const killed = nodes[holders.indexOf(1)]!;
      const survivor = nodes[holders.indexOf(0)]!;
      const stream = await new PinnedConnection(relay.baseUrl).stream('/v1/sdk/stream', {
        authorization: sdkKey,
      });
      expect((await stream.next()).event).toBe('put');

      // Real SDK traffic through the kill: a bounded loop of evaluations, every status kept.
      const statuses = new Map<number, number>();
      const traffic = (async () => {
        for (let i = 0; i < 20_000 && !stopTraffic; i += 1) {
          const response = await fetch(`${relay.baseUrl}/v1/sdk/evaluate`, {
            method: 'POST',
            headers: { authorization: sdkKey, 'content-type': 'application/json' },
            body: JSON.stringify({ flagKey: 'beta', context: { userId: `user-${i}` } }),
          });
          await response.arrayBuffer();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        }
      })();

      await killed.stop('SIGKILL');
      // The relay follows the survivor, and says so.
      expect(await eventually(async () => (await relayFeedsOpen(survivor)) === 1, 10_000)).toBe(
        true,
      );
      expect(
        await eventually(async () => {
          const ready = await relay.request('GET', '/readyz');
          return ready.status === 200 && ready.body.status === 'ready';
        }, 10_000),
      ).toBe(true);

      // A change made through the survivor reaches the relay's SDK stream and its answers.
      expect((await toggle(survivor, false)).status).toBe(204);
      expect(await betaPushed(stream, false)).toBe(true);
      stream.close();
      const evaluated = await relay.request('POST', '/v1/sdk/evaluate', {
        sdkKey,
        body: { flagKey: 'beta', context: { userId: 'u' } },
      });
      expect(evaluated.body.value).toBe(false);

      stopTraffic = true;
      await traffic;
      expect([...statuses.keys()]).toEqual([200]);
      expect(statuses.get(200)).toBeGreaterThan(0);
    } finally {
      stopTraffic = true;
      expect(await relay.stop('SIGTERM')).toBe(0);
    }
  }, 120_000);
});
