import { ErrorCode, OpenFeature, ProviderEvents } from '@openfeature/server-sdk';
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
import { VexilProvider } from './index.js';

const base = '/api/v1/orgs/acme/projects/web';
const flagEnv = (flag: string) => `${base}/flags/${flag}/environments/production`;

describe.each(testDialects())('@vexil/openfeature-provider on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let provider: VexilProvider;
  const domain = `vexil-${dialect}`;
  const client = () => OpenFeature.getClient(domain);

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    const { sdkKey } = await createProjectWithFlag(vexil, org);
    await seedSdkFlags(vexil, token, 'split');
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    provider = new VexilProvider({ baseUrl, sdkKey, pollIntervalMs: 60_000 });
    await OpenFeature.setProviderAndWait(domain, provider);
  });
  afterAll(async () => {
    await OpenFeature.clearProviders();
    await vexil.close();
  });

  const pro = { targetingKey: 'user-1', plan: 'pro' };
  const free = { targetingKey: 'user-2', plan: 'free' };

  it('resolves every type with variant and reason; targetingKey is the identity', async () => {
    expect(await client().getBooleanDetails('new-checkout', false, pro)).toMatchObject({
      value: true,
      variant: 'true',
      reason: 'TARGETING_MATCH',
      flagMetadata: { ruleId: expect.any(String) },
    });
    const split = await client().getBooleanDetails('new-checkout', false, free);
    expect(split.reason).toBe('SPLIT');
    // The same targetingKey always lands in the same bucket.
    expect((await client().getBooleanDetails('new-checkout', !split.value, free)).value).toBe(
      split.value,
    );
    expect(await client().getStringDetails('banner-text', 'x', free)).toMatchObject({
      value: 'Hello',
      variant: 'english',
      reason: 'DEFAULT',
    });
    expect(await client().getNumberValue('max-items', 0, free)).toBe(10);
    expect(await client().getObjectValue('theme', {}, free)).toEqual({ mode: 'dark' });
    expect(await client().getBooleanDetails('kill-switch', true, free)).toMatchObject({
      value: false,
      variant: 'false',
      reason: 'DISABLED',
    });
  });

  it('returns the default with FLAG_NOT_FOUND and TYPE_MISMATCH', async () => {
    expect(await client().getBooleanDetails('nope', true, free)).toMatchObject({
      value: true,
      reason: 'ERROR',
      errorCode: ErrorCode.FLAG_NOT_FOUND,
    });
    expect(await client().getNumberDetails('banner-text', 3, free)).toMatchObject({
      value: 3,
      reason: 'ERROR',
      errorCode: ErrorCode.TYPE_MISMATCH,
    });
    expect(await client().getObjectDetails('max-items', { a: 1 }, free)).toMatchObject({
      value: { a: 1 },
      errorCode: ErrorCode.TYPE_MISMATCH,
    });
  });

  it("returns the flag's metadata in flagMetadata, with the evaluation's keys", async () => {
    const metadata = { team: 'growth', since: 3, audited: true };
    const changed = new Promise<void>((resolve) =>
      client().addHandler(ProviderEvents.ConfigurationChanged, () => resolve()),
    );
    await call(vexil, 'PATCH', `${base}/flags/new-checkout`, { token, body: { metadata } });
    await changed;
    expect((await client().getBooleanDetails('new-checkout', false, pro)).flagMetadata).toEqual({
      ...metadata,
      ruleId: expect.any(String),
    });
    expect((await client().getStringDetails('banner-text', 'x', free)).flagMetadata).toEqual({});
  });

  it('emits PROVIDER_CONFIGURATION_CHANGED when a flag changes', async () => {
    const changed = new Promise<void>((resolve) =>
      client().addHandler(ProviderEvents.ConfigurationChanged, () => resolve()),
    );
    await call(vexil, 'POST', `${flagEnv('kill-switch')}/toggle`, {
      token,
      body: { enabled: true },
    });
    await changed;
    expect(await client().getBooleanValue('kill-switch', false, free)).toBe(true);
  });
});

describe('@vexil/openfeature-provider without a reachable Vexil', () => {
  it('PROVIDER_NOT_READY before the configuration; initialize gives up after initTimeoutMs', async () => {
    const vexil = await createTestVexil('sqlite');
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    await vexil.close();
    const provider = new VexilProvider({ baseUrl, sdkKey: 'vxl_srv_unknown', initTimeoutMs: 50 });
    expect(await provider.resolveBooleanEvaluation('f', true, {})).toMatchObject({
      value: true,
      reason: 'ERROR',
      errorCode: ErrorCode.PROVIDER_NOT_READY,
    });
    await expect(provider.initialize()).rejects.toThrow(/not received/);
    await provider.onClose();
    expect(provider.client.status).toBe('closed');
  });
});
