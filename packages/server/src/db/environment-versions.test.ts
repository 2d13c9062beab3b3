import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { foldVersionBumps, readVersions } from './environment-versions.js';
import { mutate, type Mutation } from './mutate.js';

describe.each(testDialects())('environment versions and mutations (%s)', (dialect) => {
  let vexil: TestVexil;
  let environmentIds: string[];
  let flagIds: string[];

  beforeEach(async () => {
    vexil = await createTestVexil(dialect);
    const { token } = await createOrg(vexil, 'acme');
    await createProjectWithFlag(vexil, { token, slug: 'acme' });
    await callOk(vexil, 'POST', '/api/v1/orgs/acme/projects/web/flags', token, { key: 'other' });
    const { db } = vexil.services;
    environmentIds = (await db.selectFrom('environments').select('id').orderBy('id').execute()).map(
      (row) => row.id,
    );
    flagIds = (await db.selectFrom('flags').select('id').orderBy('key').execute()).map(
      (row) => row.id,
    );
  });

  afterEach(() => vexil.close());

  const write = (work: (m: Mutation) => Promise<void>) =>
    mutate(
      vexil.services.db,
      {
        organizationId: 'org',
        actor: { userId: 'test', email: null, name: 'test' },
        now: new Date(),
        events: vexil.services.events,
      },
      work,
    );

  it('deleting an environment leaves no version to bump behind, and bumps the others', async () => {
    const { db } = vexil.services;
    const { token } = await createOrg(vexil, 'acme');
    const before = await readVersions(db, environmentIds);
    const project = '/api/v1/orgs/acme/projects/web';
    await callOk(vexil, 'DELETE', `${project}/environments/development`, token);
    const after = await readVersions(db, environmentIds);
    expect(after.size).toBe(environmentIds.length - 1);
    for (const [id, version] of after) expect(version).toBeGreaterThanOrEqual(before.get(id)!);
  });

  it('a change raises the version of each environment it touches by one; folding changes none', async () => {
    const { db } = vexil.services;
    const [touched, untouched] = environmentIds as [string, string];
    const before = await readVersions(db, environmentIds);
    await write(async (m) => m.touchEnvironments([touched]));
    await write(async (m) => m.touchEnvironments([touched]));
    const after = await readVersions(db, environmentIds);
    expect(after.get(touched)).toBe(before.get(touched)! + 2);
    expect(after.get(untouched)).toBe(before.get(untouched));

    await foldVersionBumps(db);
    expect(await readVersions(db, environmentIds)).toEqual(after);
    expect(await db.selectFrom('environment_version_bumps').selectAll().execute()).toEqual([]);
    await write(async (m) => m.touchEnvironments([untouched]));
    expect((await readVersions(db, [untouched])).get(untouched)).toBe(before.get(untouched)! + 1);
  });

  it.runIf(dialect === 'postgres')(
    'a transaction aborted as a deadlock runs again, and its after-commit work runs once',
    async () => {
      // Two writers lock the same two flags in opposite orders, each waiting until the other
      // holds its first lock: PostgreSQL aborts one of them as a deadlock (40P01).
      const [a, b] = flagIds as [string, string];
      let firstLocks = 0;
      let bothLocked: () => void = () => {};
      const barrier = new Promise<void>((resolve) => (bothLocked = resolve));
      const notified: string[] = [];
      const lockInOrder = (first: string, second: string, name: string) =>
        write(async (m) => {
          const bump = (id: string) =>
            m.trx
              .updateTable('flags')
              .set((eb) => ({ version: eb('version', '+', 1) }))
              .where('id', '=', id)
              .execute();
          await bump(first);
          if (++firstLocks === 2) bothLocked();
          await barrier;
          await bump(second);
          m.afterCommit(() => notified.push(name));
        });
      const versions = () =>
        vexil.services.db.selectFrom('flags').select('version').orderBy('key').execute();
      const before = await versions();
      await Promise.all([lockInOrder(a, b, 'ab'), lockInOrder(b, a, 'ba')]);
      expect(notified.sort()).toEqual(['ab', 'ba']);
      // Each writer's bumps committed exactly once: the aborted attempt left nothing.
      expect((await versions()).map((row) => row.version)).toEqual(
        before.map((row) => row.version + 2),
      );
    },
  );
});
