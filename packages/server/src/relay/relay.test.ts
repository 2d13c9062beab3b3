import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectOptions } from 'light-my-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../config.js';
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
import { eventually } from '../test-support/processes.js';
import { SseReader } from '../test-support/sse-reader.js';
import { SwitchableProxy } from '../test-support/switchable-proxy.js';
import { createRelayNode, type VexilRelay } from '../node/relay-node.js';

const web = '/api/v1/orgs/acme/projects/web';
/** How long a test waits for something that normally takes milliseconds (not a timing claim). */
const WAIT_MS = 10_000;

/** Contexts the comparisons evaluate every flag for: rules, segments, rollouts all decide. */
const CONTEXTS = [
  { userId: 'anna', attributes: { email: 'anna@acme.test', country: 'NL' } },
  { userId: 'bob', attributes: { email: 'bob@example.com', country: 'DE' } },
  { userId: 'carla', attributes: { country: 'NL' } },
  { userId: 'dmitri' },
  { userId: 'eve', attributes: { plan: 'pro' } },
];

describe.each(testDialects())('relay on %s', (dialect) => {
  let upstream: TestVexil;
  let upstreamOrigin: string;
  let proxy: SwitchableProxy;
  let proxyOrigin: string;
  let relay: VexilRelay;
  let cacheDir: string;
  let owner: string;
  let serverKey: string;
  let clientKey: string;
  let relayKey: string;
  const flagKeys = ['new-checkout', 'in-nl', 'half-rule', 'split', 'child', 'dormant', 'banner'];
  const closing: { close(): Promise<void> }[] = [];
  const variations = new Map<string, Map<string, string>>();

  const manage = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) =>
    callOk(upstream, method, `${web}${path}`, owner, body);
  const createFlag = async (key: string, extra: Record<string, unknown> = {}) => {
    const flag = await manage('POST', '/flags', { key, ...extra });
    variations.set(
      key,
      new Map(flag.variations.map((v: { key: string; id: string }) => [v.key, v.id])),
    );
  };
  const variationId = (flag: string, variation: string) => variations.get(flag)!.get(variation)!;
  const enable = (flag: string) =>
    manage('POST', `/flags/${flag}/environments/production/toggle`, { enabled: true });
  const relayConfig = (overrides: Partial<Config> = {}) =>
    testConfig({ snapshotCacheDir: null, usageFlushIntervalMs: 3_600_000, ...overrides });

  async function startRelay(
    upstreamUrl: string,
    key = relayKey,
    overrides: Partial<Config> = {},
  ): Promise<VexilRelay> {
    const started = await createRelayNode(relayConfig(overrides), {
      upstreamUrl,
      relayKey: key,
      logger: false,
      initialBackoffMs: 20,
    });
    closing.push(started);
    return started;
  }

  /** Every evaluation request the comparisons send, for every flag and context. */
  function evaluationRequests(): InjectOptions[] {
    const server = { authorization: serverKey };
    const client = { authorization: clientKey };
    const json = { 'content-type': 'application/json' };
    const requests: InjectOptions[] = [
      { method: 'GET', url: '/v1/sdk/flags', headers: server },
      { method: 'GET', url: '/v1/sdk/flags', headers: { ...server, 'accept-encoding': 'gzip' } },
      { method: 'GET', url: '/v1/sdk/flags/no-such-flag', headers: server },
      { method: 'GET', url: '/v1/sdk/flags', headers: client },
      { method: 'GET', url: '/v1/sdk/flags', headers: { authorization: 'vxl_srv_unknown' } },
      { method: 'GET', url: '/v1/sdk/flags' },
      {
        method: 'POST',
        url: '/v1/sdk/evaluate',
        headers: { ...server, ...json },
        payload: JSON.stringify({ flagKey: 'no-such-flag', context: {} }),
      },
      {
        method: 'POST',
        url: '/v1/sdk/events',
        headers: { ...server, ...json },
        payload: JSON.stringify({ events: [{ type: 'Custom', flagKey: 'signup' }] }),
      },
      {
        method: 'POST',
        url: '/v1/client/events',
        headers: { ...client, ...json },
        payload: JSON.stringify({
          events: [{ type: 'Evaluation', flagKey: 'banner', variation: 'blue' }],
        }),
      },
      {
        method: 'POST',
        url: '/ofrep/v1/evaluate/flags',
        headers: { ...server, ...json },
        payload: JSON.stringify({ context: { targetingKey: 'anna' } }),
      },
    ];
    for (const key of flagKeys)
      requests.push({ method: 'GET', url: `/v1/sdk/flags/${key}`, headers: server });
    for (const context of CONTEXTS) {
      for (const flagKey of flagKeys) {
        requests.push({
          method: 'POST',
          url: '/v1/sdk/evaluate',
          headers: { ...server, ...json },
          payload: JSON.stringify({ flagKey, context }),
        });
        requests.push({
          method: 'POST',
          url: `/ofrep/v1/evaluate/flags/${flagKey}`,
          headers: { ...server, ...json },
          payload: JSON.stringify({
            context: { targetingKey: context.userId, ...context.attributes },
          }),
        });
      }
      for (const url of ['/v1/client/evaluate', '/v1/client/identify'])
        requests.push({
          method: 'POST',
          url,
          headers: { ...client, ...json },
          payload: JSON.stringify({ context: { userId: context.userId, ...context.attributes } }),
        });
    }
    return requests;
  }

  /** What of an answer must be the same on the relay as upstream: status, body bytes, headers. */
  const answerOf = async (node: { inject: TestVexil['inject'] }, request: InjectOptions) => {
    const response = await node.inject(request);
    return {
      request: `${request.method ?? 'GET'} ${JSON.stringify(request.url)} ${JSON.stringify(request.payload ?? '')}`,
      status: response.statusCode,
      body: response.rawPayload.toString('base64'),
      etag: response.headers.etag,
      type: response.headers['content-type'],
      encoding: response.headers['content-encoding'],
    };
  };

  /** Compares every evaluation answer of `node` with the upstream's; returns how many. */
  async function expectSameAnswers(node: { inject: TestVexil['inject'] }): Promise<number> {
    const requests = evaluationRequests();
    for (const request of requests) {
      const [expected, actual] = [await answerOf(upstream, request), await answerOf(node, request)];
      expect(actual).toEqual(expected);
      if (request.url === '/v1/sdk/flags' && expected.etag) {
        const headers = { ...request.headers, 'if-none-match': expected.etag };
        const revalidated = await node.inject({ ...request, headers });
        expect(revalidated.statusCode, 'If-None-Match on the relay').toBe(304);
      }
    }
    return requests.length;
  }

  /** Until `node` serves the upstream's current configuration (its ETag). */
  async function caughtUp(node: { inject: TestVexil['inject'] }): Promise<boolean> {
    const request = {
      method: 'GET' as const,
      url: '/v1/sdk/flags',
      headers: { authorization: serverKey },
    };
    const expected = (await upstream.inject(request)).headers.etag;
    return eventually(async () => (await node.inject(request)).headers.etag === expected, WAIT_MS);
  }

  beforeAll(async () => {
    cacheDir = await mkdtemp(join(tmpdir(), 'vexil-relay-'));
    upstream = await createTestVexil(dialect);
    await upstream.app.listen({ port: 0, host: '127.0.0.1' });
    upstreamOrigin = `http://127.0.0.1:${String((upstream.app.server.address() as AddressInfo).port)}`;
    proxy = new SwitchableProxy(upstreamOrigin);
    proxyOrigin = await proxy.listen();
    const org = await createOrg(upstream);
    owner = org.token;
    serverKey = (await createProjectWithFlag(upstream, org)).sdkKey;
    const flag = await manage('GET', '/flags/new-checkout');
    variations.set(
      'new-checkout',
      new Map(flag.variations.map((v: { key: string; id: string }) => [v.key, v.id])),
    );
    clientKey = (
      await manage('POST', '/environments/production/sdk-keys', { name: 'web', type: 'ClientSide' })
    ).key;
    // The configuration of evaluation.test.ts: a rule, a segment, rollouts, a prerequisite.
    await enable('new-checkout');
    await manage('POST', '/flags/new-checkout/environments/production/rules', {
      variationId: variationId('new-checkout', 'false'),
      conditionGroups: [
        {
          operator: 'And',
          conditions: [{ attribute: 'email', operator: 'endsWith', values: ['@acme.test'] }],
        },
      ],
    });
    const segment = await manage('POST', '/segments', {
      key: 'dutch',
      conditions: [{ attribute: 'country', operator: 'Equals', values: ['NL'] }],
    });
    await createFlag('in-nl');
    await enable('in-nl');
    await manage('POST', '/flags/in-nl/environments/production/rules', {
      variationId: variationId('in-nl', 'false'),
      userSegmentId: segment.id,
    });
    await createFlag('half-rule');
    await enable('half-rule');
    await manage('POST', '/flags/half-rule/environments/production/rules', {
      variationId: variationId('half-rule', 'false'),
      rolloutPercentage: 50,
    });
    await createFlag('split');
    await enable('split');
    await manage('PATCH', '/flags/split/environments/production', {
      strategy: 'PercentageRollout',
      rollout: [
        { variationId: variationId('split', 'true'), weight: 30000 },
        { variationId: variationId('split', 'false'), weight: 70000 },
      ],
    });
    await createFlag('child');
    await enable('child');
    await manage('PATCH', '/flags/child/environments/production', {
      prerequisites: [{ prerequisiteFlagKey: 'new-checkout', expectedVariationKey: 'true' }],
    });
    await createFlag('dormant');
    await createFlag('banner', {
      type: 'String',
      clientSideVisible: true,
      variations: [
        { key: 'blue', value: 'blue' },
        { key: 'green', value: 'green' },
      ],
      offVariationKey: 'green',
    });
    await enable('banner');
    relayKey = (
      await callOk(upstream, 'POST', '/api/v1/orgs/acme/relay-keys', owner, { name: 'edge' })
    ).key as string;
    relay = await startRelay(proxyOrigin, relayKey, { snapshotCacheDir: cacheDir });
    expect(await relay.follower.firstConnection()).toBeNull();
  });

  afterAll(async () => {
    for (const node of closing.reverse()) await node.close();
    await proxy.close();
    await upstream.close();
    await rm(cacheDir, { recursive: true, force: true });
  });

  it('answers every evaluation route as the upstream does, byte for byte, ETags and 304 included', async () => {
    expect(await expectSameAnswers(relay)).toBeGreaterThan(80);
  });

  it('pushes upstream changes to its server and client SDK streams, and serves the new answers', async () => {
    await relay.app.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${String((relay.app.server.address() as AddressInfo).port)}`;
    const abort = new AbortController();
    const stream = new SseReader(
      await fetch(`${origin}/v1/sdk/stream`, {
        headers: { authorization: serverKey },
        signal: abort.signal,
      }),
      abort,
    );
    const context = Buffer.from(JSON.stringify({ userId: 'anna' })).toString('base64url');
    const clientAbort = new AbortController();
    const clientStream = new SseReader(
      await fetch(`${origin}/v1/client/stream?context=${context}`, {
        headers: { authorization: clientKey },
        signal: clientAbort.signal,
      }),
      clientAbort,
    );
    expect((await clientStream.next()).event).toBe('stream');
    const clientFirst = await clientStream.next();
    expect(JSON.parse(clientFirst.data)).toMatchObject({ flags: { banner: { value: 'blue' } } });
    const first = await stream.next();
    expect(first.event).toBe('put');
    await enable('dormant');
    await manage('POST', '/flags/banner/environments/production/toggle', { enabled: false });
    // The dormant change is pushed first (banner unchanged), then the banner's.
    const bannerValue = async () =>
      (JSON.parse((await clientStream.next()).data) as { flags: { banner: { value: string } } })
        .flags.banner.value;
    while ((await bannerValue()) !== 'green');
    clientStream.close();
    await enable('banner');
    const pushed = await stream.next();
    expect(pushed.event).toBe('put');
    expect(Number(pushed.id)).toBeGreaterThan(Number(first.id));
    const dormant = (
      JSON.parse(pushed.data) as { flags: { key: string; enabled: boolean }[] }
    ).flags.find((flag) => flag.key === 'dormant');
    expect(dormant?.enabled).toBe(true);
    stream.close();
    expect(await caughtUp(relay)).toBe(true);
    await expectSameAnswers(relay);
  });

  it('takes a new SDK key, and refuses a revoked one', async () => {
    const created = await manage('POST', '/environments/production/sdk-keys', {
      name: 'new',
      type: 'ServerSide',
    });
    const flags = (key: string) =>
      relay.inject({ method: 'GET', url: '/v1/sdk/flags', headers: { authorization: key } });
    expect(
      await eventually(async () => (await flags(created.key)).statusCode === 200, WAIT_MS),
    ).toBe(true);
    await manage('DELETE', `/environments/production/sdk-keys/${created.id as string}`);
    expect(
      await eventually(async () => (await flags(created.key)).statusCode === 401, WAIT_MS),
    ).toBe(true);
    expect((await flags(serverKey)).statusCode).toBe(200);
  });

  it('sends its evaluation counts upstream: the archive guard sees relay-only traffic', async () => {
    await createFlag('relay-only');
    await enable('relay-only');
    await caughtUp(relay);
    const evaluated = await relay.inject({
      method: 'POST',
      url: '/v1/sdk/evaluate',
      headers: { authorization: serverKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ flagKey: 'relay-only', context: { userId: 'anna' } }),
    });
    expect(evaluated.statusCode).toBe(200);
    const archive = () =>
      call(upstream, 'POST', `${web}/flags/relay-only/archive`, { token: owner });
    await relay.usage.flush();
    const refused = await archive();
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('FLAG_RECENTLY_EVALUATED');
  });

  const guardedPlanPath = `${web}/flags/guarded/environments/production/release-plan`;
  const guardReading = () => callOk(upstream, 'GET', `${guardedPlanPath}/guard`, owner);
  const exposedUsers = async () => {
    const { target, rest } = await guardReading();
    return (target.exposedUsers as number) + (rest.exposedUsers as number);
  };
  const evaluateGuarded = (node: VexilRelay, userId: string) =>
    node.inject({
      method: 'POST',
      url: '/v1/sdk/evaluate',
      headers: { authorization: serverKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ flagKey: 'guarded', context: { userId } }),
    });

  it('sends the exposures and metric events of a guarded release plan upstream: the guard counts relay users', async () => {
    await createFlag('guarded');
    await manage('PATCH', '/flags/guarded/environments/production', {
      defaultVariationId: variationId('guarded', 'false'),
    });
    await enable('guarded');
    await callOk(upstream, 'PUT', guardedPlanPath, owner, {
      variation: 'true',
      steps: [
        { percentage: 50, after: 'PT0S' },
        { percentage: 100, after: 'P1D' },
      ],
      guard: { metric: 'refund', minimumUsers: 100 },
    });
    await upstream.services.usage.exposures?.refresh();
    await caughtUp(relay);
    const evaluate = (userId: string) => evaluateGuarded(relay, userId);
    // The relay learns the upstream's guarded plans from its answer to the relay's usage.
    await evaluate('before');
    await relay.usage.flush();
    expect(relay.usage.exposures?.active).toBe(true);

    const served = new Map<string, string>();
    for (let i = 0; i < 20; i += 1) {
      const answer = await evaluate(`g-${i}`);
      served.set(`g-${i}`, answer.json<{ variation: string }>().variation);
    }
    const tracked = await relay.inject({
      method: 'POST',
      url: '/v1/sdk/events',
      headers: { authorization: serverKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ events: [{ type: 'Custom', flagKey: 'refund', userId: 'g-1' }] }),
    });
    expect(tracked.statusCode).toBe(202);
    await relay.usage.flush();
    await upstream.services.usage.flush();

    const guard = await guardReading();
    const onTarget = [...served.values()].filter((variation) => variation === 'true').length;
    expect(guard.target.exposedUsers).toBe(onTarget);
    expect(guard.rest.exposedUsers).toBe(20 - onTarget);
    const side = served.get('g-1') === 'true' ? guard.target : guard.rest;
    expect(side.usersWithMetric).toBe(1);
  });

  it('sends the exposures and events of a running experiment upstream: its results count relay users', async () => {
    await createFlag('tested');
    await enable('tested');
    await manage('POST', '/metrics', {
      key: 'purchase',
      name: 'Purchase',
      eventKey: 'purchase',
      kind: 'conversion',
      direction: 'higher_is_better',
    });
    const experiments = `${web}/flags/tested/environments/production/experiments`;
    await callOk(upstream, 'POST', experiments, owner, {
      key: 'tested',
      name: 'Tested',
      variations: [
        { key: 'false', weight: 5000 },
        { key: 'true', weight: 5000 },
      ],
      controlVariation: 'false',
      primaryMetric: 'purchase',
    });
    await callOk(upstream, 'POST', `${experiments}/tested/start`, owner);
    await upstream.services.usage.exposures?.refresh();
    await caughtUp(relay);
    const evaluate = (userId: string) =>
      relay.inject({
        method: 'POST',
        url: '/v1/sdk/evaluate',
        headers: { authorization: serverKey, 'content-type': 'application/json' },
        payload: JSON.stringify({ flagKey: 'tested', context: { userId } }),
      });
    // The relay learns the running experiments from the upstream's answer to its usage.
    await relay.usage.flush();
    expect(relay.usage.exposures?.experiments.active).toBe(true);
    const served = new Map<string, string>();
    for (let i = 0; i < 20; i += 1)
      served.set(`e-${i}`, (await evaluate(`e-${i}`)).json<{ variation: string }>().variation);
    const tracked = await relay.inject({
      method: 'POST',
      url: '/v1/sdk/events',
      headers: { authorization: serverKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ events: [{ type: 'Custom', flagKey: 'purchase', userId: 'e-3' }] }),
    });
    expect(tracked.statusCode).toBe(202);
    await relay.usage.flush();
    await upstream.services.usage.flush();

    const results = await callOk(upstream, 'GET', `${experiments}/tested/results`, owner);
    const onTrue = [...served.values()].filter((variation) => variation === 'true').length;
    expect(results.variations).toEqual([
      { key: 'false', exposedUsers: 20 - onTrue, control: true },
      { key: 'true', exposedUsers: onTrue },
    ]);
    const converted = served.get('e-3') ?? '';
    expect(results.metrics[0].byVariation[converted].usersWithEvent).toBe(1);
  });

  it('answers the management API, /mcp and the console 404, naming the upstream', async () => {
    for (const url of ['/api/v1/orgs', '/mcp', '/', '/auth/sign-in']) {
      const response = await relay.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json().detail, url).toContain(proxyOrigin);
    }
  });

  it('serves relays that follow it (a chain), changes included', async () => {
    await relay.app.listen({ port: 0, host: '127.0.0.1' }).catch(() => undefined);
    const origin = `http://127.0.0.1:${String((relay.app.server.address() as AddressInfo).port)}`;
    const downstream = await startRelay(origin);
    expect(await downstream.follower.firstConnection()).toBeNull();
    await expectSameAnswers(downstream);
    // What the downstream relay receives, and what a server SDK of this relay receives.
    const open = async (path: string, init: RequestInit) => {
      const abort = new AbortController();
      return new SseReader(
        await fetch(`${origin}${path}`, { ...init, signal: abort.signal }),
        abort,
      );
    };
    const feed = await open('/v1/relay/feed', {
      method: 'POST',
      headers: { authorization: `Bearer ${relayKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ known: relay.source.known(), patches: true }),
    });
    const sdkStream = await open('/v1/sdk/stream?patches=true', {
      headers: { authorization: serverKey },
    });
    expect((await sdkStream.next()).event).toBe('put');
    await manage('PATCH', '/flags/split/environments/production', {
      rollout: [
        { variationId: variationId('split', 'true'), weight: 60000 },
        { variationId: variationId('split', 'false'), weight: 40000 },
      ],
    });
    expect(await caughtUp(downstream)).toBe(true);
    await expectSameAnswers(downstream);
    let event = await feed.next();
    while (event.event !== 'patch') event = await feed.next();
    expect((JSON.parse(event.data) as { flags: { key: string }[] }).flags).toEqual([
      expect.objectContaining({ key: 'split' }),
    ]);
    const patch = await sdkStream.next();
    expect(patch.event).toBe('patch');
    expect(JSON.parse(patch.data)).toMatchObject({ path: '/flags/split' });
    feed.close();
    sdkStream.close();

    // Exposures of the guarded plan (test above) go up the chain: the downstream relay learns
    // the plan from this relay's answer to its usage. The comparisons above exposed users
    // upstream (OFREP's bulk evaluation serves every flag): they are written first.
    await upstream.services.usage.flush();
    const before = await exposedUsers();
    await evaluateGuarded(downstream, 'chain-before');
    await downstream.usage.flush();
    expect(downstream.usage.exposures?.active).toBe(true);
    for (let i = 0; i < 5; i += 1) await evaluateGuarded(downstream, `chain-${i}`);
    await downstream.usage.flush();
    await relay.usage.flush();
    await upstream.services.usage.flush();
    expect(await exposedUsers()).toBe(before + 5);
  });

  it('keeps serving with no 5xx while the upstream is unreachable, says so, and catches up after', async () => {
    await caughtUp(relay);
    proxy.switchTo('down');
    expect(await eventually(() => relay.follower.problem()?.kind === 'unreachable', WAIT_MS)).toBe(
      true,
    );
    for (const request of evaluationRequests()) {
      const response = await relay.inject(request);
      expect(response.statusCode, JSON.stringify(request.url)).toBeLessThan(500);
    }
    const health = await relay.inject({ method: 'GET', url: '/healthz' });
    expect(health.json()).toMatchObject({ status: 'degraded' });
    expect(health.json().reasons[0]).toMatch(/unreachable since .* s ago/);
    expect((await relay.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const metrics = (await relay.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^vexil_relay_upstream_connected 0$/m);
    // A change made meanwhile reaches the relay once the upstream is back.
    await manage('POST', '/flags/dormant/environments/production/toggle', { enabled: false });
    proxy.switchTo('pass');
    expect(await caughtUp(relay)).toBe(true);
    expect(await eventually(() => relay.follower.problem() === null, WAIT_MS)).toBe(true);
    expect((await relay.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({
      status: 'ok',
    });
  });

  it('keeps its last good data when the upstream answers garbage', async () => {
    await caughtUp(relay);
    proxy.switchTo('garbage');
    expect(await eventually(() => relay.follower.problem()?.kind === 'incompatible', WAIT_MS)).toBe(
      true,
    );
    await expectSameAnswers(relay);
    proxy.switchTo('pass');
    expect(await eventually(() => relay.follower.problem() === null, WAIT_MS)).toBe(true);
  });

  it('restarted while the upstream is down, serves its copies; never a corrupt or foreign one', async () => {
    await caughtUp(relay);
    proxy.switchTo('down');
    const restarted = await startRelay(proxyOrigin, relayKey, { snapshotCacheDir: cacheDir });
    expect((await restarted.follower.firstConnection())?.kind).toBe('unreachable');
    await expectSameAnswers(restarted);
    expect((await restarted.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect((await restarted.inject({ method: 'GET', url: '/healthz' })).json().reasons[0]).toMatch(
      /unreachable .* snapshot copies on disk/,
    );

    // The same copies, for another upstream: not served.
    const foreign = await startRelay('http://127.0.0.1:9', relayKey, {
      snapshotCacheDir: cacheDir,
    });
    expect((await foreign.follower.firstConnection())?.kind).toBe('unreachable');
    expect((await foreign.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    const refused = await foreign.inject({
      method: 'GET',
      url: '/v1/sdk/flags',
      headers: { authorization: serverKey },
    });
    expect(refused.statusCode).toBe(401);

    // Corrupt copies (one byte of each document changed): not served.
    const corruptDir = await mkdtemp(join(tmpdir(), 'vexil-relay-corrupt-'));
    await cp(cacheDir, corruptDir, { recursive: true });
    for (const name of await readdir(corruptDir)) {
      const bytes = await readFile(join(corruptDir, name));
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
      await writeFile(join(corruptDir, name), bytes);
    }
    const corrupt = await startRelay(proxyOrigin, relayKey, { snapshotCacheDir: corruptDir });
    expect((await corrupt.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    await rm(corruptDir, { recursive: true, force: true });
    proxy.switchTo('pass');
    expect(await caughtUp(restarted)).toBe(true);
  });

  it('says so when its key is refused at start, or revoked while it follows; keeps serving', async () => {
    const wrong = await startRelay(upstreamOrigin, 'vxr_not-a-key');
    expect((await wrong.follower.firstConnection())?.kind).toBe('keyRefused');

    const { id, key } = (await callOk(upstream, 'POST', '/api/v1/orgs/acme/relay-keys', owner, {
      name: 'short-lived',
    })) as { id: string; key: string };
    const revoked = await startRelay(upstreamOrigin, key);
    expect(await revoked.follower.firstConnection()).toBeNull();
    await callOk(upstream, 'DELETE', `/api/v1/orgs/acme/relay-keys/${id}`, owner);
    expect(await eventually(() => revoked.follower.problem()?.kind === 'revoked', WAIT_MS)).toBe(
      true,
    );
    const health = (await revoked.inject({ method: 'GET', url: '/healthz' })).json();
    expect(health.reasons[0]).toContain('relay key refused');
    const flags = await revoked.inject({
      method: 'GET',
      url: '/v1/sdk/flags',
      headers: { authorization: serverKey },
    });
    expect(flags.statusCode).toBe(200);
  });
});
