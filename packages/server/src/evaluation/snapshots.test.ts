import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

describe.each(testDialects())('snapshots at hand on %s', (dialect) => {
  let vexil: TestVexil;
  let environmentId: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    const { project } = await createProjectWithFlag(vexil, org);
    const environment = await call(
      vexil,
      'GET',
      `/api/v1/orgs/acme/projects/${project}/environments/production`,
      { token: org.token },
    );
    environmentId = environment.body.id;
  });
  afterAll(() => vexil.close());

  it('ready() holds a snapshot from its build until its environment changes', async () => {
    const { snapshots } = vexil;
    snapshots.invalidate([environmentId]);
    expect(snapshots.ready(environmentId)).toBeUndefined();
    const building = snapshots.get(environmentId);
    expect(snapshots.ready(environmentId)).toBeUndefined();
    const built = await building;
    expect(snapshots.ready(environmentId)).toBe(built);
    expect(snapshots.heldVersions().get(environmentId)).toBe(built!.version);
    snapshots.invalidate([environmentId]);
    expect(snapshots.ready(environmentId)).toBeUndefined();
    expect(snapshots.heldVersions().has(environmentId)).toBe(false);
    await snapshots.get(environmentId);
    snapshots.invalidateAll();
    expect(snapshots.ready(environmentId)).toBeUndefined();
  });

  it('an unknown environment is never at hand', async () => {
    expect(await vexil.snapshots.get('no-such-environment')).toBeUndefined();
    expect(vexil.snapshots.ready('no-such-environment')).toBeUndefined();
  });
});
