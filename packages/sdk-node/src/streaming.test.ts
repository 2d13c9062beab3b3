import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../server/src/test-support/harness.js';
import { createClient, type ClientConnection, type VexilClient } from './index.js';

const toggleUrl =
  '/api/v1/orgs/acme/projects/web/flags/new-checkout/environments/production/toggle';
const user = { userId: 'u1' };

/**
 * A reverse proxy in front of a listening Vexil that can hide the stream route (404, as a Vexil
 * without streaming answers), and counts what passes.
 */
class StreamGate {
  streamAvailable = false;
  refusedStreams = 0;
  configurationDownloads = 0;
  private readonly server: Server;

  constructor(private readonly target: string) {
    this.server = createServer((incoming, response) => {
      const isStream = incoming.url?.startsWith('/v1/sdk/stream') === true;
      if (incoming.url === '/v1/sdk/flags') this.configurationDownloads += 1;
      if (isStream && !this.streamAvailable) {
        this.refusedStreams += 1;
        response.writeHead(404, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      const upstream = request(
        new URL(incoming.url ?? '/', this.target),
        { method: incoming.method, headers: incoming.headers },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          // As Vexil does for a stream: the client is connected before the first event.
          response.flushHeaders();
          answer.pipe(response);
        },
      );
      upstream.on('error', () => response.destroy());
      response.on('close', () => upstream.destroy());
      incoming.pipe(upstream);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const nextConnection = (client: VexilClient, wanted: ClientConnection) =>
  new Promise<void>((resolve) => {
    const listener = (connection: ClientConnection) => {
      if (connection !== wanted) return;
      client.off('connection', listener);
      resolve();
    };
    client.on('connection', listener);
  });

describe.each(testDialects())('@vexil/node streaming on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let sdkKey: string;
  let baseUrl: string;
  let vexilClosed: boolean;
  const closeVexil = async () => {
    vexilClosed = true;
    await vexil.close();
  };

  beforeEach(async () => {
    vexilClosed = false;
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    sdkKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterEach(async () => {
    if (!vexilClosed) await vexil.close();
  });

  const toggle = (enabled: boolean) => call(vexil, 'POST', toggleUrl, { token, body: { enabled } });

  it('polls while the stream answers 404, retries it, and streams once it is there', async () => {
    const gate = new StreamGate(baseUrl);
    const client = createClient({
      baseUrl: await gate.listen(),
      sdkKey,
      pollIntervalMs: 20,
      streamRetryMs: 10,
      streamRetryMaxMs: 50,
    });
    const errors: Error[] = [];
    client.on('error', (error) => errors.push(error));
    await client.waitForReady();
    expect(client.connection).toBe('polling');

    const polled = new Promise((resolve) => client.once('change', resolve));
    await toggle(true);
    await polled;
    expect(client.boolVariation('new-checkout', user, false)).toBe(true);
    expect(gate.refusedStreams).toBeGreaterThan(0);
    // A missing stream route is a normal set-up, not an error.
    expect(errors).toEqual([]);

    gate.streamAvailable = true;
    await nextConnection(client, 'streaming');
    // At most one poll may already have been in flight when the stream connected.
    const downloads = gate.configurationDownloads + 1;
    const streamed = new Promise((resolve) => client.once('change', resolve));
    await toggle(false);
    await streamed;
    expect(client.boolVariation('new-checkout', user, true)).toBe(false);
    // The change came by the stream: polling stops while it is connected.
    expect(gate.configurationDownloads).toBeLessThanOrEqual(downloads);

    await client.close();
    await gate.close();
  });

  it('a stream cut by the network is reported, polled over and re-opened', async () => {
    // The server-side sockets of the SDK's streams, to cut them as a failing network would.
    const streamSockets = new Set<Socket>();
    vexil.app.server.on('request', (incoming: IncomingMessage) => {
      if (incoming.url?.startsWith('/v1/sdk/stream')) streamSockets.add(incoming.socket);
    });
    const client = createClient({ baseUrl, sdkKey, pollIntervalMs: 60_000, streamRetryMs: 10 });
    await nextConnection(client, 'streaming');
    const error = new Promise<Error>((resolve) => client.once('error', resolve));
    const fellBack = nextConnection(client, 'polling');
    for (const socket of streamSockets) socket.destroy();
    expect(await error).toBeInstanceOf(Error);
    await fellBack;
    await nextConnection(client, 'streaming');

    const change = new Promise((resolve) => client.once('change', resolve));
    await toggle(true);
    await change;
    expect(client.boolVariation('new-checkout', user, false)).toBe(true);
    expect(client.status).toBe('ready');
    await client.close();
  });

  it('applies per-flag patches: a toggle, a new segment, a new flag using it, an archived flag', async () => {
    const streamed: string[] = [];
    vexil.app.server.on('request', (incoming: IncomingMessage) => {
      if (incoming.url?.startsWith('/v1/sdk/stream')) streamed.push(incoming.url);
    });
    const client = createClient({ baseUrl, sdkKey, pollIntervalMs: 60_000 });
    await nextConnection(client, 'streaming');
    expect(streamed).toEqual(['/v1/sdk/stream?patches=true']);
    const project = '/api/v1/orgs/acme/projects/web';
    const changed = () => new Promise<void>((resolve) => client.once('change', () => resolve()));
    const manage = async (method: 'POST' | 'PATCH', path: string, body?: unknown) => {
      const next = changed();
      const answer = await call(vexil, method, `${project}${path}`, { token, body });
      expect(answer.status).toBeLessThan(300);
      await next;
      return answer.body;
    };

    await manage('POST', '/flags/new-checkout/environments/production/toggle', { enabled: true });
    expect(client.boolVariation('new-checkout', user, false)).toBe(true);

    const segment = await manage('POST', '/segments', {
      key: 'dutch',
      conditions: [{ attribute: 'country', operator: 'Equals', values: ['NL'] }],
    });
    const flag = await manage('POST', '/flags', { key: 'dutch-banner' });
    const on = flag.variations.find((v: { key: string }) => v.key === 'true').id as string;
    await manage('POST', '/flags/dutch-banner/environments/production/rules', {
      variationId: on,
      userSegmentId: segment.id,
    });
    await manage('POST', '/flags/dutch-banner/environments/production/toggle', { enabled: true });
    expect(client.boolVariation('dutch-banner', { country: 'NL' }, false)).toBe(true);

    // What the patches built answers as a fresh download does.
    const downloaded = createClient({ baseUrl, sdkKey, streaming: false });
    await downloaded.waitForReady();
    for (const context of [user, { country: 'NL' }, { country: 'BE' }])
      expect(client.allFlags(context)).toEqual(downloaded.allFlags(context));
    await downloaded.close();

    await manage('POST', '/flags/dutch-banner/archive?force=true');
    expect(client.boolVariationDetail('dutch-banner', user, false).errorCode).toBe(
      'FLAG_NOT_FOUND',
    );
    expect(streamed).toHaveLength(1);
    await client.close();
  });

  it('close() aborts the stream, so the server then closes at once', async () => {
    const client = createClient({ baseUrl, sdkKey, pollIntervalMs: 60_000 });
    await nextConnection(client, 'streaming');
    await client.close();
    expect(client.status).toBe('closed');
    // Bounded by the test time-out: a stream left open would hold the graceful close up.
    await closeVexil();
  });

  it('keeps serving the last configuration when Vexil goes away mid-stream', async () => {
    await toggle(true);
    const client = createClient({ baseUrl, sdkKey, pollIntervalMs: 20, streamRetryMs: 10 });
    await nextConnection(client, 'streaming');
    const stale = new Promise<void>((resolve) =>
      client.on('status', (status) => status === 'stale' && resolve()),
    );
    await closeVexil();
    await stale;
    expect(client.connection).toBe('polling');
    expect(client.boolVariation('new-checkout', user, false)).toBe(true);
    await client.close();
  });
});
