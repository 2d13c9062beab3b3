import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { databaseSnapshots, type Snapshot } from './snapshots.js';

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

/** Design record 061: a snapshot built on the previous one is the snapshot read whole. */
describe.each(testDialects())('snapshots read flag by flag on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let environmentId: string;
  const web = '/api/v1/orgs/acme/projects/web';
  const manage = (method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) =>
    callOk(vexil, method, `${web}${path}`, token, body);

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    await createProjectWithFlag(vexil, org);
    environmentId = (await manage('PATCH', '/environments/production', {})).id as string;
  });
  afterAll(() => vexil.close());

  /** The snapshot built on `previous`, after checking it equals the one read whole. */
  async function readOn(previous: Snapshot): Promise<Snapshot> {
    const reader = databaseSnapshots(vexil.services.db);
    const [incremental, whole] = await Promise.all([
      reader.read(environmentId, previous),
      reader.read(environmentId),
    ]);
    expect(incremental!.version).toBe(whole!.version);
    expect(incremental!.document.etag).toBe(whole!.document.etag);
    expect((await incremental!.document.plain()).equals(await whole!.document.plain())).toBe(true);
    expect(incremental!.flagStamps).toEqual(whole!.flagStamps);
    expect(incremental!.flagDigests).toEqual(whole!.flagDigests);
    expect([...incremental!.clientSideKeys]).toEqual([...whole!.clientSideKeys]);
    expect(incremental!.clientFlags).toEqual(whole!.clientFlags);
    return incremental!;
  }

  it('matches the whole read after every kind of change', async () => {
    let snapshot = (await databaseSnapshots(vexil.services.db).read(environmentId))!;
    const changes: [string, () => Promise<unknown>][] = [
      [
        'a toggle',
        () =>
          manage('POST', '/flags/new-checkout/environments/production/toggle', { enabled: true }),
      ],
      [
        'a new flag',
        () =>
          manage('POST', '/flags', {
            key: 'banner',
            type: 'String',
            variations: [
              { key: 'short', value: 'Sale' },
              { key: 'long', value: 'Sale on everything' },
            ],
            clientSideVisible: true,
          }),
      ],
      ['a segment', () => manage('POST', '/segments', { key: 'beta', conditions: [] })],
      [
        'a rule on the segment',
        async () => {
          const segment = await manage('PATCH', '/segments/beta', {});
          const flag = await manage('PATCH', '/flags/new-checkout', {});
          await manage('POST', '/flags/new-checkout/environments/production/rules', {
            variationId: (flag.variations as { id: string }[])[0]!.id,
            userSegmentId: segment.id,
            conditionGroups: [
              {
                operator: 'And',
                conditions: [{ attribute: 'plan', operator: 'In', values: ['pro'] }],
              },
            ],
          });
        },
      ],
      [
        'a variation’s value',
        () => manage('PATCH', '/flags/banner/variations/long', { value: 'Sale on all' }),
      ],
      [
        'metadata',
        () => manage('PATCH', '/flags/new-checkout', { metadata: { owner: 'checkout' } }),
      ],
      [
        'visibility to client SDKs',
        () => manage('PATCH', '/flags/new-checkout', { clientSideVisible: true }),
      ],
      [
        'the segment’s conditions',
        () =>
          manage('PATCH', '/segments/beta', {
            conditions: [{ attribute: 'country', operator: 'In', values: ['NL'] }],
          }),
      ],
      ['the segment renamed', () => manage('PATCH', '/segments/beta', { key: 'testers' })],
      ['an archive', () => manage('POST', '/flags/banner/archive')],
      ['a restore', () => manage('POST', '/flags/banner/restore')],
      ['a flag to delete', () => manage('POST', '/flags', { key: 'promo' })],
      [
        'a flag deleted and created again, at the version it had',
        async () => {
          await manage('POST', '/flags/promo/archive');
          await manage('DELETE', '/flags/promo');
          await manage('POST', '/flags', {
            key: 'promo',
            type: 'Number',
            variations: [{ key: 'ten', value: '10' }],
          });
        },
      ],
      [
        'another environment’s toggle',
        () => manage('POST', '/flags/promo/environments/development/toggle', { enabled: true }),
      ],
    ];
    for (const [change, make] of changes) {
      await make();
      const next = await readOn(snapshot);
      expect(next.version, change).toBeGreaterThanOrEqual(snapshot.version);
      snapshot = next;
    }
  });

  it('reads again only the flags whose version moved', async () => {
    const reader = databaseSnapshots(vexil.services.db);
    const held = (await reader.read(environmentId))!;
    // A write behind the versions' back, which no route makes: the flag keeps its stamp.
    await vexil.services.db
      .updateTable('flags')
      .set({ metadata: JSON.stringify({ unseen: true }) })
      .where('key', '=', 'new-checkout')
      .execute();
    await manage('POST', '/flags/banner/environments/production/toggle', { enabled: true });
    const next = (await reader.read(environmentId, held))!;
    const json = (snapshot: Snapshot, key: string) =>
      snapshot.document.flagJson(snapshot.compiled.flagIndex.get(key)!).toString();
    expect(json(next, 'new-checkout')).toBe(json(held, 'new-checkout'));
    expect(json(next, 'banner')).not.toBe(json(held, 'banner'));
    expect(json((await reader.read(environmentId))!, 'new-checkout')).toContain('unseen');
  });
});
