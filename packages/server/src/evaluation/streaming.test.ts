import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil } from '../node/full-node.js';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { SseReader } from '../test-support/sse-reader.js';
import { startStreamingNode, type StreamingNode } from '../test-support/streaming-node.js';
import { sseFrame } from './streaming.js';

describe('SSE framing', () => {
  it('gives every data line its own field, so a payload cannot end the frame early', () => {
    expect(sseFrame('put', 'a\n\nb', '7')).toBe('event: put\nid: 7\ndata: a\ndata: \ndata: b\n\n');
  });
});

describe.each(testDialects())('streaming on %s', (dialect) => {
  let node: StreamingNode;
  let vexil: TestVexil;
  let origin: string;
  let serverKey: string;
  let clientKey: string;

  const manage = (...call: Parameters<StreamingNode['manage']>) => node.manage(...call);
  const toggle = (flag: string, enabled: boolean) => node.toggle(flag, enabled);
  const stream = (...open: Parameters<StreamingNode['stream']>) => node.stream(...open);
  const encode = (context: unknown) => Buffer.from(JSON.stringify(context)).toString('base64url');

  beforeAll(async () => {
    node = await startStreamingNode(dialect);
    ({ vexil, origin, serverKey, clientKey } = node);
    // banner: client-visible; when on, serves true to users at acme.test and false to others.
    const banner = await manage('POST', '/flags', { key: 'banner', clientSideVisible: true });
    const variation = (key: string) =>
      banner.variations.find((v: { key: string }) => v.key === key).id as string;
    await manage('POST', '/flags/banner/environments/production/rules', {
      variationId: variation('true'),
      conditionGroups: [
        {
          operator: 'And',
          conditions: [{ attribute: 'email', operator: 'endsWith', values: ['@acme.test'] }],
        },
      ],
    });
    await manage('PATCH', '/flags/banner/environments/production', {
      defaultVariationId: variation('false'),
    });
    await toggle('banner', true);
  });

  afterAll(() => node.close());

  const currentConfiguration = async () =>
    (await call(vexil, 'GET', '/v1/sdk/flags', { token: serverKey })).body;

  describe('GET /v1/sdk/stream', () => {
    it('sends the full configuration as `put` (id = version), then a new `put` after a change', async () => {
      const reader = await stream('/v1/sdk/stream', { key: serverKey });
      expect(reader.response.status).toBe(200);
      expect(reader.response.headers.get('content-type')).toBe('text/event-stream');
      expect(reader.response.headers.get('cache-control')).toBe('no-cache');
      expect(reader.response.headers.get('x-accel-buffering')).toBe('no');

      const initial = await reader.next();
      const configuration = await currentConfiguration();
      expect(initial.event).toBe('put');
      expect(initial.id).toBe(String(configuration.version));
      expect(JSON.parse(initial.data)).toEqual(configuration);

      await toggle('new-checkout', true);
      const changed = await reader.next();
      expect(changed.event).toBe('put');
      expect(Number(changed.id)).toBeGreaterThan(configuration.version);
      const flag = JSON.parse(changed.data).flags.find(
        (f: { key: string }) => f.key === 'new-checkout',
      );
      expect(flag.enabled).toBe(true);
      expect(JSON.parse(changed.data)).toEqual(await currentConfiguration());
      reader.close();
    });

    it('Last-Event-ID equal to the current version: no initial put, only heartbeats until a change', async () => {
      const { version } = await currentConfiguration();
      const reader = await stream('/v1/sdk/stream', {
        key: serverKey,
        headers: { 'last-event-id': String(version) },
      });
      await reader.until(() => reader.comments >= 2, 'two heartbeats');
      expect(reader.events).toEqual([]);

      await toggle('new-checkout', false);
      const changed = await reader.next();
      expect(changed.event).toBe('put');
      expect(changed.id).toBe(String((version as number) + 1));
      reader.close();
    });

    it('Last-Event-ID of an older version: the current put at once', async () => {
      const { version } = await currentConfiguration();
      const reader = await stream('/v1/sdk/stream', {
        key: serverKey,
        headers: { 'last-event-id': String(version - 1) },
      });
      const initial = await reader.next();
      expect(initial).toMatchObject({ event: 'put', id: String(version) });
      reader.close();
    });

    it('sends `: ping` heartbeats at the configured interval', async () => {
      const reader = await stream('/v1/sdk/stream', { key: serverKey });
      await reader.until(() => reader.comments >= 3, 'three heartbeats');
      expect(reader.unread().map((event) => event.event)).toEqual(['put']);
      reader.close();
    });

    it('a client key is 403 and a missing key 401, as problem bodies', async () => {
      for (const [key, status] of [
        [clientKey, 403],
        [undefined, 401],
      ] as const) {
        const response = await fetch(`${origin}/v1/sdk/stream`, {
          headers: key ? { authorization: key } : {},
        });
        expect(response.status).toBe(status);
        expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(await response.json()).toMatchObject({ status, instance: '/v1/sdk/stream' });
      }
    });

    it('a revoked key ends its streams within a heartbeat', async () => {
      const created = await manage('POST', '/environments/production/sdk-keys', {
        name: 'short-lived',
        type: 'ServerSide',
      });
      const reader = await stream('/v1/sdk/stream', { key: created.key });
      expect((await reader.next()).event).toBe('put');
      await manage('DELETE', `/environments/production/sdk-keys/${created.id}`);
      await reader.until(() => reader.ended, 'the stream to end');
    });
  });

  describe('/v1/client/stream', () => {
    it('announces its stream id, then pushes only client-visible flags, again after a change', async () => {
      const reader = await stream(`/v1/client/stream?context=${encode({ userId: 'u1' })}`, {
        key: clientKey,
      });
      expect(reader.response.status).toBe(200);
      expect(reader.response.headers.get('content-type')).toBe('text/event-stream');
      const hello = await reader.next();
      expect(hello.event).toBe('stream');
      expect(JSON.parse(hello.data).streamId).toBe(
        reader.response.headers.get('x-vexil-stream-id'),
      );

      const first = await reader.next();
      expect(first.event).toBe('flags');
      const evaluated = await call(vexil, 'POST', '/v1/client/evaluate', {
        token: clientKey,
        body: { context: { userId: 'u1' } },
      });
      expect(JSON.parse(first.data)).toEqual(evaluated.body);
      expect(Object.keys(JSON.parse(first.data).flags)).toEqual(['banner']);
      expect(JSON.parse(first.data).flags.banner.value).toBe(false);

      await toggle('banner', false);
      const changed = JSON.parse((await reader.next()).data);
      expect(changed.flags.banner).toMatchObject({ value: false, reason: 'DISABLED' });
      await toggle('banner', true);
      expect(JSON.parse((await reader.next()).data).flags.banner.reason).not.toBe('DISABLED');
      reader.close();
    });

    it('identify with X-Vexil-Stream-Id switches the stream to the new context', async () => {
      const reader = await stream(`/v1/client/stream?context=${encode({ userId: 'u2' })}`, {
        key: clientKey,
      });
      const { streamId } = JSON.parse((await reader.next()).data);
      expect(JSON.parse((await reader.next()).data).flags.banner.value).toBe(false);

      const identified = await call(vexil, 'POST', '/v1/client/identify', {
        token: clientKey,
        headers: { 'x-vexil-stream-id': streamId },
        body: { context: { userId: 'u2', email: 'kim@acme.test' } },
      });
      expect(identified.status).toBe(200);
      expect(identified.headers['x-vexil-stream-updated']).toBe('true');
      expect(identified.body.flags.banner.value).toBe(true);
      const pushed = await reader.next();
      expect(pushed.event).toBe('flags');
      expect(JSON.parse(pushed.data)).toEqual(identified.body);

      const unknown = await call(vexil, 'POST', '/v1/client/identify', {
        token: clientKey,
        headers: { 'x-vexil-stream-id': 'no-such-stream' },
        body: { context: {} },
      });
      expect(unknown.status).toBe(200);
      expect(unknown.headers['x-vexil-stream-updated']).toBe('false');
      reader.close();
    });

    it('works for EventSource (key in `sdkKey`) and for POST with a body', async () => {
      const viaQuery = await stream(
        `/v1/client/stream?sdkKey=${clientKey}&context=${encode({ email: 'a@acme.test' })}`,
      );
      expect((await viaQuery.next()).event).toBe('stream');
      expect(JSON.parse((await viaQuery.next()).data).flags.banner.value).toBe(true);
      viaQuery.close();

      const viaPost = await stream('/v1/client/stream', {
        key: clientKey,
        body: { context: { email: 'b@acme.test' } },
      });
      expect((await viaPost.next()).event).toBe('stream');
      expect(JSON.parse((await viaPost.next()).data).flags.banner.value).toBe(true);
      viaPost.close();
    });

    it('a server key is 403, and a context that is not base64url JSON is 400', async () => {
      const serverKeyed = await fetch(`${origin}/v1/client/stream?context=${encode({})}`, {
        headers: { authorization: serverKey },
      });
      expect(serverKeyed.status).toBe(403);
      expect(serverKeyed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      await serverKeyed.body?.cancel();
      const malformed = await fetch(`${origin}/v1/client/stream?context=bm90LWpzb24`, {
        headers: { authorization: clientKey },
      });
      expect(malformed.status).toBe(400);
      expect(await malformed.json()).toMatchObject({ status: 400 });
    });
  });

  it('closing the app ends open streams instead of waiting for them', async () => {
    const other = await createTestVexil(dialect, { config: { streamHeartbeatMs: 50 } });
    const org = await createOrg(other);
    const { sdkKey } = await createProjectWithFlag(other, org);
    await other.app.listen({ port: 0, host: '127.0.0.1' });
    const address = other.app.server.address();
    if (typeof address !== 'object' || !address) throw new Error('no address');
    const abort = new AbortController();
    const response = await fetch(`http://127.0.0.1:${address.port}/v1/sdk/stream`, {
      headers: { authorization: sdkKey },
      signal: abort.signal,
    });
    const reader = new SseReader(response, abort);
    expect((await reader.next()).event).toBe('put');
    await other.close();
    await reader.until(() => reader.ended, 'the stream to end');
  });
});

describe('streaming across nodes on postgres', () => {
  it('a change committed on node A reaches a stream held by node B', async () => {
    const nodeA = await createTestVexil('postgres');
    const nodeB = await createVexil(
      { ...nodeA.config, streamHeartbeatMs: 50 },
      { logger: false, startWorkers: false },
    );
    try {
      const org = await createOrg(nodeA);
      const { sdkKey, project, flag } = await createProjectWithFlag(nodeA, org);
      await nodeB.app.listen({ port: 0, host: '127.0.0.1' });
      const address = nodeB.app.server.address();
      if (typeof address !== 'object' || !address) throw new Error('no address');
      const abort = new AbortController();
      const reader = new SseReader(
        await fetch(`http://127.0.0.1:${address.port}/v1/sdk/stream`, {
          headers: { authorization: sdkKey },
          signal: abort.signal,
        }),
        abort,
      );
      const initial = await reader.next();
      const toggled = await call(
        nodeA,
        'POST',
        `/api/v1/orgs/acme/projects/${project}/flags/${flag}/environments/production/toggle`,
        { token: org.token, body: { enabled: true } },
      );
      expect(toggled.status).toBeLessThan(300);
      const changed = await reader.next();
      expect(Number(changed.id)).toBeGreaterThan(Number(initial.id));
      expect(JSON.parse(changed.data).flags[0]).toMatchObject({ key: flag, enabled: true });
      reader.close();
    } finally {
      await nodeB.close();
      await nodeA.close();
    }
  });
});
