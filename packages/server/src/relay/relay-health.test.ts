import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testConfig,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { eventually } from '../test-support/processes.js';
import { SwitchableProxy } from '../test-support/switchable-proxy.js';
import { createRelayNode, type VexilRelay } from '../node/relay-node.js';

/** How long a test waits for something that normally takes milliseconds (not a timing claim). */
const WAIT_MS = 10_000;

/** Design record 052: a relay restarted from its copies recovers once it has confirmed them. */
describe.each(testDialects())('relay health after a restart from copies on %s', (dialect) => {
  let upstream: TestVexil;
  let proxy: SwitchableProxy;
  let proxyOrigin: string;
  let cacheDir: string;
  let relayKey: string;
  let serverKey: string;
  const closing: VexilRelay[] = [];

  const startRelay = async () => {
    const relay = await createRelayNode(
      testConfig({ snapshotCacheDir: cacheDir, usageFlushIntervalMs: 3_600_000 }),
      { upstreamUrl: proxyOrigin, relayKey, logger: false, initialBackoffMs: 20 },
    );
    closing.push(relay);
    return relay;
  };
  const health = async (relay: VexilRelay) =>
    (await relay.inject({ method: 'GET', url: '/healthz' })).json<{
      status: string;
      reasons?: string[];
    }>();

  beforeAll(async () => {
    cacheDir = await mkdtemp(join(tmpdir(), 'vexil-relay-health-'));
    upstream = await createTestVexil(dialect);
    await upstream.app.listen({ port: 0, host: '127.0.0.1' });
    proxy = new SwitchableProxy(
      `http://127.0.0.1:${String((upstream.app.server.address() as AddressInfo).port)}`,
    );
    proxyOrigin = await proxy.listen();
    const org = await createOrg(upstream);
    serverKey = (await createProjectWithFlag(upstream, org)).sdkKey;
    relayKey = (
      await callOk(upstream, 'POST', '/api/v1/orgs/acme/relay-keys', org.token, { name: 'edge' })
    ).key as string;
  });

  afterAll(async () => {
    for (const relay of closing.reverse()) await relay.close();
    await proxy.close();
    await upstream.close();
    await rm(cacheDir, { recursive: true, force: true });
  });

  it('says ok once the upstream is back and has confirmed each environment by version, with no change made', async () => {
    const first = await startRelay();
    expect(await first.follower.firstConnection()).toBeNull();
    await first.close();

    proxy.switchTo('down');
    const restarted = await startRelay();
    expect((await restarted.follower.firstConnection())?.kind).toBe('unreachable');
    expect((await health(restarted)).status).toBe('degraded');
    const served = await restarted.inject({
      method: 'GET',
      url: '/v1/sdk/flags',
      headers: { authorization: serverKey },
    });
    expect(served.statusCode).toBe(200);

    proxy.switchTo('pass');
    expect(await eventually(() => restarted.follower.problem() === null, WAIT_MS)).toBe(true);
    expect(await eventually(async () => (await health(restarted)).status === 'ok', WAIT_MS)).toBe(
      true,
    );
    // Nothing was sent again: the copy it serves is the upstream's document, ETag and all.
    const upstreamAnswer = await upstream.inject({
      method: 'GET',
      url: '/v1/sdk/flags',
      headers: { authorization: serverKey },
    });
    expect(served.headers.etag).toBe(upstreamAnswer.headers.etag);
  });
});
