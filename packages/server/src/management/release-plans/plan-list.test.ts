import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../../test-support/harness.js';

const base = '/api/v1/orgs/acme/projects/web';

describe.each(testDialects())('which environments have a release plan, on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  it('lists none for a flag without plans, then each plan’s environment and state', async () => {
    const flag = await callOk(vexil, 'POST', `${base}/flags`, org.token, {
      key: 'listed',
      name: 'Listed',
    });
    const list = () => callOk(vexil, 'GET', `${base}/flags/listed/release-plans`, org.token);
    expect(await list()).toEqual([]);

    await callOk(vexil, 'PATCH', `${base}/flags/listed/environments/production`, org.token, {
      defaultVariationId: variationIdsByKey(flag).false,
    });
    await callOk(
      vexil,
      'PUT',
      `${base}/flags/listed/environments/production/release-plan`,
      org.token,
      { variation: 'true', steps: [{ percentage: 100, after: 'PT0S' }] },
    );
    expect(await list()).toEqual([{ environmentKey: 'production', state: 'completed' }]);
  });
});
