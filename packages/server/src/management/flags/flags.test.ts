import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

describe.each(testDialects())('flags on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const base = '/api/v1/orgs/acme/projects/web';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  it('walkthrough: create, toggle, evaluate', async () => {
    const key = await call(vexil, 'POST', `${base}/environments/production/sdk-keys`, {
      token: org.token,
      body: { name: 'k', type: 'ServerSide' },
    });
    const evaluate = () =>
      call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: key.body.key,
        body: { flagKey: 'new-checkout', context: { userId: 'u1' } },
      });
    expect((await evaluate()).body).toEqual({
      key: 'new-checkout',
      variation: 'false',
      value: false,
      reason: 'DISABLED',
    });
    const toggle = await call(
      vexil,
      'POST',
      `${base}/flags/new-checkout/environments/production/toggle`,
      { token: org.token, body: { enabled: true } },
    );
    expect(toggle.status).toBe(204);
    expect((await evaluate()).body).toEqual({
      key: 'new-checkout',
      variation: 'true',
      value: true,
      reason: 'DEFAULT',
    });
  });

  it('toggle: a null or missing enabled is validation_failed, never false', async () => {
    for (const body of [{ enabled: null }, {}, { enabled: 'true' }]) {
      const response = await call(
        vexil,
        'POST',
        `${base}/flags/new-checkout/environments/production/toggle`,
        { token: org.token, body },
      );
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('validation_failed');
      expect(response.body.fields).toHaveProperty('enabled');
    }
  });

  it('a duplicate flag key is 409 conflict naming the field', async () => {
    const response = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key: 'new-checkout' },
    });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ error: 'conflict', fields: { key: ['already exists'] } });
  });

  it('an unknown flag is 404 with did_you_mean', async () => {
    const response = await call(vexil, 'GET', `${base}/flags/new-chekout`, { token: org.token });
    expect(response.status).toBe(404);
    expect(response.body.did_you_mean).toEqual(['new-checkout']);
    expect(response.body.docs_url).toMatch(/\/docs\/errors#not_found$/);
  });
});
