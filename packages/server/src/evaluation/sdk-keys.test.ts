import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../auth/secrets.js';
import {
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { databaseSdkKeys, SdkKeyResolver } from './sdk-keys.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe.each(testDialects())('SDK key resolver on %s', (dialect) => {
  let vexil: TestVexil;
  let key: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    key = (await createProjectWithFlag(vexil, await createOrg(vexil))).sdkKey;
  });
  afterAll(() => vexil.close());

  /** Revokes the key in the database only, as another node would. */
  const revokeElsewhere = (revoked: string) =>
    vexil.services.db
      .updateTable('sdk_keys')
      .set({ revoked_at: new Date(NOW).toISOString() })
      .where('key_hash', '=', hashSecret(revoked))
      .execute();

  it('keeps a grant for its time to live, and drops it when told the hash was revoked', async () => {
    const resolver = new SdkKeyResolver(databaseSdkKeys(vexil.services.db));
    const grant = await resolver.resolve(key, NOW);
    expect(grant).toMatchObject({ type: 'ServerSide', environmentId: expect.any(String) });
    await revokeElsewhere(key);
    // Cached: the revocation on "another node" is not seen before the time to live ends...
    expect(await resolver.resolve(key, NOW + 1_000)).toEqual(grant);
    // ...unless its notice arrives, which names the key only by hash.
    resolver.forget(hashSecret(key));
    expect(await resolver.resolve(key, NOW + 1_000)).toBeNull();
  });

  it('cached() answers without waiting only what resolve() has cached, for its time to live', async () => {
    const key = (await createProjectWithFlag(vexil, await createOrg(vexil, 'initech'))).sdkKey;
    const resolver = new SdkKeyResolver(databaseSdkKeys(vexil.services.db));
    const unknown = 'vxl_srv_not-a-key';
    expect(resolver.cached(key, NOW)).toBeUndefined();
    expect(resolver.cached(unknown, NOW)).toBeUndefined();
    const grant = await resolver.resolve(key, NOW);
    await resolver.resolve(unknown, NOW);
    expect(grant).toMatchObject({ type: 'ServerSide' });
    expect(resolver.cached(key, NOW + 9_999)).toEqual(grant);
    expect(resolver.cached(unknown, NOW + 9_999)).toBeNull();
    expect(resolver.cached(key, NOW + 10_000)).toBeUndefined();
    resolver.forget(hashSecret(key));
    expect(resolver.cached(key, NOW)).toBeUndefined();
  });

  it('looks keys up again after the time to live and after forgetAll', async () => {
    const fresh = (await createProjectWithFlag(vexil, await createOrg(vexil, 'globex'))).sdkKey;
    const resolver = new SdkKeyResolver(databaseSdkKeys(vexil.services.db));
    expect(await resolver.resolve(fresh, NOW)).not.toBeNull();
    await revokeElsewhere(fresh);
    expect(await resolver.resolve(fresh, NOW + 10_001)).toBeNull();

    const other = new SdkKeyResolver(databaseSdkKeys(vexil.services.db));
    const unknown = 'vxl_srv_unknown';
    expect(await other.resolve(unknown, NOW)).toBeNull();
    other.forgetAll();
    expect(await other.resolve(unknown, NOW)).toBeNull();
  });

  it('resolves strings far longer than a key without keeping them, and forgets them by hash', async () => {
    const resolver = new SdkKeyResolver(databaseSdkKeys(vexil.services.db));
    const long = `vxl_srv_${'x'.repeat(10_000)}`;
    expect(await resolver.resolve(long, NOW)).toBeNull();
    expect(await resolver.resolve(long, NOW + 1)).toBeNull();
    resolver.forget(hashSecret(long));
    expect(await resolver.resolve(long, NOW + 2)).toBeNull();
  });
});
