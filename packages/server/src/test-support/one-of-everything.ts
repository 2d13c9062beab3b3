import { call, callOk, createOrg, createProjectWithFlag, type TestVexil } from './harness.js';

/** Real fixtures of the seeded organization, by path parameter name (`{flag}`, `{keyId}`…). */
export type Fixtures = Record<string, string>;

/**
 * Seeds organization `acme` with one of everything a path of the APIs can name — project `web`,
 * environment `production`, flag `new-checkout` with a rule, segment `beta`, server and client SDK
 * keys, a service token, a webhook with a secret and a delivery, a relay key, a draft change
 * request, metric `checkout` and a draft experiment `bigger-button` — for tests that walk every
 * route.
 * @returns the Owner's token, the SDK keys and the fixtures by path parameter name
 */
export async function seedOneOfEverything(vexil: TestVexil) {
  const org = await createOrg(vexil);
  const { sdkKey } = await createProjectWithFlag(vexil, org);
  const owner = { token: org.token };
  const web = '/api/v1/orgs/acme/projects/web';
  const post = (url: string, body?: unknown) => callOk(vexil, 'POST', url, owner.token, body);
  const client = await post(`${web}/environments/production/sdk-keys`, {
    name: 'client',
    type: 'ClientSide',
  });
  const flag = (await call(vexil, 'GET', `${web}/flags/new-checkout`, owner)).body;
  const variation = flag.variations[0].id as string;
  const rule = await post(`${web}/flags/new-checkout/environments/production/rules`, {
    variationId: variation,
  });
  await post(`${web}/segments`, { key: 'beta' });
  const token = await post('/api/v1/orgs/acme/service-tokens', { name: 'bot', role: 'Member' });
  const hook = await post('/api/v1/orgs/acme/webhooks', {
    name: 'Hook',
    url: 'http://127.0.0.1:9/hook',
  });
  const secret = await post(`/api/v1/orgs/acme/webhooks/${hook.id}/secrets`);
  const test = await post(`/api/v1/orgs/acme/webhooks/${hook.id}/test`);
  const relayKey = await post('/api/v1/orgs/acme/relay-keys', { name: 'edge' });
  const invitation = await post('/api/v1/orgs/acme/invitations', {
    email: 'invited@acme.test',
    role: 'Member',
  });
  // A repository's references, of a key no flag has: no flag of the seed counts as read by code.
  await callOk(vexil, 'PUT', `${web}/code-references/shop/branches/main`, owner.token, {
    commit: 'c0ffee',
    scannedAt: '2026-11-28T10:00:00.000Z',
    references: [{ path: 'src/cart.ts', line: 3, column: 7, kind: 'call', key: 'retired-flag' }],
  });
  const production = (
    await call(vexil, 'GET', `${web}/flags/new-checkout/environments/production`, owner)
  ).body;
  const changeRequest = await post(`${web}/change-requests`, {
    environment: 'production',
    title: 'Turn on new checkout',
    changes: [
      {
        kind: 'flag',
        flagKey: 'new-checkout',
        baseRevision: production.revision,
        configuration: { enabled: true, defaultVariation: 'true', offVariation: 'false' },
      },
    ],
  });
  await post(`${web}/metrics`, {
    key: 'checkout',
    name: 'Checkout',
    eventKey: 'checkout',
    kind: 'conversion',
    direction: 'higher_is_better',
  });
  await post(`${web}/flags/new-checkout/environments/production/experiments`, {
    key: 'bigger-button',
    name: 'Bigger button',
    variations: [
      { key: 'true', weight: 5000 },
      { key: 'false', weight: 5000 },
    ],
    controlVariation: 'false',
    primaryMetric: 'checkout',
  });
  const fixtures: Fixtures = {
    org: 'acme',
    project: 'web',
    env: 'production',
    flag: 'new-checkout',
    key: 'new-checkout',
    variation,
    rule: rule.id,
    segment: 'beta',
    keyId: client.id,
    tokenId: token.id,
    id: hook.id,
    secretId: secret.secretId,
    deliveryId: test.webhookDeliveryId,
    userId: org.userId,
    relayKeyId: relayKey.id,
    number: String(changeRequest.number),
    repository: 'shop',
    branch: 'main',
    metric: 'checkout',
    experiment: 'bigger-button',
    // The invitation link carries its token in the fragment (`#token=…`).
    token: new URL(invitation.acceptUrl as string).hash.replace('#token=', ''),
  };
  return { owner: org.token, keys: { server: sdkKey, client: client.key as string }, fixtures };
}
