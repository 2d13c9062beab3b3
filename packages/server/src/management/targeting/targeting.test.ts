import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';
import { bucket } from '@vexil/engine';
import { checkReorder } from './rules.js';

const base = '/api/v1/orgs/acme/projects/web';
const rules = (flag = 'new-checkout', env = 'production') =>
  `${base}/flags/${flag}/environments/${env}/rules`;

describe.each(testDialects())('targeting rules on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let viewer: string;
  let onId: string;
  let offId: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    viewer = (await createMember(vexil, org.orgId, 'Viewer')).token;
    const flag = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
    const byKey = new Map<string, string>(
      flag.body.variations.map((v: { key: string; id: string }) => [v.key, v.id]),
    );
    onId = byKey.get('true')!;
    offId = byKey.get('false')!;
  });
  afterAll(() => vexil.close());

  const create = (body: Record<string, unknown>, flag?: string) =>
    call(vexil, 'POST', rules(flag), { token: org.token, body });
  const flagVersion = async (key = 'new-checkout') =>
    (
      await vexil.services.db
        .selectFrom('flags')
        .select('version')
        .where('key', '=', key)
        .executeTakeFirstOrThrow()
    ).version;

  it('rule 5: create answers 201 with the persisted rule, server-assigned priority and ids', async () => {
    const versionBefore = await flagVersion();
    const response = await create({
      description: 'Beta testers',
      variationId: onId,
      conditionGroups: [
        {
          operator: 'Or',
          conditions: [
            { attribute: 'email', operator: 'endswith', values: ['@acme.test'], negate: false },
            { attribute: 'plan', operator: 'IN', values: ['pro', 'team'] },
          ],
        },
      ],
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      priority: 1,
      description: 'Beta testers',
      variationId: onId,
      rolloutPercentage: null,
      userSegmentId: null,
      conditionGroups: [
        {
          operator: 'Or',
          conditions: [
            { attribute: 'email', operator: 'EndsWith', values: ['@acme.test'], negate: false },
            { attribute: 'plan', operator: 'In', values: ['pro', 'team'], negate: false },
          ],
        },
      ],
      _actions: { update: { allowed: true, reason: null } },
    });
    const group = response.body.conditionGroups[0];
    expect(response.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(group.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(group.conditions[0].id).not.toBe(group.conditions[1].id);
    expect(await flagVersion()).toBe(versionBefore + 1);

    const read = await call(vexil, 'GET', `${rules()}/${response.body.id}`, { token: viewer });
    expect(read.status).toBe(200);
    expect({ ...read.body, _actions: undefined }).toEqual({
      ...response.body,
      _actions: undefined,
    });
    expect(read.body._actions.update).toEqual({
      allowed: false,
      reason: 'requires the Member role',
    });

    const event = await vexil.services.db
      .selectFrom('webhook_events')
      .select(['payload', 'environment_id'])
      .where('type', '=', 'flag.rule.created')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(event.payload)).toMatchObject({
      entity: { type: 'flag' },
      child: { type: 'rule', id: response.body.id },
    });
    expect(event.environment_id).not.toBeNull();
  });

  it('appends new rules at the end and lists them in priority order', async () => {
    const second = await create({ variationId: offId, rolloutPercentage: 25 });
    expect(second.status).toBe(201);
    expect(second.body.priority).toBe(2);
    expect(second.body.rolloutPercentage).toBe(25);
    const list = await call(vexil, 'GET', rules(), { token: viewer });
    expect(list.status).toBe(200);
    expect(list.body.items.map((r: { priority: number }) => r.priority)).toEqual([1, 2]);
    expect(list.body.next_cursor).toBeNull();
  });

  it('an unknown operator is 400 validation_failed on its path, never dropped or defaulted', async () => {
    const response = await create({
      variationId: onId,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [
            { attribute: 'country', operator: 'Equals', values: ['NL'] },
            { attribute: 'country', operator: 'IsOneOf', values: ['NL'] },
          ],
        },
      ],
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('validation_failed');
    expect(Object.keys(response.body.fields)).toEqual(['conditionGroups.0.conditions.1.operator']);
    expect(response.body.fields['conditionGroups.0.conditions.1.operator'][0]).toMatch(/IsOneOf/);
  });

  it('values that cannot match their operator are 400 validation_failed, each on its path', async () => {
    const response = await create({
      variationId: onId,
      conditionGroups: [
        {
          conditions: [
            { attribute: 'name', operator: 'MatchesRegex', values: ['^(a+'] },
            { attribute: 'version', operator: 'SemverGreaterThan', values: ['1.x'] },
            { attribute: 'signup', operator: 'Before', values: ['yesterday'] },
            { attribute: 'age', operator: 'GreaterThan', values: ['18', 'eighteen'] },
            { attribute: '', operator: 'Equals', values: [] },
          ],
        },
        { operator: 'Xor', conditions: [] },
      ],
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('validation_failed');
    expect(Object.keys(response.body.fields).sort()).toEqual([
      'conditionGroups.0.conditions.0.values.0',
      'conditionGroups.0.conditions.1.values.0',
      'conditionGroups.0.conditions.2.values.0',
      'conditionGroups.0.conditions.3.values.1',
      'conditionGroups.0.conditions.4.attribute',
      'conditionGroups.0.conditions.4.values',
      'conditionGroups.1.operator',
    ]);
  });

  it('refuses variations of other flags, unknown segments and out-of-range percentages', async () => {
    const foreign = await create({ variationId: '01900000-0000-7000-8000-000000000000' });
    expect(foreign.status).toBe(400);
    expect(foreign.body.fields).toHaveProperty('variationId');
    const segment = await create({
      variationId: onId,
      userSegmentId: '01900000-0000-7000-8000-000000000000',
    });
    expect(segment.status).toBe(400);
    expect(segment.body.fields).toHaveProperty('userSegmentId');
    const percentage = await create({ variationId: onId, rolloutPercentage: 101 });
    expect(percentage.status).toBe(400);
    expect(percentage.body.error).toBe('validation_failed');
    const missing = await create({ description: 'no variation' });
    expect(missing.status).toBe(400);
    expect(missing.body.fields).toHaveProperty('variationId');
  });

  it('a Viewer can read rules but not change them', async () => {
    const response = await call(vexil, 'POST', rules(), {
      token: viewer,
      body: { variationId: onId },
    });
    expect(response.status).toBe(403);
  });

  it('PATCH changes the given members and keeps ids sent back; PUT replaces the rule', async () => {
    const list = await call(vexil, 'GET', rules(), { token: org.token });
    const rule = list.body.items[0];
    const patched = await call(vexil, 'PATCH', `${rules()}/${rule.id}`, {
      token: org.token,
      body: {
        description: 'Beta testers (EU)',
        conditionGroups: [
          ...rule.conditionGroups,
          {
            operator: 'and',
            conditions: [{ attribute: 'country', operator: 'in', values: ['NL'] }],
          },
        ],
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.description).toBe('Beta testers (EU)');
    expect(patched.body.variationId).toBe(onId);
    expect(patched.body.conditionGroups[0]).toEqual(rule.conditionGroups[0]);
    expect(patched.body.conditionGroups[1]).toMatchObject({
      operator: 'And',
      conditions: [{ operator: 'In' }],
    });

    const put = await call(vexil, 'PUT', `${rules()}/${rule.id}`, {
      token: org.token,
      body: { variationId: offId },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: rule.id,
      priority: rule.priority,
      description: null,
      variationId: offId,
      conditionGroups: [],
    });
    const updated = await vexil.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('type', '=', 'flag.rule.updated')
      .execute();
    expect(updated.length).toBeGreaterThanOrEqual(2);
    expect(JSON.parse(updated[0]!.payload).changes).toContainEqual(
      expect.objectContaining({ property: 'Description', to: 'Beta testers (EU)' }),
    );
  });

  it('rule 6: reorder sets priorities in the order given', async () => {
    await create({ variationId: onId, description: 'third' });
    const before = (await call(vexil, 'GET', rules(), { token: org.token })).body.items as {
      id: string;
    }[];
    const reversed = before.map((r) => r.id).reverse();
    const response = await call(vexil, 'PUT', `${rules()}/reorder`, {
      token: org.token,
      body: { ruleIds: reversed },
    });
    expect(response.status).toBe(204);
    const after = (await call(vexil, 'GET', rules(), { token: org.token })).body.items as {
      id: string;
      priority: number;
    }[];
    expect(after.map((r) => r.id)).toEqual(reversed);
    expect(after.map((r) => r.priority)).toEqual([1, 2, 3]);
  });

  it('rule 6: duplicate, omitted and unknown ids are each 400 bad_request naming the ids', async () => {
    const ids = (
      (await call(vexil, 'GET', rules(), { token: org.token })).body.items as {
        id: string;
      }[]
    ).map((r) => r.id);
    const unknown = '01900000-0000-7000-8000-00000000abcd';
    const cases: [string[], RegExp][] = [
      [[...ids, ids[0]!], new RegExp(`more than once: ${ids[0]}`)],
      [ids.slice(1), new RegExp(`missing: ${ids[0]}`)],
      [[...ids, unknown], new RegExp(`not rules of this flag in this environment: ${unknown}`)],
      [[...ids, 'not-a-rule'], /not-a-rule/],
    ];
    for (const [ruleIds, message] of cases) {
      const response = await call(vexil, 'PUT', `${rules()}/reorder`, {
        token: org.token,
        body: { ruleIds },
      });
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('bad_request');
      expect(response.body.message).toMatch(message);
    }
    const after = (await call(vexil, 'GET', rules(), { token: org.token })).body.items as {
      id: string;
    }[];
    expect(after.map((r) => r.id)).toEqual(ids);
  });

  it('DELETE answers 204 and the remaining priorities stay ordered without gaps', async () => {
    const ids = (
      (await call(vexil, 'GET', rules(), { token: org.token })).body.items as {
        id: string;
      }[]
    ).map((r) => r.id);
    const response = await call(vexil, 'DELETE', `${rules()}/${ids[1]}`, { token: org.token });
    expect(response.status).toBe(204);
    const after = (await call(vexil, 'GET', rules(), { token: org.token })).body.items as {
      id: string;
      priority: number;
    }[];
    expect(after.map((r) => [r.id, r.priority])).toEqual([
      [ids[0], 1],
      [ids[2], 2],
    ]);
    const gone = await call(vexil, 'GET', `${rules()}/${ids[1]}`, { token: org.token });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('not_found');
  });

  it('refuses rule changes on an archived flag with 400 bad_request', async () => {
    await call(vexil, 'POST', `${base}/flags`, { token: org.token, body: { key: 'old-banner' } });
    await vexil.services.db
      .updateTable('flags')
      .set({ is_archived: 1 })
      .where('key', '=', 'old-banner')
      .execute();
    const flag = await call(vexil, 'GET', `${base}/flags/old-banner`, { token: org.token });
    const response = await create({ variationId: flag.body.variations[0].id }, 'old-banner');
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('bad_request');
    const list = await call(vexil, 'GET', rules('old-banner'), { token: org.token });
    expect(list.status).toBe(200);
    expect(list.body._actions.create.allowed).toBe(false);
  });

  it('rolloutWeight: rules roll out to 0.001%, the whole rolloutPercentage reads the weight rounded down', async () => {
    const fine = await create({ variationId: onId, rolloutWeight: 12_500 });
    expect(fine.status).toBe(201);
    expect(fine.body).toMatchObject({ rolloutWeight: 12_500, rolloutPercentage: 12 });
    // A rule read back can be sent back unchanged: both fields, agreeing.
    const { id, priority, _actions, ...readBack } = fine.body;
    const put = await call(vexil, 'PUT', `${rules()}/${id}`, { token: org.token, body: readBack });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ rolloutWeight: 12_500, rolloutPercentage: 12 });
    // The spec's field alone keeps meaning whole percent.
    const whole = await call(vexil, 'PATCH', `${rules()}/${id}`, {
      token: org.token,
      body: { rolloutPercentage: 30 },
    });
    expect(whole.body).toMatchObject({ rolloutWeight: 30_000, rolloutPercentage: 30 });
    const disagree = await call(vexil, 'PATCH', `${rules()}/${id}`, {
      token: org.token,
      body: { rolloutPercentage: 13, rolloutWeight: 12_500 },
    });
    expect(disagree.status).toBe(400);
    expect(disagree.body.fields.rolloutPercentage[0]).toMatch(/agree with rolloutWeight/);
    const tooFine = await create({ variationId: onId, rolloutWeight: 100_001 });
    expect(tooFine.status).toBe(400);
    expect(tooFine.body.fields.rolloutWeight).toBeDefined();
    // SDKs receive the fine weight in the rule's serve.
    await call(vexil, 'PATCH', `${rules()}/${id}`, {
      token: org.token,
      body: { rolloutWeight: 12_345 },
    });
    const sdkKey = (
      await call(vexil, 'POST', `${base}/environments/production/sdk-keys`, {
        token: org.token,
        body: { name: 'weights', type: 'ServerSide' },
      })
    ).body.key as string;
    const configuration = await call(vexil, 'GET', '/v1/sdk/flags/new-checkout', {
      token: sdkKey,
    });
    expect(configuration.status).toBe(200);
    const served = configuration.body.rules.find((r: { id: string }) => r.id === id);
    expect(served.serve).toMatchObject({
      type: 'Rollout',
      variations: [{ key: 'true', weight: 12_345 }],
    });
    await call(vexil, 'DELETE', `${rules()}/${id}`, { token: org.token });
  });

  it('evaluation buckets by the fine weight: a context in [12%, 12.5%) is in a 12.5% rule, not in a 12% one', async () => {
    const { salt } = await vexil.services.db
      .selectFrom('flags')
      .select('salt')
      .where('key', '=', 'new-checkout')
      .executeTakeFirstOrThrow();
    let userId = '';
    for (let i = 0; userId === ''; i++) {
      const b = bucket(salt, `user-${String(i)}`);
      if (b >= 12_000 && b < 12_500) userId = `user-${String(i)}`;
    }
    const sdkKey = (
      await call(vexil, 'POST', `${base}/environments/production/sdk-keys`, {
        token: org.token,
        body: { name: 'bucketing', type: 'ServerSide' },
      })
    ).body.key as string;
    await call(vexil, 'POST', `${base}/flags/new-checkout/environments/production/toggle`, {
      token: org.token,
      body: { enabled: true },
    });
    const before = await call(vexil, 'GET', rules(), { token: org.token });
    for (const rule of before.body.items as { id: string }[])
      await call(vexil, 'DELETE', `${rules()}/${rule.id}`, { token: org.token });
    const rule = await create({ variationId: onId, rolloutWeight: 12_500 });
    const evaluate = async () =>
      (
        await call(vexil, 'POST', '/v1/sdk/evaluate', {
          token: sdkKey,
          body: { flagKey: 'new-checkout', context: { userId } },
        })
      ).body;
    expect(await evaluate()).toMatchObject({ variation: 'true', reason: 'TARGETING_MATCH' });
    await call(vexil, 'PATCH', `${rules()}/${rule.body.id}`, {
      token: org.token,
      body: { rolloutPercentage: 12 },
    });
    expect((await evaluate()).reason).not.toBe('TARGETING_MATCH');
  });
});

describe('rule 6: reorder check', () => {
  it('reports every kind of problem at once', () => {
    expect(() => checkReorder(['a', 'a', 'x'], ['a', 'b'])).toThrow(
      'listed more than once: a; missing: b; not rules of this flag in this environment: x',
    );
    expect(() => checkReorder(['b', 'a'], ['a', 'b'])).not.toThrow();
  });
});
