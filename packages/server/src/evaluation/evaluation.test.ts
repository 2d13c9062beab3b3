import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  TestClock,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';

const base = '/api/v1/orgs/acme/projects/web';

/** Every evaluation API error is a problem body, never the management envelope. */
function expectProblem(response: TestResponse, status: number, instance: string): void {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(response.body).toMatchObject({ type: expect.any(String), title: expect.any(String) });
  expect(response.body.status).toBe(status);
  expect(response.body.detail).toEqual(expect.any(String));
  expect(response.body.instance).toBe(instance);
  expect(response.body).not.toHaveProperty('error');
  expect(response.body).not.toHaveProperty('docs_url');
}

describe.each(testDialects())('evaluation API on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let serverKey: string;
  let clientKey: string;
  /** Variation ids by flag key, then variation key. */
  const variations = new Map<string, Map<string, string>>();

  const manage = async (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
  ) => {
    const response = await call(vexil, method, `${base}${path}`, { token, body });
    if (response.status >= 300)
      throw new Error(`${method} ${path} → ${response.status}: ${response.text}`);
    return response.body;
  };
  const createFlag = async (key: string, extra: Record<string, unknown> = {}) => {
    const flag = await manage('POST', '/flags', { key, ...extra });
    variations.set(
      key,
      new Map(flag.variations.map((v: { key: string; id: string }) => [v.key, v.id])),
    );
    return flag;
  };
  const variationId = (flag: string, variation: string) => variations.get(flag)!.get(variation)!;
  const enable = (flag: string, env = 'production') =>
    manage('POST', `/flags/${flag}/environments/${env}/toggle`, { enabled: true });
  const evaluate = (flagKey: string, userId: string, attributes: Record<string, unknown> = {}) =>
    call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: serverKey,
      body: { flagKey, context: { userId, attributes } },
    });
  const sdkFlags = (headers: Record<string, string> = {}) =>
    call(vexil, 'GET', '/v1/sdk/flags', { token: serverKey, headers });

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock: new TestClock() });
    const org = await createOrg(vexil);
    token = org.token;
    serverKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    const flag = await manage('GET', '/flags/new-checkout');
    variations.set(
      'new-checkout',
      new Map(flag.variations.map((v: { key: string; id: string }) => [v.key, v.id])),
    );
    clientKey = (
      await manage('POST', '/environments/production/sdk-keys', {
        name: 'web',
        type: 'ClientSide',
      })
    ).key;

    // new-checkout: on, serving `true` except to acme staff (a rule made through the API).
    await enable('new-checkout');
    await manage('POST', '/flags/new-checkout/environments/production/rules', {
      variationId: variationId('new-checkout', 'false'),
      conditionGroups: [
        {
          operator: 'And',
          conditions: [{ attribute: 'email', operator: 'endsWith', values: ['@acme.test'] }],
        },
      ],
    });
    // in-nl: a rule that targets a segment.
    const segment = await manage('POST', '/segments', {
      key: 'dutch',
      conditions: [{ attribute: 'country', operator: 'Equals', values: ['NL'] }],
    });
    await createFlag('in-nl');
    await enable('in-nl');
    await manage('POST', '/flags/in-nl/environments/production/rules', {
      variationId: variationId('in-nl', 'false'),
      userSegmentId: segment.id,
    });
    // half-rule: a rule that serves half of everyone; the others fall through.
    await createFlag('half-rule');
    await enable('half-rule');
    await manage('POST', '/flags/half-rule/environments/production/rules', {
      variationId: variationId('half-rule', 'false'),
      rolloutPercentage: 50,
    });
    // split: a percentage-rollout fallthrough.
    await createFlag('split');
    await enable('split');
    await manage('PATCH', '/flags/split/environments/production', {
      strategy: 'PercentageRollout',
      rollout: [
        { variationId: variationId('split', 'true'), weight: 30000 },
        { variationId: variationId('split', 'false'), weight: 70000 },
      ],
    });
    // child: requires new-checkout to serve `true`.
    await createFlag('child');
    await enable('child');
    await manage('PATCH', '/flags/child/environments/production', {
      prerequisites: [{ prerequisiteFlagKey: 'new-checkout', expectedVariationKey: 'true' }],
    });
    // dormant: never enabled.
    await createFlag('dormant');
    // banner: the only flag client SDKs may see.
    await createFlag('banner', {
      type: 'String',
      clientSideVisible: true,
      variations: [
        { key: 'blue', value: 'blue' },
        { key: 'green', value: 'green' },
      ],
      offVariationKey: 'green',
    });
    await enable('banner');
  });
  afterAll(() => vexil.close());

  describe('GET /v1/sdk/flags', () => {
    it('serves the environment configuration in the spec shape', async () => {
      const response = await sdkFlags();
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        environment: 'production',
        version: expect.any(Number),
      });
      expect(response.body.segments).toEqual([
        {
          key: 'dutch',
          version: 1,
          conditions: [{ attribute: 'country', operator: 'Equals', values: ['NL'], negate: false }],
          conditionLogic: 'And',
        },
      ]);
      const flag = response.body.flags.find((f: { key: string }) => f.key === 'new-checkout');
      expect(flag).toMatchObject({
        key: 'new-checkout',
        version: expect.any(Number),
        type: 'Boolean',
        enabled: true,
        variations: [
          { key: 'true', value: true },
          { key: 'false', value: false },
        ],
        fallthrough: { type: 'Fixed', variation: 'true' },
        offVariation: 'false',
        prerequisites: [],
      });
      expect(flag.rules).toEqual([
        {
          id: expect.any(String),
          priority: 1,
          conditionGroups: [
            {
              operator: 'And',
              conditions: [
                { attribute: 'email', operator: 'EndsWith', values: ['@acme.test'], negate: false },
              ],
            },
          ],
          serve: { type: 'Fixed', variation: 'false' },
        },
      ]);
      const inNl = response.body.flags.find((f: { key: string }) => f.key === 'in-nl');
      expect(inNl.rules[0].segmentKey).toBe('dutch');
      const half = response.body.flags.find((f: { key: string }) => f.key === 'half-rule');
      expect(half.rules[0].serve).toMatchObject({
        type: 'Rollout',
        variations: [{ key: 'false', weight: 50000 }],
      });
    });

    it('answers 304 to a matching If-None-Match, and a change gives a new ETag and version', async () => {
      const first = await sdkFlags();
      const etag = first.headers.etag as string;
      expect(etag).toMatch(/^W\/".+"$/);
      const unchanged = await sdkFlags({ 'if-none-match': etag });
      expect(unchanged.status).toBe(304);
      expect(unchanged.text).toBe('');

      // A real change (a toggle to the current state changes nothing), undone afterwards.
      await manage('POST', '/flags/dormant/environments/production/toggle', { enabled: true });
      const changed = await sdkFlags({ 'if-none-match': etag });
      expect(changed.status).toBe(200);
      expect(changed.headers.etag).not.toBe(etag);
      expect(changed.body.version).toBe((first.body.version as number) + 1);
      await manage('POST', '/flags/dormant/environments/production/toggle', { enabled: false });
    });

    it('sends the document gzipped to clients that accept gzip, and the same document to others', async () => {
      const plain = await sdkFlags();
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers.vary).toMatch(/accept-encoding/i);
      const download = (acceptEncoding: string) =>
        vexil.inject({
          method: 'GET',
          url: '/v1/sdk/flags',
          headers: { authorization: serverKey, 'accept-encoding': acceptEncoding },
        });
      const zipped = await download('gzip, deflate, br');
      expect(zipped.statusCode).toBe(200);
      expect(zipped.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(zipped.rawPayload).toString()).toBe(plain.text);
      expect(zipped.headers.etag).toBe(plain.headers.etag);
      const refused = await download('gzip;q=0, br');
      expect(refused.headers['content-encoding']).toBeUndefined();
      expect(refused.body).toBe(plain.text);
    });

    it('the version increases on every change in that environment, and only those', async () => {
      let version = (await sdkFlags()).body.version as number;
      const changes: [string, () => Promise<unknown>][] = [
        [
          'toggle on',
          () => manage('POST', '/flags/dormant/environments/production/toggle', { enabled: true }),
        ],
        [
          'toggle off',
          () => manage('POST', '/flags/dormant/environments/production/toggle', { enabled: false }),
        ],
        [
          'rule create',
          () =>
            manage('POST', '/flags/dormant/environments/production/rules', {
              variationId: variationId('dormant', 'true'),
            }),
        ],
        ['segment create', () => manage('POST', '/segments', { key: 'nobody' })],
        ['segment update', () => manage('PATCH', '/segments/nobody', { name: 'Nobody' })],
        ['segment delete', () => manage('DELETE', '/segments/nobody')],
        ['flag create', () => createFlag('late')],
      ];
      for (const [name, change] of changes) {
        await change();
        const next = (await sdkFlags()).body.version as number;
        expect(next, name).toBe(version + 1);
        version = next;
      }
      // A change in another environment leaves this one's configuration alone.
      await manage('POST', '/flags/dormant/environments/development/toggle', { enabled: true });
      expect((await sdkFlags()).body.version).toBe(version);
    });
  });

  describe('GET /v1/sdk/flags/{key}', () => {
    it('serves one SDK flag', async () => {
      const response = await call(vexil, 'GET', '/v1/sdk/flags/split', { token: serverKey });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        key: 'split',
        enabled: true,
        fallthrough: {
          type: 'Rollout',
          variations: [
            { key: 'true', weight: 30000 },
            { key: 'false', weight: 70000 },
          ],
        },
      });
    });

    it('serves every flag exactly as the whole configuration holds it', async () => {
      const { flags } = (await sdkFlags()).body as { flags: { key: string }[] };
      expect(flags.length).toBeGreaterThan(1);
      for (const flag of flags) {
        const response = await call(vexil, 'GET', `/v1/sdk/flags/${flag.key}`, {
          token: serverKey,
        });
        expect(response.text).toBe(JSON.stringify(flag));
      }
    });

    it('an unknown key is a 404 problem body', async () => {
      const response = await call(vexil, 'GET', '/v1/sdk/flags/no-such-flag', { token: serverKey });
      expectProblem(response, 404, '/v1/sdk/flags/no-such-flag');
    });
  });

  describe('POST /v1/sdk/evaluate', () => {
    it('serves the rule made through the management API to matching contexts', async () => {
      expect((await evaluate('new-checkout', 'u1', { email: 'kim@acme.test' })).body).toEqual({
        key: 'new-checkout',
        variation: 'false',
        value: false,
        reason: 'TARGETING_MATCH',
      });
      expect((await evaluate('new-checkout', 'u2', { email: 'kim@example.test' })).body).toEqual({
        key: 'new-checkout',
        variation: 'true',
        value: true,
        reason: 'DEFAULT',
      });
    });

    it('a segment rule serves the segment’s members', async () => {
      expect((await evaluate('in-nl', 'u1', { country: 'NL' })).body).toMatchObject({
        variation: 'false',
        reason: 'TARGETING_MATCH',
      });
      expect((await evaluate('in-nl', 'u1', { country: 'BE' })).body).toMatchObject({
        variation: 'true',
        reason: 'DEFAULT',
      });
    });

    it('a rollout-percentage rule serves part of its audience; the rest fall through', async () => {
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, (_, i) => evaluate('half-rule', `user-${i}`)),
      );
      const matched = outcomes.filter((o) => o.body.reason === 'TARGETING_MATCH');
      expect(matched.every((o) => o.body.variation === 'false')).toBe(true);
      expect(
        outcomes
          .filter((o) => o.body.reason !== 'TARGETING_MATCH')
          .every((o) => o.body.reason === 'DEFAULT' && o.body.variation === 'true'),
      ).toBe(true);
      expect(matched.length).toBeGreaterThan(60);
      expect(matched.length).toBeLessThan(140);
      // Sticky: the same user lands in the same place again.
      const again = await evaluate('half-rule', 'user-0');
      expect(again.body).toEqual(outcomes[0]!.body);
    });

    it('a percentage-rollout fallthrough splits by weight', async () => {
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, (_, i) => evaluate('split', `user-${i}`)),
      );
      expect(outcomes.every((o) => o.body.reason === 'SPLIT')).toBe(true);
      const onCount = outcomes.filter((o) => o.body.variation === 'true').length;
      expect(onCount).toBeGreaterThan(30);
      expect(onCount).toBeLessThan(90);
    });

    it('prerequisites: met serves the flag, unmet serves its off variation naming the prerequisite', async () => {
      expect((await evaluate('child', 'u1', { email: 'kim@example.test' })).body).toEqual({
        key: 'child',
        variation: 'true',
        value: true,
        reason: 'DEFAULT',
      });
      expect((await evaluate('child', 'u1', { email: 'kim@acme.test' })).body).toEqual({
        key: 'child',
        variation: 'false',
        value: false,
        reason: 'PREREQUISITE_FAILED',
        prerequisiteKey: 'new-checkout',
      });
    });

    it('a disabled flag serves its off variation', async () => {
      expect((await evaluate('dormant', 'u1')).body).toEqual({
        key: 'dormant',
        variation: 'false',
        value: false,
        reason: 'DISABLED',
      });
    });

    it('an unknown flag is a 404 problem body', async () => {
      expectProblem(await evaluate('no-such-flag', 'u1'), 404, '/v1/sdk/evaluate');
    });

    it('malformed JSON and an invalid body are 400 problem bodies', async () => {
      const malformed = await call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: serverKey,
        body: '{"flagKey": ',
      });
      expectProblem(malformed, 400, '/v1/sdk/evaluate');
      expect(malformed.body.detail).toBe(
        'The request body is not valid JSON at line 1, column 13: Unexpected end of JSON input.',
      );
      const invalid = await call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: serverKey,
        body: { context: {} },
      });
      expectProblem(invalid, 400, '/v1/sdk/evaluate');
    });
  });

  describe('prerequisite validation on write', () => {
    const setPrerequisites = (flag: string, prerequisites: unknown[]) =>
      call(vexil, 'PATCH', `${base}/flags/${flag}/environments/production`, {
        token,
        body: { prerequisites },
      });

    it('a cycle is 400 validation_failed naming the cycle', async () => {
      const response = await setPrerequisites('new-checkout', [
        { prerequisiteFlagKey: 'child', expectedVariationKey: 'true' },
      ]);
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('validation_failed');
      // At the prerequisite that leads into the cycle.
      expect(response.body.fields['prerequisites.0.prerequisiteFlagKey'][0]).toContain(
        'new-checkout → child → new-checkout',
      );
    });

    it('a flag requiring itself, an unknown flag and an unknown variation are refused on their field', async () => {
      const self = await setPrerequisites('split', [
        { prerequisiteFlagKey: 'split', expectedVariationKey: 'true' },
      ]);
      expect(self.status).toBe(400);
      expect(self.body.fields).toHaveProperty(['prerequisites.0.prerequisiteFlagKey']);
      const unknown = await setPrerequisites('split', [
        { prerequisiteFlagKey: 'in-nl', expectedVariationKey: 'true' },
        { prerequisiteFlagKey: 'nope', expectedVariationKey: 'true' },
      ]);
      expect(unknown.status).toBe(400);
      expect(unknown.body.fields).toHaveProperty(['prerequisites.1.prerequisiteFlagKey']);
      const variation = await setPrerequisites('split', [
        { prerequisiteFlagKey: 'in-nl', expectedVariationKey: 'maybe' },
      ]);
      expect(variation.status).toBe(400);
      expect(variation.body.fields).toHaveProperty(['prerequisites.0.expectedVariationKey']);
    });
  });

  describe('client endpoints', () => {
    for (const path of ['/v1/client/evaluate', '/v1/client/identify']) {
      it(`${path} evaluates client-visible flags only; server-only flags never leak`, async () => {
        const response = await call(vexil, 'POST', path, {
          token: clientKey,
          body: { context: { userId: 'u1', email: 'kim@acme.test' } },
        });
        expect(response.status).toBe(200);
        expect(response.body).toEqual({
          flags: {
            banner: { value: 'blue', variation: 'blue', reason: 'DEFAULT', prerequisiteKey: null },
          },
        });
        expect(response.text).not.toContain('new-checkout');
      });
    }
  });

  describe('SDK keys', () => {
    it('a missing or invalid key is 401; the wrong kind of key is 403', async () => {
      expectProblem(await call(vexil, 'GET', '/v1/sdk/flags'), 401, '/v1/sdk/flags');
      expectProblem(
        await call(vexil, 'GET', '/v1/sdk/flags', { token: 'vxl_srv_not-a-key' }),
        401,
        '/v1/sdk/flags',
      );
      expectProblem(
        await call(vexil, 'GET', '/v1/sdk/flags', { token: clientKey }),
        403,
        '/v1/sdk/flags',
      );
      expectProblem(
        await call(vexil, 'POST', '/v1/sdk/evaluate', {
          token: clientKey,
          body: { flagKey: 'new-checkout', context: {} },
        }),
        403,
        '/v1/sdk/evaluate',
      );
      for (const path of ['/v1/client/evaluate', '/v1/client/identify']) {
        expectProblem(
          await call(vexil, 'POST', path, { token: serverKey, body: { context: {} } }),
          403,
          path,
        );
        expectProblem(await call(vexil, 'POST', path, { body: { context: {} } }), 401, path);
      }
    });

    it('a personal access token sent as an SDK key is named as such', async () => {
      for (const [method, path] of [
        ['GET', '/v1/sdk/flags'],
        ['POST', '/v1/sdk/evaluate'],
      ] as const) {
        const response = await call(vexil, method, path, {
          headers: { authorization: `Bearer ${token}` },
          ...(method === 'POST' ? { body: { flagKey: 'new-checkout', context: {} } } : {}),
        });
        expectProblem(response, 401, path);
        expect(response.body.detail).toMatch(
          /^The key sent is a personal access token, which only the management API/,
        );
      }
    });

    it('a known path with another method is 405 with Allow; an unknown one 404', async () => {
      const wrongMethod = await call(vexil, 'GET', '/v1/sdk/evaluate', { token: serverKey });
      expectProblem(wrongMethod, 405, '/v1/sdk/evaluate');
      expect(wrongMethod.headers.allow).toBe('POST');
      expect(wrongMethod.body.detail).toBe(
        'GET is not allowed on /v1/sdk/evaluate; it accepts POST.',
      );
      expectProblem(await call(vexil, 'GET', '/v1/sdk/nothing'), 404, '/v1/sdk/nothing');
    });

    it('a body that is not JSON is 415 naming application/json', async () => {
      const response = await call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: serverKey,
        body: '{}',
        headers: { 'content-type': 'application/xml' },
      });
      expectProblem(response, 415, '/v1/sdk/evaluate');
      expect(response.body.detail).toContain('application/json');
    });

    it('a revoked key is 401', async () => {
      const created = await manage('POST', '/environments/production/sdk-keys', {
        name: 'short-lived',
        type: 'ServerSide',
      });
      expect((await call(vexil, 'GET', '/v1/sdk/flags', { token: created.key })).status).toBe(200);
      await manage('DELETE', `/environments/production/sdk-keys/${created.id}`);
      expectProblem(
        await call(vexil, 'GET', '/v1/sdk/flags', { token: created.key }),
        401,
        '/v1/sdk/flags',
      );
    });
  });
});
