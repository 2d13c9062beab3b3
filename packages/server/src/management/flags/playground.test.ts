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
} from '../../test-support/harness.js';

const flagUrl = '/api/v1/orgs/acme/projects/web/flags/new-checkout';
const explain = `${flagUrl}/environments/production/evaluate`;

describe.each(testDialects())('the evaluation playground on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let sdkKey: string;
  let ruleId: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
    const variations = variationIdsByKey(await callOk(vexil, 'GET', flagUrl, org.token));
    await callOk(vexil, 'POST', `${flagUrl}/environments/production/toggle`, org.token, {
      enabled: true,
    });
    const rule = await callOk(
      vexil,
      'POST',
      `${flagUrl}/environments/production/rules`,
      org.token,
      {
        variationId: variations.false,
        conditionGroups: [
          { conditions: [{ attribute: 'country', operator: 'in', values: ['DE', 'AT'] }] },
        ],
      },
    );
    ruleId = rule.id;
  });
  afterAll(() => vexil.close());

  const sdkAnswer = async (context: Record<string, unknown>) =>
    (
      await call(vexil, 'POST', '/v1/sdk/evaluate', {
        headers: { authorization: sdkKey },
        body: { flagKey: 'new-checkout', context },
      })
    ).body;

  it('names the matching rule and gives the variation and reason the SDK API gives', async () => {
    const context = { userId: 'user-42', attributes: { country: 'DE' } };
    const response = await call(vexil, 'POST', explain, { token: org.token, body: { context } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      key: 'new-checkout',
      variation: 'false',
      value: false,
      reason: 'TARGETING_MATCH',
      ruleId,
      prerequisiteKey: null,
      errorCode: null,
    });
    expect(await sdkAnswer(context)).toMatchObject({
      variation: response.body.variation,
      reason: response.body.reason,
    });
  });

  it('answers the default with no rule for a context no rule matches', async () => {
    const context = { userId: 'user-7', attributes: { country: 'FR' } };
    const response = await call(vexil, 'POST', explain, { token: org.token, body: { context } });
    expect(response.body).toMatchObject({ variation: 'true', reason: 'DEFAULT', ruleId: null });
    expect(await sdkAnswer(context)).toMatchObject({ variation: 'true', reason: 'DEFAULT' });
  });

  it('refuses an archived flag with the reason, instead of an answer SDKs never get', async () => {
    await callOk(vexil, 'POST', `${flagUrl}/archive?force=true`, org.token, {});
    const response = await call(vexil, 'POST', explain, {
      token: org.token,
      body: { context: {} },
    });
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/archived/);
    await callOk(vexil, 'POST', `${flagUrl}/restore`, org.token, {});
  });

  it('refuses a context that is not an object, field by field', async () => {
    const response = await call(vexil, 'POST', explain, {
      token: org.token,
      body: { context: { userId: 42 } },
    });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields)).toEqual(['context.userId']);
  });
});
