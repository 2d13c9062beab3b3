import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayNode, type VexilRelay } from '../node/relay-node.js';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testConfig,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { SseReader } from '../test-support/sse-reader.js';

const base = '/api/v1/orgs/acme/projects/web';

/** OFREP event streams (ADR-0008, design record 052) on a full node and on a relay. */
describe.each(testDialects())('OFREP event streams on %s', (dialect) => {
  let vexil: TestVexil;
  let relay: VexilRelay;
  const origins: Record<'node' | 'relay', string> = { node: '', relay: '' };
  let token: string;
  let serverKey: string;
  let clientKey: string;
  const open: SseReader[] = [];

  const toggle = (enabled: boolean) =>
    callOk(vexil, 'POST', `${base}/flags/banner/environments/production/toggle`, token, {
      enabled,
    });
  const currentEtag = async () =>
    (await call(vexil, 'GET', '/v1/sdk/flags', { token: serverKey })).headers.etag as string;
  const currentVersion = async () =>
    (await call(vexil, 'GET', '/v1/sdk/flags', { token: serverKey })).body.version as number;

  /** The bulk answer's `eventStreams`, as the OFREP web provider reads them. */
  async function bulkEventStreams(origin: string, key: string) {
    const response = await fetch(`${origin}/ofrep/v1/evaluate/flags`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ context: { targetingKey: 'anna' } }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { eventStreams: unknown[] }).eventStreams;
  }

  /** Opens the stream the bulk answer names, resolved as the provider resolves it. */
  async function openNamed(origin: string, key: string, headers: Record<string, string> = {}) {
    const [named] = (await bulkEventStreams(origin, key)) as {
      endpoint: { requestUri: string };
    }[];
    const abort = new AbortController();
    const response = await fetch(new URL(named!.endpoint.requestUri, origin), {
      headers: { origin: 'http://page.test', ...headers },
      signal: abort.signal,
    });
    const reader = new SseReader(response, abort);
    open.push(reader);
    return reader;
  }

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { config: { streamHeartbeatMs: 50 } });
    const org = await createOrg(vexil);
    token = org.token;
    serverKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    clientKey = (
      await callOk(vexil, 'POST', `${base}/environments/production/sdk-keys`, token, {
        name: 'web',
        type: 'ClientSide',
      })
    ).key;
    await callOk(vexil, 'POST', `${base}/flags`, token, { key: 'banner', clientSideVisible: true });
    await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    origins.node = `http://127.0.0.1:${(vexil.app.server.address() as AddressInfo).port}`;
    const relayKey = (
      await callOk(vexil, 'POST', '/api/v1/orgs/acme/relay-keys', token, { name: 'edge' })
    ).key as string;
    relay = await createRelayNode(
      testConfig({
        snapshotCacheDir: null,
        streamHeartbeatMs: 50,
        usageFlushIntervalMs: 3_600_000,
      }),
      { upstreamUrl: origins.node, relayKey, logger: false, initialBackoffMs: 20 },
    );
    await relay.app.listen({ port: 0, host: '127.0.0.1' });
    origins.relay = `http://127.0.0.1:${(relay.app.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const reader of open) reader.close();
    await relay.close();
    await vexil.close();
  });

  it('the bulk answer names the stream: a client key in the URL, a server key never', async () => {
    expect(await bulkEventStreams(origins.node, clientKey)).toEqual([
      {
        type: 'sse',
        endpoint: { requestUri: `/v1/ofrep/events?sdkKey=${encodeURIComponent(clientKey)}` },
        inactivityDelaySec: 120,
      },
    ]);
    expect(await bulkEventStreams(origins.node, serverKey)).toEqual([
      { type: 'sse', endpoint: { requestUri: '/v1/ofrep/events' }, inactivityDelaySec: 120 },
    ]);
    const leaked = await call(vexil, 'GET', `/v1/ofrep/events?sdkKey=${serverKey}`);
    expect(leaked.status).toBe(400);
    expect(leaked.text).toContain('sdkKey');
    expect((await call(vexil, 'GET', '/v1/ofrep/events?sdkKey=vxl_cli_unknown')).status).toBe(401);
  });

  it.each(['node', 'relay'] as const)(
    'through a %s: refetchEvaluation on connect and after each change, heartbeats, CORS for any origin',
    async (through) => {
      // The relay hears of the node case's toggles through its feed: start from what it holds.
      const served = async (origin: string) =>
        (
          (await (
            await fetch(`${origin}/v1/sdk/flags`, { headers: { authorization: serverKey } })
          ).json()) as { version: number }
        ).version;
      await expect.poll(() => served(origins[through])).toBe(await currentVersion());
      const reader = await openNamed(origins[through], clientKey);
      expect(reader.response.status).toBe(200);
      expect(reader.response.headers.get('content-type')).toBe('text/event-stream');
      expect(reader.response.headers.get('access-control-allow-origin')).toBe('*');
      const first = await reader.next();
      expect(first.event).toBe('message');
      expect(JSON.parse(first.data)).toEqual({
        type: 'refetchEvaluation',
        etag: await currentEtag(),
      });
      expect(first.id).toBe(String(await currentVersion()));

      await toggle(true);
      const changed = await reader.next();
      expect(JSON.parse(changed.data)).toEqual({
        type: 'refetchEvaluation',
        etag: await currentEtag(),
      });
      expect(changed.id).toBe(String(await currentVersion()));
      await reader.until(() => reader.comments >= 2, 'two heartbeats');
      await toggle(false);
      expect(JSON.parse((await reader.next()).data).etag).toBe(await currentEtag());
      reader.close();
    },
  );

  it('Last-Event-ID equal to the current version: no refetch until a change; a server key by header', async () => {
    const version = await currentVersion();
    const reader = await openNamed(origins.node, serverKey, {
      authorization: serverKey,
      'last-event-id': String(version),
    });
    await reader.until(() => reader.comments >= 2, 'two heartbeats');
    expect(reader.events).toEqual([]);
    await toggle(true);
    expect((await reader.next()).id).toBe(String(version + 1));
    reader.close();
  });

  it('a revoked key’s stream ends within a heartbeat', async () => {
    const key = await callOk(vexil, 'POST', `${base}/environments/production/sdk-keys`, token, {
      name: 'short-lived',
      type: 'ClientSide',
    });
    const reader = await openNamed(origins.node, key.key as string);
    await reader.next();
    await callOk(vexil, 'DELETE', `${base}/environments/production/sdk-keys/${key.id}`, token);
    await reader.until(() => reader.ended, 'the stream to end');
  });
});
