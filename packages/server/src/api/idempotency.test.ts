import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
  testWebhookSettings,
} from '../test-support/harness.js';

describe.each(testDialects())('Idempotency-Key on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const clock = new TestClock();
  const projects = '/api/v1/orgs/acme/projects';
  const sdkKeys = `${projects}/web/environments/production/sdk-keys`;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    const web = await call(vexil, 'POST', projects, {
      token: org.token,
      body: { key: 'web', name: 'Web' },
    });
    expect(web.status).toBe(201);
  });
  afterAll(() => vexil.close());

  const post = (url: string, key: string, body: unknown, token = org.token) =>
    call(vexil, 'POST', url, { token, body, headers: { 'idempotency-key': key } });

  async function sdkKeyCount(name: string): Promise<number> {
    const list = await call(vexil, 'GET', `${sdkKeys}?limit=200`, { token: org.token });
    return (list.body.items as { name: string }[]).filter((item) => item.name === name).length;
  }

  it('a retry replays the stored response without creating a second project', async () => {
    const body = { key: 'checkout', name: 'Checkout' };
    const first = await post(projects, 'create-checkout', body);
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const retry = await post(projects, 'create-checkout', body);
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(first.body);
    const list = await call(vexil, 'GET', projects, { token: org.token });
    expect(list.body.items.filter((p: { key: string }) => p.key === 'checkout')).toHaveLength(1);
  });

  it('an SDK key create replays the same plaintext key', async () => {
    const body = { name: 'replayed', type: 'ServerSide' };
    const first = await post(sdkKeys, 'sdk-key-1', body);
    const retry = await post(sdkKeys, 'sdk-key-1', body);
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body.key).toBe(first.body.key);
    expect(retry.body).toEqual(first.body);
    expect(await sdkKeyCount('replayed')).toBe(1);
  });

  it('the stored response is sealed: the database alone does not yield the created key', async () => {
    const created = await post(sdkKeys, 'sdk-key-sealed', { name: 'sealed', type: 'ServerSide' });
    expect(created.status).toBe(201);
    const row = await vexil.services.db
      .selectFrom('idempotency_keys')
      .select('response_body')
      .where('key', '=', 'sdk-key-sealed')
      .executeTakeFirstOrThrow();
    expect(row.response_body).toMatch(/^v1\./);
    expect(row.response_body).not.toContain(created.body.key);
    expect(row.response_body).not.toContain('vxl_srv_');
  });

  it('a sealed response moved to another row does not replay there', async () => {
    const body = { name: 'moved', type: 'ServerSide' };
    await post(sdkKeys, 'sdk-key-source', body);
    await post(sdkKeys, 'sdk-key-target', body);
    const source = await vexil.services.db
      .selectFrom('idempotency_keys')
      .select('response_body')
      .where('key', '=', 'sdk-key-source')
      .executeTakeFirstOrThrow();
    await vexil.services.db
      .updateTable('idempotency_keys')
      .set({ response_body: source.response_body })
      .where('key', '=', 'sdk-key-target')
      .execute();
    const retry = await post(sdkKeys, 'sdk-key-target', body);
    expect(retry.status).toBe(500);
    expect(await sdkKeyCount('moved')).toBe(2);
  });

  it('the same key with a different body is 422 idempotency_key_reused', async () => {
    await post(sdkKeys, 'sdk-key-2', { name: 'a', type: 'ServerSide' });
    const reused = await post(sdkKeys, 'sdk-key-2', { name: 'b', type: 'ServerSide' });
    expect(reused.status).toBe(422);
    expect(reused.body.error).toBe('idempotency_key_reused');
    expect(await sdkKeyCount('b')).toBe(0);
  });

  it('a failed request releases the key so a corrected retry runs', async () => {
    const failed = await post(projects, 'create-web-again', { key: 'web', name: 'Duplicate' });
    expect(failed.status).toBe(409);
    const corrected = await post(projects, 'create-web-again', { key: 'web-2', name: 'Web 2' });
    expect(corrected.status).toBe(201);
    expect(corrected.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a key whose first request is still running is 409 idempotency_key_in_use', async () => {
    const body = { name: 'running', type: 'ClientSide' };
    await post(sdkKeys, 'sdk-key-running', body);
    // Put the row back into its "first request still running" state.
    await vexil.services.db
      .updateTable('idempotency_keys')
      .set({ response_status: null, response_body: null })
      .where('key', '=', 'sdk-key-running')
      .execute();
    const second = await post(sdkKeys, 'sdk-key-running', body);
    expect(second.status).toBe(409);
    expect(second.body.error).toBe('idempotency_key_in_use');
    // A claim never completed (the process died) is abandoned after a minute and may run again.
    clock.advance(2 * 60 * 1000);
    const later = await post(sdkKeys, 'sdk-key-running', body);
    expect(later.status).toBe(201);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
  });

  it('after 24 hours the key is forgotten and the request runs again', async () => {
    const body = { name: 'daily', type: 'ServerSide' };
    const first = await post(sdkKeys, 'sdk-key-daily', body);
    clock.advance(23 * 60 * 60 * 1000);
    expect((await post(sdkKeys, 'sdk-key-daily', body)).body.key).toBe(first.body.key);
    clock.advance(2 * 60 * 60 * 1000);
    const again = await post(sdkKeys, 'sdk-key-daily', body);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(again.body.key).not.toBe(first.body.key);
  });

  it('keys are per caller: another token with the same key runs its own request', async () => {
    const admin = await createMember(vexil, org.orgId, 'Admin');
    const body = { name: 'per-caller', type: 'ServerSide' };
    const mine = await post(sdkKeys, 'shared-key', body);
    const theirs = await post(sdkKeys, 'shared-key', body, admin.token);
    expect(theirs.status).toBe(201);
    expect(theirs.body.key).not.toBe(mine.body.key);
  });

  it('a key longer than 255 characters is 400 validation_failed', async () => {
    const response = await post(sdkKeys, 'k'.repeat(256), { name: 'long', type: 'ServerSide' });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('validation_failed');
    expect(response.body.fields).toHaveProperty('Idempotency-Key');
    expect((await post(sdkKeys, 'k'.repeat(255), { name: 'ok', type: 'ServerSide' })).status).toBe(
      201,
    );
  });
});

describe.each(testDialects())(
  'Idempotency-Key on the webhook and secret creates on %s',
  (dialect) => {
    let vexil: TestVexil;
    let org: Awaited<ReturnType<typeof createOrg>>;
    const webhooks = '/api/v1/orgs/acme/webhooks';

    beforeAll(async () => {
      vexil = await createTestVexil(dialect, {
        config: {
          webhooks: testWebhookSettings(),
        },
      });
      org = await createOrg(vexil);
    });
    afterAll(() => vexil.close());

    const post = (url: string, key: string, body?: unknown) =>
      call(vexil, 'POST', url, {
        token: org.token,
        ...(body !== undefined ? { body } : {}),
        headers: { 'idempotency-key': key },
      });

    it('webhook create: the same key and body replay {id, secret}; another body is refused', async () => {
      const body = {
        name: 'receiver',
        url: 'http://127.0.0.1:9/hook',
        provider: 'GenericHttp',
        eventTypes: [],
        projectIds: [],
        environmentIds: [],
      };
      const first = await post(webhooks, 'hook-1', body);
      expect(first.status).toBe(201);
      const retry = await post(webhooks, 'hook-1', body);
      expect(retry.status).toBe(201);
      expect(retry.body).toEqual(first.body);
      const other = await post(webhooks, 'hook-1', { ...body, name: 'another' });
      expect(other.status).toBe(422);
      expect(other.body.error).toBe('idempotency_key_reused');
      const list = await call(vexil, 'GET', webhooks, { token: org.token });
      expect(list.body.items).toHaveLength(1);

      const secrets = `${webhooks}/${first.body.id}/secrets`;
      const secret = await post(secrets, 'secret-1');
      expect(secret.status).toBe(201);
      const secretRetry = await post(secrets, 'secret-1');
      expect(secretRetry.body).toEqual(secret.body);
      const stored = await vexil.services.db
        .selectFrom('idempotency_keys')
        .select('response_body')
        .execute();
      expect(stored).toHaveLength(2);
      for (const { response_body } of stored) expect(response_body).not.toContain('whsec_');
      const detail = await call(vexil, 'GET', `${webhooks}/${first.body.id}`, { token: org.token });
      expect(detail.body.secrets).toHaveLength(2);
    });
  },
);
