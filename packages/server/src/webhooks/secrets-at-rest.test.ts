import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil } from '../node/full-node.js';
import { clientSecretBinding } from '../auth/oidc.js';
import { ConfigError } from '../config.js';
import { openDatabase } from '../db/database.js';
import {
  call,
  createOrg,
  createTestVexil,
  TEST_SECRETS_KEY,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { SigningSecretVault } from './secrets-at-rest.js';

const OTHER_KEY = 'another-secrets-key-0123456789abcdefghijkl';

describe.each(testDialects())('webhook signing secrets at rest on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let subscriptionId: string;
  let secret: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    const created = await call(vexil, 'POST', '/api/v1/orgs/acme/webhooks', {
      token: org.token,
      body: { name: 'Receiver', url: 'https://93.184.215.14/hooks', provider: 'GenericHttp' },
    });
    expect(created.status).toBe(201);
    subscriptionId = created.body.id;
    secret = created.body.secret;
  });
  afterAll(() => vexil.close());

  const storedSecrets = () =>
    vexil.services.db
      .selectFrom('webhook_secrets')
      .select(['id', 'secret'])
      .where('subscription_id', '=', subscriptionId)
      .orderBy('created_at')
      .execute();

  it('stores created and added secrets sealed; they open to what the caller was shown', async () => {
    const added = await call(
      vexil,
      'POST',
      `/api/v1/orgs/acme/webhooks/${subscriptionId}/secrets`,
      {
        token: org.token,
      },
    );
    const rows = await storedSecrets();
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.secret).not.toContain('whsec_');
      expect(row.secret).not.toContain(secret.slice(6));
    }
    const vault = vexil.services.signingSecrets;
    expect(vault.open(rows[0]!.id, rows[0]!.secret)).toBe(secret);
    expect(vault.open(rows[1]!.id, rows[1]!.secret)).toBe(added.body.secret);
    // Bound to its row: a sealed secret moved to another row does not open there.
    expect(() => vault.open(rows[1]!.id, rows[0]!.secret)).toThrow();
  });

  it('a secret stored plain before sealing is sealed at the next start, once', async () => {
    const legacy = { id: 'legacy-secret', secret: 'whsec_bGVnYWN5LXNlY3JldC1zdG9yZWQtcGxhaW4=' };
    await vexil.services.db
      .insertInto('webhook_secrets')
      .values({
        ...legacy,
        subscription_id: subscriptionId,
        created_at: '2026-01-01T00:00:00.000Z',
        retired_at: null,
      })
      .execute();
    const vault = vexil.services.signingSecrets;
    expect(await vault.sealStoredSecrets(vexil.services.db)).toBe(1);
    const row = (await storedSecrets()).find(({ id }) => id === legacy.id)!;
    expect(row.secret).not.toContain('whsec_');
    expect(vault.open(legacy.id, row.secret)).toBe(legacy.secret);
    expect(await vault.sealStoredSecrets(vexil.services.db)).toBe(0);
  });

  it('a rotation seals every secret again with the new key, given the old one as previous', async () => {
    const before = await storedSecrets();
    const plainSecrets = before.map((row) =>
      vexil.services.signingSecrets.open(row.id, row.secret),
    );
    const rotated = new SigningSecretVault(OTHER_KEY, TEST_SECRETS_KEY);
    expect(await rotated.sealStoredSecrets(vexil.services.db)).toBe(before.length);
    const after = await storedSecrets();
    expect(after.map((row) => rotated.open(row.id, row.secret))).toEqual(plainSecrets);
    for (const row of after)
      expect(() => vexil.services.signingSecrets.open(row.id, row.secret)).toThrow();
    // Done once: the next start with both keys rewrites nothing.
    expect(await rotated.sealStoredSecrets(vexil.services.db)).toBe(0);
    // A secret a node still on the old key adds meanwhile opens on a node already rotated.
    const late = vexil.services.signingSecrets.seal('late-secret', 'whsec_bGF0ZQ==');
    expect(rotated.open('late-secret', late)).toBe('whsec_bGF0ZQ==');
    expect(() => new SigningSecretVault(OTHER_KEY).open('late-secret', late)).toThrow();
    // Back, so that the tests below find the secrets under the service's key.
    const back = new SigningSecretVault(TEST_SECRETS_KEY, OTHER_KEY);
    expect(await back.sealStoredSecrets(vexil.services.db)).toBe(before.length);
  });

  it('another key does not open the stored secrets: start-up is refused', async () => {
    const before = await storedSecrets();
    await expect(
      new SigningSecretVault(OTHER_KEY).sealStoredSecrets(vexil.services.db),
    ).rejects.toThrow(ConfigError);
    await expect(
      new SigningSecretVault(
        OTHER_KEY,
        'a-wrong-previous-key-0123456789abcdefgh',
      ).sealStoredSecrets(vexil.services.db),
    ).rejects.toThrow(/VEXIL_SECRETS_KEY_PREVIOUS/);
    // Refused before anything was written.
    expect(await storedSecrets()).toEqual(before);
    if (dialect !== 'postgres') return; // an in-memory SQLite database cannot be opened twice
    const database = openDatabase(vexil.databaseUrl);
    await expect(
      createVexil({ ...vexil.config, secretsKey: OTHER_KEY }, { database, logger: false }),
    ).rejects.toThrow(/does not open the stored webhook signing secrets/);
    await database.close();
    // With the old key as the previous one, the same start rotates the secrets and serves.
    const rotating = await createVexil(
      { ...vexil.config, secretsKey: OTHER_KEY, previousSecretsKey: TEST_SECRETS_KEY },
      { database: openDatabase(vexil.databaseUrl), logger: false, startWorkers: false },
    );
    const rows = await storedSecrets();
    expect(rows.map((row) => rotating.services.signingSecrets.open(row.id, row.secret))).toContain(
      secret,
    );
    await rotating.close();
  });
});

describe('SSO client secrets at rest', () => {
  it('are sealed bound to their connection and rotate with the webhook secrets', async () => {
    const vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    const id = '0190f5a0-0000-7000-8000-00000000c0de';
    const binding = clientSecretBinding(id);
    const now = vexil.services.clock.now().toISOString();
    await vexil.services.db
      .insertInto('sso_connections')
      .values({
        id,
        organization_id: org.orgId,
        name: 'IdP',
        issuer: 'https://idp.acme.test',
        client_id: 'vexil',
        client_secret: vexil.services.signingSecrets.seal(binding, 'client-secret'),
        allowed_domains: '[]',
        default_role: 'Viewer',
        auto_create_users: 0,
        enabled: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const stored = () =>
      vexil.services.db
        .selectFrom('sso_connections')
        .select('client_secret')
        .executeTakeFirstOrThrow()
        .then((row) => row.client_secret);
    expect(await stored()).not.toContain('client-secret');
    await expect(
      new SigningSecretVault(OTHER_KEY).sealStoredSecrets(vexil.services.db),
    ).rejects.toThrow(ConfigError);
    const rotated = new SigningSecretVault(OTHER_KEY, TEST_SECRETS_KEY);
    expect(await rotated.sealStoredSecrets(vexil.services.db)).toBe(1);
    expect(new SigningSecretVault(OTHER_KEY).open(binding, await stored())).toBe('client-secret');
    await vexil.close();
  });
});
