import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../test-support/harness.js';

const flag = '/api/v1/orgs/acme/projects/web/flags/new-checkout';

/** Issue 43, item 8: a rollout recorded with variation ids reads in variation keys. */
describe.each(testDialects())('names in the audit log on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  it('names the variations of a rollout by key, with their percentages', async () => {
    const ids = variationIdsByKey(await callOk(vexil, 'GET', flag, token));
    await callOk(vexil, 'PATCH', `${flag}/environments/production`, token, {
      strategy: 'PercentageRollout',
      rollout: [
        { variationId: ids['true'], weight: 25_000 },
        { variationId: ids['false'], weight: 75_000 },
      ],
    });
    const history = await callOk(vexil, 'GET', `${flag}/history`, token);
    const changes = (
      history.items as { changes: { property: string; to: string | null; toKey?: string }[] }[]
    ).flatMap((item) => item.changes);
    const rollout = changes.find((change) => change.to?.includes(ids['true'] ?? '-'));
    expect(rollout?.toKey).toBe('true 25%, false 75%');
  });
});
