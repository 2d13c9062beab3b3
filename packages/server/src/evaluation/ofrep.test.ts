import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { OpenFeature, type Client } from '@openfeature/server-sdk';
import {
  OpenFeature as WebOpenFeature,
  ProviderEvents,
  type Client as WebClient,
} from '@openfeature/web-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
  variationIdsByKey,
} from '../test-support/harness.js';

const base = '/api/v1/orgs/acme/projects/web';
const flagEnv = (flag: string) => `${base}/flags/${flag}/environments/production`;

/** The flags every case reads, created through the management API as a user would. */
async function seedFlags(vexil: TestVexil, token: string): Promise<void> {
  const manage = (method: 'POST' | 'PATCH', url: string, body: unknown) =>
    callOk(vexil, method, url, token, body);
  const create = (body: Record<string, unknown>) => manage('POST', `${base}/flags`, body);

  await create({
    key: 'banner-text',
    type: 'String',
    clientSideVisible: true,
    variations: [
      { key: 'english', value: 'Hello' },
      { key: 'french', value: 'Bonjour' },
    ],
    offVariationKey: 'french',
  });
  await create({
    key: 'max-items',
    type: 'Number',
    variations: [
      { key: 'small', value: '10' },
      { key: 'large', value: '50.5' },
    ],
    offVariationKey: 'large',
  });
  await create({
    key: 'theme',
    type: 'Json',
    clientSideVisible: true,
    variations: [
      { key: 'dark', value: '{"mode":"dark","contrast":2}' },
      { key: 'light', value: '{"mode":"light"}' },
    ],
    offVariationKey: 'light',
  });
  const experiment = await create({
    key: 'experiment',
    type: 'String',
    clientSideVisible: true,
    variations: [
      { key: 'control', value: 'control' },
      { key: 'treatment', value: 'treatment' },
      { key: 'off', value: 'off' },
    ],
    offVariationKey: 'off',
  });
  await create({ key: 'kill-switch', type: 'Boolean', clientSideVisible: true });

  // new-checkout (from the harness): false by default, true for one targeted email.
  const checkoutFlag = (await call(vexil, 'GET', `${base}/flags/new-checkout`, { token })).body;
  const checkoutIds = variationIdsByKey(checkoutFlag);
  await manage('PATCH', flagEnv('new-checkout'), { defaultVariationId: checkoutIds.false });
  await manage('POST', `${flagEnv('new-checkout')}/rules`, {
    variationId: checkoutIds.true,
    conditionGroups: [
      {
        operator: 'And',
        conditions: [
          { attribute: 'email', operator: 'Equals', values: ['vip@acme.test'], negate: false },
        ],
      },
    ],
  });
  const experimentIds = variationIdsByKey(experiment);
  await manage('PATCH', flagEnv('experiment'), {
    strategy: 'PercentageRollout',
    rollout: [
      { variationId: experimentIds.control, weight: 50000 },
      { variationId: experimentIds.treatment, weight: 50000 },
    ],
  });
  for (const flag of ['new-checkout', 'banner-text', 'max-items', 'theme', 'experiment'])
    await manage('POST', `${flagEnv(flag)}/toggle`, { enabled: true });
}

describe.each(testDialects())('OFREP on %s', (dialect) => {
  let vexil: TestVexil;
  let baseUrl: string;
  let serverKey: string;
  let clientKey: string;
  let token: string;
  let server: Client;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    serverKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    await seedFlags(vexil, token);
    const client = await call(vexil, 'POST', `${base}/environments/production/sdk-keys`, {
      token,
      body: { name: 'browser', type: 'ClientSide' },
    });
    clientKey = client.body.key;
    baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const domain = `vexil-${dialect}`;
    await OpenFeature.setProviderAndWait(
      domain,
      new OFREPProvider({ baseUrl, headers: [['Authorization', `Bearer ${serverKey}`]] }),
    );
    server = OpenFeature.getClient(domain);
  });
  afterAll(async () => {
    await OpenFeature.clearProviders();
    await vexil.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${baseUrl}/ofrep/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  describe('server provider (@openfeature/ofrep-provider)', () => {
    it('boolean: a targeting rule matches, others get the default', async () => {
      const vip = await server.getBooleanDetails('new-checkout', false, {
        targetingKey: 'u1',
        email: 'vip@acme.test',
      });
      expect(vip).toMatchObject({ value: true, variant: 'true', reason: 'TARGETING_MATCH' });
      expect(vip.flagMetadata.ruleId).toMatch(/^[0-9a-f-]{36}$/);
      const other = await server.getBooleanDetails('new-checkout', true, {
        targetingKey: 'u2',
        email: 'someone@acme.test',
      });
      expect(other).toMatchObject({ value: false, variant: 'false', reason: 'DEFAULT' });
      expect(other.errorCode).toBeUndefined();
    });

    it('string, number and object flags are typed', async () => {
      const context = { targetingKey: 'u1' };
      expect(await server.getStringDetails('banner-text', 'x', context)).toMatchObject({
        value: 'Hello',
        variant: 'english',
        reason: 'STATIC', // no rules, no split: nothing dynamic happened
      });
      expect(await server.getNumberValue('max-items', 0, context)).toBe(10);
      expect(await server.getObjectValue('theme', {}, context)).toEqual({
        mode: 'dark',
        contrast: 2,
      });
    });

    it('split: the targetingKey is the bucketing identity, as for /v1/sdk/evaluate', async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 24; i++) {
        const targetingKey = `user-${i}`;
        const details = await server.getStringDetails('experiment', 'default', { targetingKey });
        expect(details.reason).toBe('SPLIT');
        seen.add(details.value);
        const native = await call(vexil, 'POST', '/v1/sdk/evaluate', {
          token: serverKey,
          body: { flagKey: 'experiment', context: { userId: targetingKey } },
        });
        expect(native.body.value).toBe(details.value);
      }
      expect(seen).toEqual(new Set(['control', 'treatment']));
    });

    it('a split without a targetingKey is TARGETING_KEY_MISSING: the caller gets its default', async () => {
      const details = await server.getStringDetails('experiment', 'default', {});
      expect(details).toMatchObject({
        value: 'default',
        reason: 'ERROR',
        errorCode: 'TARGETING_KEY_MISSING',
      });
    });

    it('a disabled flag serves its off variation with reason DISABLED', async () => {
      expect(
        await server.getBooleanDetails('kill-switch', true, { targetingKey: 'u1' }),
      ).toMatchObject({ value: false, variant: 'false', reason: 'DISABLED' });
    });

    it('an unknown flag is FLAG_NOT_FOUND: the caller gets its default', async () => {
      const details = await server.getBooleanDetails('no-such-flag', true, { targetingKey: 'u1' });
      expect(details).toMatchObject({ value: true, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    });

    it('a type mismatch is reported by the provider, not served', async () => {
      const details = await server.getBooleanDetails('banner-text', true, { targetingKey: 'u1' });
      expect(details).toMatchObject({ value: true, errorCode: 'TYPE_MISMATCH' });
    });

    it("returns the flag's metadata with the evaluation's; the evaluation's keys win", async () => {
      const metadata = { version: '1.0.2', replicas: 2, ratio: 0.1, audited: true };
      await callOk(vexil, 'PATCH', `${base}/flags/new-checkout`, token, {
        metadata: { ...metadata, ruleId: 'set-by-the-team' },
      });
      try {
        const vip = await server.getBooleanDetails('new-checkout', false, {
          targetingKey: 'u1',
          email: 'vip@acme.test',
        });
        expect(vip.reason).toBe('TARGETING_MATCH');
        expect(vip.flagMetadata).toEqual({
          ...metadata,
          ruleId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        });
        const wire = await post(
          '/evaluate/flags/new-checkout',
          { context: { targetingKey: 'u2' } },
          { authorization: `Bearer ${serverKey}` },
        );
        expect(await wire.json()).toEqual({
          key: 'new-checkout',
          value: false,
          reason: 'DEFAULT',
          variant: 'false',
          metadata: { ...metadata, ruleId: 'set-by-the-team' },
        });
      } finally {
        await callOk(vexil, 'PATCH', `${base}/flags/new-checkout`, token, { metadata: {} });
      }
      // Without metadata, the evaluation's own keys only.
      const plain = await server.getBooleanDetails('new-checkout', true, { targetingKey: 'u2' });
      expect(plain.flagMetadata).toEqual({});
    });
  });

  describe('web provider (@openfeature/ofrep-web-provider)', () => {
    let web: WebClient;
    const domain = `vexil-web-${dialect}`;

    beforeAll(async () => {
      await WebOpenFeature.setContext(domain, {
        targetingKey: 'user-7',
        email: 'vip@acme.test',
      });
      await WebOpenFeature.setProviderAndWait(
        domain,
        new OFREPWebProvider({
          baseUrl,
          headers: [['Authorization', `Bearer ${clientKey}`]],
          cacheMode: 'disabled',
          pollInterval: 20,
        }),
      );
      web = WebOpenFeature.getClient(domain);
    });
    afterAll(() => WebOpenFeature.clearProviders());

    it('bulk-evaluates the client-visible flags once and serves them synchronously', () => {
      expect(web.getStringValue('banner-text', 'x')).toBe('Hello');
      expect(web.getObjectValue('theme', {})).toEqual({ mode: 'dark', contrast: 2 });
      expect(web.getBooleanDetails('kill-switch', true)).toMatchObject({
        value: false,
        reason: 'DISABLED',
      });
      const split = web.getStringDetails('experiment', 'default');
      expect(split.reason).toBe('SPLIT');
      expect(['control', 'treatment']).toContain(split.value);
    });

    it('a client key does not see server-only flags', () => {
      expect(web.getBooleanDetails('new-checkout', true)).toMatchObject({
        value: true,
        errorCode: 'FLAG_NOT_FOUND',
      });
      expect(web.getNumberDetails('max-items', 1)).toMatchObject({
        value: 1,
        errorCode: 'FLAG_NOT_FOUND',
      });
    });

    it('polling with If-None-Match picks up a change and emits ConfigurationChanged', async () => {
      const changed = new Promise<string[]>((resolve) =>
        web.addHandler(ProviderEvents.ConfigurationChanged, (details) =>
          resolve(details?.flagsChanged ?? []),
        ),
      );
      const flag = (await call(vexil, 'GET', `${base}/flags/banner-text`, { token })).body;
      const french = flag.variations.find((v: { key: string }) => v.key === 'french').id;
      const patched = await call(vexil, 'PATCH', flagEnv('banner-text'), {
        token,
        body: { defaultVariationId: french },
      });
      expect(patched.status).toBe(200);
      expect(await changed).toEqual(['banner-text']);
      expect(web.getStringValue('banner-text', 'x')).toBe('Bonjour');
    });
  });

  describe('the protocol on the wire', () => {
    it('bulk: ETag, If-None-Match → 304, a new ETag after a change', async () => {
      const auth = { authorization: `Bearer ${clientKey}` };
      const body = { context: { targetingKey: 'u9' } };
      const first = await post('/evaluate/flags', body, auth);
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^".+"$/);
      const flags = ((await first.json()) as { flags: { key: string }[] }).flags;
      expect(flags.map((f) => f.key).sort()).toEqual([
        'banner-text',
        'experiment',
        'kill-switch',
        'theme',
      ]);
      const again = await post('/evaluate/flags', body, { ...auth, 'if-none-match': etag });
      expect(again.status).toBe(304);
      // Another context sees another answer, so another ETag.
      const other = await post(
        '/evaluate/flags',
        { context: {} },
        { ...auth, 'if-none-match': etag },
      );
      expect(other.status).toBe(200);
      const inline = ((await other.json()) as { flags: Record<string, unknown>[] }).flags;
      expect(inline.find((f) => f.key === 'experiment')).toMatchObject({
        errorCode: 'TARGETING_KEY_MISSING',
      });
      await call(vexil, 'POST', `${flagEnv('kill-switch')}/toggle`, {
        token,
        body: { enabled: true },
      });
      const changed = await post('/evaluate/flags', body, { ...auth, 'if-none-match': etag });
      expect(changed.status).toBe(200);
      expect(changed.headers.get('etag')).not.toBe(etag);
      await call(vexil, 'POST', `${flagEnv('kill-switch')}/toggle`, {
        token,
        body: { enabled: false },
      });
    });

    it('a known path with another method is 405 with Allow; a token sent as a key is named', async () => {
      const wrongMethod = await fetch(`${baseUrl}/ofrep/v1/evaluate/flags`);
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get('allow')).toBe('POST');
      expect(await wrongMethod.json()).toEqual({
        errorDetails: 'GET is not allowed on /ofrep/v1/evaluate/flags; it accepts POST.',
      });
      const personal = await post('/evaluate/flags', { context: {} }, { 'x-api-key': token });
      expect(personal.status).toBe(401);
      expect(((await personal.json()) as { errorDetails: string }).errorDetails).toMatch(
        /^The key sent is a personal access token/,
      );
    });

    it('keys: X-API-Key works; none or a bad one is 401', async () => {
      const ok = await post(
        '/evaluate/flags/banner-text',
        { context: {} },
        { 'x-api-key': serverKey },
      );
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ key: 'banner-text', reason: 'STATIC' });
      expect((await post('/evaluate/flags/banner-text', { context: {} })).status).toBe(401);
      const bad = await post('/evaluate/flags', { context: {} }, { authorization: 'Bearer nope' });
      expect(bad.status).toBe(401);
    });

    it('errors: PARSE_ERROR, INVALID_CONTEXT and FLAG_NOT_FOUND bodies', async () => {
      const auth = { authorization: `Bearer ${serverKey}` };
      const parse = await post('/evaluate/flags/banner-text', '{"context":', auth);
      expect(parse.status).toBe(400);
      expect(await parse.json()).toMatchObject({ key: 'banner-text', errorCode: 'PARSE_ERROR' });
      const invalid = await post('/evaluate/flags/banner-text', { context: 'u1' }, auth);
      expect(invalid.status).toBe(400);
      expect(await invalid.json()).toMatchObject({ errorCode: 'INVALID_CONTEXT' });
      const badKey = await post('/evaluate/flags', { context: { targetingKey: 7 } }, auth);
      expect(badKey.status).toBe(400);
      const badKeyBody = await badKey.json();
      expect(badKeyBody).toMatchObject({
        errorCode: 'INVALID_CONTEXT',
        errorDetails: 'The request body is not valid: context.targetingKey must be a string.',
      });
      expect(badKeyBody).not.toHaveProperty('key');
      const missing = await post('/evaluate/flags/nope', { context: {} }, auth);
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({
        key: 'nope',
        errorCode: 'FLAG_NOT_FOUND',
        errorDetails: 'No flag "nope" in this environment.',
      });
      const hidden = await post(
        '/evaluate/flags/max-items',
        { context: {} },
        {
          authorization: `Bearer ${clientKey}`,
        },
      );
      expect(hidden.status).toBe(404);
    });
  });
});
