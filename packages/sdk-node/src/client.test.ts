import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../server/src/test-support/harness.js';
import { seedSdkFlags } from '../../server/src/test-support/sdk-flags.js';
import { createClient, type VexilClient } from './index.js';

const base = '/api/v1/orgs/acme/projects/web';
const flagEnv = (flag: string) => `${base}/flags/${flag}/environments/production`;

describe.each(testDialects())('@vexil/node on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let sdkKey: string;
  let baseUrl: string;
  let client: VexilClient;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    sdkKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    await seedSdkFlags(vexil, token, 'false');
    baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    // Polling effectively off: changes can only arrive through the stream.
    client = createClient({ baseUrl, sdkKey, pollIntervalMs: 60_000 });
    await new Promise((resolve) => client.once('connection', resolve));
  });
  afterAll(async () => {
    await client.close();
    await vexil.close();
  });

  const pro = { userId: 'u1', attributes: { plan: 'pro' } };
  const free = { userId: 'u2', attributes: { plan: 'free' } };

  it('serves typed values evaluated locally, with reasons', () => {
    expect(client.status).toBe('ready');
    expect(client.connection).toBe('streaming');
    expect(client.boolVariation('new-checkout', pro, false)).toBe(true);
    expect(client.boolVariationDetail('new-checkout', pro, false)).toMatchObject({
      value: true,
      variation: 'true',
      reason: 'TARGETING_MATCH',
    });
    expect(client.boolVariationDetail('new-checkout', free, true)).toEqual({
      value: false,
      variation: 'false',
      reason: 'DEFAULT',
    });
    expect(client.stringVariation('banner-text', free, 'x')).toBe('Hello');
    expect(client.numberVariation('max-items', free, 0)).toBe(10);
    expect(client.jsonVariation('theme', free, {})).toEqual({ mode: 'dark' });
    expect(client.boolVariationDetail('kill-switch', free, true)).toEqual({
      value: false,
      variation: 'false',
      reason: 'DISABLED',
    });
  });

  it('returns the default with an error code for unknown flags and type mismatches', () => {
    expect(client.boolVariationDetail('nope', free, true)).toEqual({
      value: true,
      variation: null,
      reason: 'ERROR',
      errorCode: 'FLAG_NOT_FOUND',
    });
    expect(client.numberVariationDetail('banner-text', free, 3)).toEqual({
      value: 3,
      variation: null,
      reason: 'ERROR',
      errorCode: 'TYPE_MISMATCH',
    });
  });

  it('allFlags evaluates every flag for one context', () => {
    expect(client.allFlags(pro)).toEqual({
      'banner-text': 'Hello',
      'kill-switch': false,
      'max-items': 10,
      'new-checkout': true,
      theme: { mode: 'dark' },
    });
  });

  it('the stream delivers a toggle made through the management API and emits change', async () => {
    const change = new Promise<{ version: number }>((resolve) => client.on('change', resolve));
    await call(vexil, 'POST', `${flagEnv('kill-switch')}/toggle`, {
      token,
      body: { enabled: true },
    });
    expect((await change).version).toBeGreaterThan(0);
    expect(client.boolVariation('kill-switch', free, false)).toBe(true);
    expect(client.connection).toBe('streaming');
  });

  it('with streaming off, polling picks up a change', async () => {
    const poller = createClient({ baseUrl, sdkKey, streaming: false, pollIntervalMs: 20 });
    await poller.waitForReady();
    expect(poller.connection).toBe('polling');
    const change = new Promise<{ version: number }>((resolve) => poller.on('change', resolve));
    await call(vexil, 'POST', `${flagEnv('kill-switch')}/toggle`, {
      token,
      body: { enabled: false },
    });
    await change;
    expect(poller.boolVariation('kill-switch', free, true)).toBe(false);
    await poller.close();
  });

  it('reports evaluation summaries and tracked events through /v1/sdk/events', async () => {
    const reporter = createClient({ baseUrl, sdkKey });
    await reporter.waitForReady();
    for (let i = 0; i < 5; i++) reporter.stringVariation('banner-text', free, 'x');
    reporter.track({ key: 'checkout-completed', userId: 'u2', metadata: { total: 42 } });
    await reporter.close();
    const usage = await call(vexil, 'GET', `${base}/flags/banner-text/usage`, { token });
    const production = usage.body.environments.find(
      (env: { environmentKey: string }) => env.environmentKey === 'production',
    );
    // One summary event per flag and variation served since the last flush.
    expect(production.variations).toEqual([{ variation: 'english', count: 1 }]);
    expect(production.lastEvaluatedAt).not.toBeNull();
  });
});

describe('@vexil/node when Vexil is unreachable', () => {
  it('before the first configuration: defaults with CLIENT_NOT_READY, errors reported', async () => {
    // A listening Vexil that is then closed leaves a port nobody answers on.
    const vexil = await createTestVexil('sqlite');
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    await vexil.close();
    const client = createClient({ baseUrl, sdkKey: 'vxl_srv_unknown' });
    const error = new Promise<Error>((resolve) => client.on('error', resolve));
    expect(await error).toBeInstanceOf(Error);
    expect(client.status).toBe('initializing');
    expect(client.boolVariationDetail('new-checkout', {}, true)).toEqual({
      value: true,
      variation: null,
      reason: 'ERROR',
      errorCode: 'CLIENT_NOT_READY',
    });
    await client.close();
    expect(client.status).toBe('closed');
  });

  it('after it: the last good configuration is served and the status says stale', async () => {
    const vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    const { sdkKey } = await createProjectWithFlag(vexil, org);
    await call(vexil, 'POST', `${flagEnv('new-checkout')}/toggle`, {
      token: org.token,
      body: { enabled: true },
    });
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const client = createClient({ baseUrl, sdkKey, pollIntervalMs: 20 });
    await client.waitForReady();
    expect(client.boolVariation('new-checkout', { userId: 'u1' }, false)).toBe(true);
    const error = new Promise<Error>((resolve) => client.on('error', resolve));
    const stale = new Promise<void>((resolve) =>
      client.on('status', (status) => status === 'stale' && resolve()),
    );
    await vexil.close();
    await error;
    await stale;
    expect(client.boolVariationDetail('new-checkout', { userId: 'u1' }, false)).toEqual({
      value: true,
      variation: 'true',
      reason: 'DEFAULT',
    });
    await client.close();
  });
});
