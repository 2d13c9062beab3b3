import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

const tokenOf = (acceptUrl: string) => new URL(acceptUrl).hash.replace('#token=', '');

describe.each(testDialects())('reading an invitation by its link on %s', (dialect) => {
  const clock = new TestClock();
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;

  beforeAll(async () => {
    // A small quota, so that the unauthenticated reads run out of it within the test.
    vexil = await createTestVexil(dialect, { clock, env: { VEXIL_RATE_LIMIT: '12' } });
    org = await createOrg(vexil);
    await vexil.services.db
      .updateTable('organizations')
      .set({ name: 'Acme Shop' })
      .where('id', '=', org.orgId)
      .execute();
  });
  afterAll(() => vexil.close());

  const invite = async (email: string) => {
    const created = await call(vexil, 'POST', '/api/v1/orgs/acme/invitations', {
      token: org.token,
      body: { email, role: 'Member' },
    });
    expect(created.status, created.text).toBe(201);
    return { id: created.body.id as string, token: tokenOf(created.body.acceptUrl as string) };
  };
  const read = (token: string) => call(vexil, 'GET', `/api/v1/invitations/${token}`);

  it('answers only the organization name, the role and the address, without a credential', async () => {
    const { token } = await invite('Newcomer@Acme.test');
    const response = await read(token);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      organization: { name: 'Acme Shop' },
      role: 'Member',
      email: 'newcomer@acme.test',
    });
  });

  it('answers 404 in the error envelope for an unknown, accepted, revoked or expired link', async () => {
    const accepted = await invite('accepted@acme.test');
    const took = await call(vexil, 'POST', '/api/v1/invitations/accept', {
      body: { token: accepted.token, name: 'Ada', password: 'a long enough passphrase' },
    });
    expect(took.status, took.text).toBe(200);
    const revoked = await invite('revoked@acme.test');
    const revoking = await call(vexil, 'DELETE', `/api/v1/orgs/acme/invitations/${revoked.id}`, {
      token: org.token,
    });
    expect(revoking.status).toBe(204);
    const expiring = await invite('late@acme.test');
    clock.advance(vexil.config.signIn.invitationLifetimeMs + 1000);

    for (const token of ['vxl_inv_unknown', accepted.token, revoked.token, expiring.token]) {
      const response = await read(token);
      expect(response.status, `${token}: ${response.text}`).toBe(404);
      expect(response.body).toMatchObject({ error: 'not_found' });
      expect(response.body.message).toMatch(/invitation link is not valid/);
      expect(response.text).not.toContain('@acme.test');
    }
  });

  it('is counted per client address like every unauthenticated request', async () => {
    let last = await read('vxl_inv_guess');
    for (let attempt = 0; attempt < 12 && last.status !== 429; attempt++)
      last = await read('vxl_inv_guess');
    expect(last.status).toBe(429);
    expect(last.body.error).toBe('rate_limited');
  });
});
