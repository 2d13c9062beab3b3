import { call, callOk, variationIdsByKey, type TestVexil } from './harness.js';

const base = '/api/v1/orgs/acme/projects/web';
const flagEnv = (flag: string) => `${base}/flags/${flag}/environments/production`;

/**
 * The flags the SDK tests evaluate, made through the management API in the harness's project
 * `web`: `banner-text` (String), `max-items` (Number), `theme` (Json), `kill-switch` (Boolean, left
 * off) and the harness's `new-checkout`, serving `true` to `plan: pro` and otherwise falling
 * through to `false` or, with `checkoutFallthrough: 'split'`, to a 50/50 split. All but
 * `kill-switch` are switched on in production.
 */
export async function seedSdkFlags(
  vexil: TestVexil,
  token: string,
  checkoutFallthrough: 'false' | 'split',
): Promise<void> {
  const manage = (method: 'POST' | 'PATCH', url: string, body: unknown) =>
    callOk(vexil, method, url, token, body);
  await manage('POST', `${base}/flags`, {
    key: 'banner-text',
    type: 'String',
    variations: [
      { key: 'english', value: 'Hello' },
      { key: 'french', value: 'Bonjour' },
    ],
    offVariationKey: 'french',
  });
  await manage('POST', `${base}/flags`, {
    key: 'max-items',
    type: 'Number',
    variations: [
      { key: 'small', value: '10' },
      { key: 'large', value: '50' },
    ],
    offVariationKey: 'large',
  });
  await manage('POST', `${base}/flags`, {
    key: 'theme',
    type: 'Json',
    variations: [{ key: 'dark', value: '{"mode":"dark"}' }],
  });
  await manage('POST', `${base}/flags`, { key: 'kill-switch', type: 'Boolean' });
  const checkout = (await call(vexil, 'GET', `${base}/flags/new-checkout`, { token })).body;
  const ids = variationIdsByKey(checkout);
  if (checkoutFallthrough === 'false') {
    await manage('PATCH', flagEnv('new-checkout'), { defaultVariationId: ids.false });
  }
  await manage('POST', `${flagEnv('new-checkout')}/rules`, {
    variationId: ids.true,
    conditionGroups: [
      {
        operator: 'And',
        conditions: [{ attribute: 'plan', operator: 'Equals', values: ['pro'], negate: false }],
      },
    ],
  });
  if (checkoutFallthrough === 'split') {
    await manage('PATCH', flagEnv('new-checkout'), {
      strategy: 'PercentageRollout',
      rollout: [
        { variationId: ids.true, weight: 50000 },
        { variationId: ids.false, weight: 50000 },
      ],
    });
  }
  for (const flag of ['new-checkout', 'banner-text', 'max-items', 'theme'])
    await manage('POST', `${flagEnv(flag)}/toggle`, { enabled: true });
}
