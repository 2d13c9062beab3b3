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
const copy = `${flagUrl}/environments/development/copy`;

describe.each(testDialects())(
  'copying a flag configuration between environments on %s',
  (dialect) => {
    let vexil: TestVexil;
    let org: Awaited<ReturnType<typeof createOrg>>;
    let sdkKey: string;
    let sourceRuleId: string;

    beforeAll(async () => {
      vexil = await createTestVexil(dialect);
      org = await createOrg(vexil);
      ({ sdkKey } = await createProjectWithFlag(vexil, org));
      const variations = variationIdsByKey(await callOk(vexil, 'GET', flagUrl, org.token));
      const development = `${flagUrl}/environments/development`;
      await callOk(vexil, 'POST', `${development}/toggle`, org.token, { enabled: true });
      await callOk(vexil, 'PATCH', development, org.token, {
        strategy: 'PercentageRollout',
        rollout: [
          { variationId: variations.true, weight: 12_500 },
          { variationId: variations.false, weight: 87_500 },
        ],
      });
      sourceRuleId = (
        await callOk(vexil, 'POST', `${development}/rules`, org.token, {
          description: 'Germans',
          variationId: variations.true,
          conditionGroups: [
            { conditions: [{ attribute: 'country', operator: 'In', values: ['DE'] }] },
          ],
        })
      ).id;
    });
    afterAll(() => vexil.close());

    it('makes the target serve what the source serves, with its own rule ids, in one change', async () => {
      const response = await call(vexil, 'POST', copy, {
        token: org.token,
        body: { target: 'production' },
      });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        environmentKey: 'production',
        isEnabled: true,
        strategy: 'PercentageRollout',
      });
      expect(response.body.rollout.map((w: { weight: number }) => w.weight)).toEqual([
        12_500, 87_500,
      ]);

      const rules = await callOk(
        vexil,
        'GET',
        `${flagUrl}/environments/production/rules`,
        org.token,
      );
      expect(rules.items).toHaveLength(1);
      expect(rules.items[0]).toMatchObject({ description: 'Germans', priority: 1 });
      expect(rules.items[0].id).not.toBe(sourceRuleId);

      const answer = await call(vexil, 'POST', '/v1/sdk/evaluate', {
        headers: { authorization: sdkKey },
        body: { flagKey: 'new-checkout', context: { userId: 'u1', attributes: { country: 'DE' } } },
      });
      expect(answer.body).toMatchObject({ variation: 'true', reason: 'TARGETING_MATCH' });

      const audit = await callOk(vexil, 'GET', '/api/v1/orgs/acme/audit-log?limit=2', org.token);
      expect(audit.items.map((e: { type: string }) => e.type).sort()).toEqual([
        'flag.environment_config.updated',
        'flag.toggled',
      ]);
      const updated = audit.items.find(
        (e: { type: string }) => e.type === 'flag.environment_config.updated',
      );
      expect(updated.description).toBe(
        'Configuration of flag "new-checkout" in "production" copied from "development"',
      );
      expect(updated.changes).toContainEqual({
        property: 'rules',
        from: '0 rules',
        to: '1 rules copied from "development"',
      });
    });

    it('refuses copying an environment onto itself, on the target field, changing nothing', async () => {
      const response = await call(vexil, 'POST', copy, {
        token: org.token,
        body: { target: 'development' },
      });
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.fields)).toEqual(['target']);
    });

    it('names an unknown target environment with the near match', async () => {
      const response = await call(vexil, 'POST', copy, {
        token: org.token,
        body: { target: 'prodution' },
      });
      expect(response.status).toBe(404);
      expect(response.body.did_you_mean).toContain('production');
    });
  },
);
