import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

const base = '/api/v1/orgs/acme/projects/web';

/** Design record 052: one environment version, one document, before and after a rebuild. */
describe.each(testDialects())('flag versions per environment on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  const keys: Record<string, string> = {};

  const manage = (method: 'POST' | 'PATCH', path: string, body?: unknown) =>
    callOk(vexil, method, `${base}${path}`, token, body);
  /** The environment's configuration document as served: its bytes, ETag and parsed form. */
  const documentOf = async (environment: string) => {
    const response = await vexil.app.inject({
      method: 'GET',
      url: '/v1/sdk/flags',
      headers: { authorization: keys[environment] ?? '' },
    });
    expect(response.statusCode).toBe(200);
    const parsed = response.json<{ version: number; flags: { key: string; version: number }[] }>();
    return {
      text: response.body,
      etag: response.headers.etag,
      version: parsed.version,
      flagVersion: parsed.flags.find((flag) => flag.key === 'new-checkout')?.version,
    };
  };

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    keys.production = (await createProjectWithFlag(vexil, org)).sdkKey;
    keys.development = (
      await manage('POST', '/environments/development/sdk-keys', {
        name: 'dev',
        type: 'ServerSide',
      })
    ).key;
  });
  afterAll(() => vexil.close());

  it('a toggle in one environment leaves every other environment’s document and ETag unchanged, also once rebuilt', async () => {
    const development = await documentOf('development');
    const production = await documentOf('production');

    await manage('POST', '/flags/new-checkout/environments/production/toggle', { enabled: true });
    const toggled = await documentOf('production');
    expect(toggled.version).toBeGreaterThan(production.version);
    expect(toggled.flagVersion).toBeGreaterThan(production.flagVersion ?? Infinity);
    expect(await documentOf('development')).toEqual(development);

    // What a node that starts now (or a relay that copies it now) serves: read again from the database.
    vexil.snapshots.invalidateAll();
    expect(await documentOf('development')).toEqual(development);
    expect(await documentOf('production')).toEqual(toggled);
  });

  it('a change to the flag itself moves its version in every environment, each with its environment’s version', async () => {
    const before = {
      development: await documentOf('development'),
      production: await documentOf('production'),
    };
    const changed = await call(vexil, 'PATCH', `${base}/flags/new-checkout`, {
      token,
      body: { metadata: { owner: 'checkout-team' } },
    });
    expect(changed.status, changed.text).toBe(200);
    vexil.snapshots.invalidateAll();
    for (const environment of ['development', 'production'] as const) {
      const after = await documentOf(environment);
      expect(after.version).toBeGreaterThan(before[environment].version);
      expect(after.flagVersion).toBeGreaterThan(before[environment].flagVersion ?? Infinity);
    }
  });
});
