import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSecretBinding } from '../auth/oidc.js';
import {
  call,
  createOrg,
  createTestVexil,
  testConfig,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

const ID = '0190f5a0-0000-7000-8000-00000000beef';

/**
 * What single sign-on does before any identity provider answers: issuers go through the same
 * connect-time SSRF guard as webhook targets (design record 032), and starts are rate limited
 * per client IP. The round trips with a real provider are in `oidc.test.ts` and
 * `sso-binding.test.ts`.
 */
describe.each(testDialects())('SSO issuers and starts on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  // A listener on loopback standing in for the server's internal network: it counts who connects.
  let internal: Server;
  let connections = 0;
  const port = () => (internal.address() as AddressInfo).port;

  beforeAll(async () => {
    internal = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    const defaults = testConfig().signIn;
    // VEXIL_SIGN_IN_RATE_LIMIT=1: ten SSO starts per client IP per minute. Private issuers are
    // not allowed (the default).
    vexil = await createTestVexil(dialect, {
      config: { signIn: { ...defaults, attempts: { ...defaults.attempts, points: 1 } } },
    });
    org = await createOrg(vexil);
  });
  afterAll(async () => {
    await vexil.close();
    await new Promise((resolve) => internal.close(resolve));
  });

  it('a loopback issuer is refused before any connection, by address and by name', async () => {
    for (const host of ['127.0.0.1', 'localhost']) {
      const response = await call(vexil, 'POST', '/api/v1/orgs/acme/sso-connections', {
        token: org.token,
        body: {
          name: 'Probe',
          issuer: `https://${host}:${port()}/`,
          clientId: 'c',
          clientSecret: 's',
        },
      });
      expect(response.status, host).toBe(400);
      expect(response.body.fields.issuer[0], host).toMatch(
        /(not a public|non-public) address.*VEXIL_SSO_ALLOW_PRIVATE_ISSUERS=true/,
      );
    }
    expect(connections).toBe(0);
  });

  it('a sign-in through a connection whose issuer is on loopback never connects either', async () => {
    const now = vexil.services.clock.now().toISOString();
    await vexil.services.db
      .insertInto('sso_connections')
      .values({
        id: ID,
        organization_id: org.orgId,
        name: 'Saved when private issuers were allowed',
        issuer: `https://127.0.0.1:${port()}`,
        client_id: 'vexil',
        client_secret: vexil.services.signingSecrets.seal(clientSecretBinding(ID), 'secret'),
        allowed_domains: '[]',
        default_role: 'Viewer',
        auto_create_users: 0,
        enabled: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await vexil.services.db
      .updateTable('organizations')
      .set({ sso_connection_id: ID })
      .where('id', '=', org.orgId)
      .execute();
    const start = await call(vexil, 'GET', '/auth/sso/acme');
    expect(start.status).toBe(502);
    expect(start.body.message).toMatch(/not a public address/);
    expect(connections).toBe(0);
  });

  it('sign-in starts are limited per client IP, whatever they answer', async () => {
    const answers: number[] = [];
    for (let i = 0; i < 12; i += 1)
      answers.push((await call(vexil, 'GET', '/auth/sso/no-such-org')).status);
    // The earlier tests' start counted too.
    expect(answers.slice(0, 9)).toEqual(Array<number>(9).fill(404));
    expect(answers.slice(9)).toEqual([429, 429, 429]);
    const limited = await call(vexil, 'GET', '/auth/sso/no-such-org');
    expect(limited.body).toMatchObject({ error: 'rate_limited', retry_after: expect.any(Number) });
  });
});
