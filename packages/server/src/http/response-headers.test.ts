import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestResponse,
  type TestVexil,
  testWebhookSettings,
} from '../test-support/harness.js';

/**
 * Issue 31, finding 6: every API answer carries `X-Content-Type-Options: nosniff`; management
 * and sign-in answers, among them those that show a secret once, carry `Cache-Control: no-store`.
 */
describe.each(testDialects())('response headers on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let sdkKey: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { config: { webhooks: testWebhookSettings() } });
    org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
  });
  afterAll(() => vexil.close());

  it('answers that show a secret once are not stored by any cache', async () => {
    const base = '/api/v1/orgs/acme';
    const shownOnce: [string, string, unknown][] = [
      ['POST', '/api/v1/me/tokens', { name: 'cli' }],
      ['POST', `${base}/service-tokens`, { name: 'ci', role: 'Viewer' }],
      [
        'POST',
        `${base}/projects/web/environments/production/sdk-keys`,
        { name: 'backend', type: 'ServerSide' },
      ],
      ['POST', `${base}/invitations`, { email: 'ada@acme.test', role: 'Member' }],
      ['POST', `${base}/webhooks`, { name: 'hook', url: 'http://127.0.0.1:9/vexil' }],
    ];
    for (const [method, path, body] of shownOnce) {
      const response = await call(vexil, method as 'POST', path, { token: org.token, body });
      expect(response.status, `${path}: ${response.text}`).toBe(201);
      expect(response.headers['cache-control'], path).toBe('no-store');
      expect(response.headers['x-content-type-options'], path).toBe('nosniff');
    }
  });

  it('every API answers with nosniff, success or error, Fastify or the lean lane', async () => {
    const sdk = { authorization: sdkKey };
    const context = { flagKey: 'new-checkout', context: { userId: 'u-1' } };
    const answers: [string, TestResponse][] = [
      ['management', await call(vexil, 'GET', '/api/v1/me', { token: org.token })],
      ['management error', await call(vexil, 'GET', '/api/v1/orgs/nope', { token: org.token })],
      ['sign-in error', await call(vexil, 'POST', '/auth/password', { body: {} })],
      [
        'lean evaluation',
        await call(vexil, 'POST', '/v1/sdk/evaluate', { headers: sdk, body: context }),
      ],
      ['lean problem', await call(vexil, 'POST', '/v1/sdk/evaluate', { headers: sdk, body: {} })],
      ['configuration', await call(vexil, 'GET', '/v1/sdk/flags', { headers: sdk })],
      [
        'ofrep',
        await call(vexil, 'POST', '/ofrep/v1/evaluate/flags/new-checkout', {
          headers: { authorization: `Bearer ${sdkKey}` },
          body: { context: { targetingKey: 'u-1' } },
        }),
      ],
      ['unknown route', await call(vexil, 'GET', '/nowhere')],
    ];
    for (const [name, response] of answers)
      expect(response.headers['x-content-type-options'], name).toBe('nosniff');
    expect(answers[0]![1].headers['cache-control']).toBe('no-store');
    expect(answers[2]![1].headers['cache-control']).toBe('no-store');
  });
});
