import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  TestClock,
  type TestVexil,
} from '../../test-support/harness.js';
import { environmentVersion } from '../../db/environment-versions.js';

const base = '/api/v1/orgs/acme/projects/web';
const segments = `${base}/segments`;

describe.each(testDialects())('segments on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let viewer: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock: new TestClock() });
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    viewer = (await createMember(vexil, org.orgId, 'Viewer')).token;
  });
  afterAll(() => vexil.close());

  const environmentVersions = async () =>
    (
      await vexil.services.db
        .selectFrom('environments')
        .select(['key', environmentVersion().as('version')])
        .orderBy('key')
        .execute()
    ).map((row) => row.version);

  it('create answers 201 with the user segment, operators in canonical casing', async () => {
    const before = await environmentVersions();
    const response = await call(vexil, 'POST', segments, {
      token: org.token,
      body: {
        key: 'beta-testers',
        name: 'Beta testers',
        description: 'People who asked for early access',
        conditions: [
          { attribute: 'email', operator: 'ENDSWITH', values: ['@acme.test'] },
          { attribute: 'plan', operator: 'notin', values: ['free'], negate: false },
        ],
      },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      key: 'beta-testers',
      name: 'Beta testers',
      description: 'People who asked for early access',
      conditionLogic: 'And',
      conditions: [
        { attribute: 'email', operator: 'EndsWith', values: ['@acme.test'], negate: false },
        { attribute: 'plan', operator: 'NotIn', values: ['free'], negate: false },
      ],
      createdAt: '2026-06-01T12:00:00.000Z',
      _actions: { delete: { allowed: true, reason: null } },
    });
    // Every environment of the project serves segments: all their versions move.
    const after = await environmentVersions();
    expect(after.map((v, i) => v - before[i]!)).toEqual(before.map(() => 1));
    const event = await vexil.services.db
      .selectFrom('webhook_events')
      .select(['payload', 'environment_id'])
      .where('type', '=', 'segment.created')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(event.payload).entity).toEqual({ type: 'segment', id: response.body.id });
    expect(event.environment_id).toBeNull();
  });

  it('rule 10: get resolves the segment by key or by id; an unknown one is 404 with did_you_mean', async () => {
    const byKey = await call(vexil, 'GET', `${segments}/beta-testers`, { token: viewer });
    expect(byKey.status).toBe(200);
    expect(byKey.body._actions.update).toEqual({
      allowed: false,
      reason: 'requires the Member role',
    });
    const byId = await call(vexil, 'GET', `${segments}/${byKey.body.id}`, { token: viewer });
    expect(byId.body.key).toBe('beta-testers');
    const missing = await call(vexil, 'GET', `${segments}/beta-tester`, { token: viewer });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: 'not_found', did_you_mean: ['beta-testers'] });
  });

  it('a duplicate key is 409 conflict; bad conditions are 400 on their path', async () => {
    const duplicate = await call(vexil, 'POST', segments, {
      token: org.token,
      body: { key: 'beta-testers' },
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({
      error: 'conflict',
      fields: { key: ['already exists'] },
    });
    const invalid = await call(vexil, 'POST', segments, {
      token: org.token,
      body: {
        key: 'bad',
        conditions: [
          { attribute: 'version', operator: 'SemverEquals', values: ['latest'] },
          { attribute: 'plan', operator: 'OneOf', values: ['pro'] },
        ],
      },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toBe('validation_failed');
    expect(Object.keys(invalid.body.fields).sort()).toEqual([
      'conditions.0.values.0',
      'conditions.1.operator',
    ]);
    const viewerCreate = await call(vexil, 'POST', segments, {
      token: viewer,
      body: { key: 'nope' },
    });
    expect(viewerCreate.status).toBe(403);
  });

  it('list is paged by key', async () => {
    await call(vexil, 'POST', segments, { token: org.token, body: { key: 'anyone-in-nl' } });
    const first = await call(vexil, 'GET', `${segments}?limit=1`, { token: viewer });
    expect(first.status).toBe(200);
    expect(first.body.items.map((s: { key: string }) => s.key)).toEqual(['anyone-in-nl']);
    const second = await call(
      vexil,
      'GET',
      `${segments}?limit=1&cursor=${first.body.next_cursor}`,
      {
        token: viewer,
      },
    );
    expect(second.body.items.map((s: { key: string }) => s.key)).toEqual(['beta-testers']);
    expect(second.body.next_cursor).toBeNull();
  });

  it('list searches key and name with q, ignoring case', async () => {
    await call(vexil, 'POST', segments, {
      token: org.token,
      body: { key: 'staff', name: 'Internal Employees' },
    });
    const keysFor = async (q: string) =>
      (
        await call(vexil, 'GET', `${segments}?q=${encodeURIComponent(q)}`, { token: viewer })
      ).body.items.map((s: { key: string }) => s.key);
    expect(await keysFor('EMPLOYEE')).toEqual(['staff']);
    expect(await keysFor('sta')).toEqual(['staff']);
    expect(await keysFor('%')).toEqual(
      (await call(vexil, 'GET', segments, { token: viewer })).body.items.map(
        (s: { key: string }) => s.key,
      ),
    );
    expect(await keysFor('nobody-by-that-name')).toEqual([]);
  });

  it('PATCH updates, bumps the segment version and emits segment.updated', async () => {
    const response = await call(vexil, 'PATCH', `${segments}/anyone-in-nl`, {
      token: org.token,
      body: {
        conditionLogic: 'Or',
        conditions: [{ attribute: 'country', operator: 'equals', values: ['NL'] }],
      },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      conditionLogic: 'Or',
      conditions: [{ attribute: 'country', operator: 'Equals', values: ['NL'], negate: false }],
    });
    const row = await vexil.services.db
      .selectFrom('segments')
      .select('version')
      .where('key', '=', 'anyone-in-nl')
      .executeTakeFirstOrThrow();
    expect(row.version).toBe(2);
    const event = await vexil.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('type', '=', 'segment.updated')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(event.payload).changes).toContainEqual(
      expect.objectContaining({ property: 'ConditionLogic', from: 'And', to: 'Or' }),
    );
  });

  it('DELETE of a segment in use is 409 naming the rules; otherwise 204', async () => {
    const segment = (await call(vexil, 'GET', `${segments}/beta-testers`, { token: org.token }))
      .body;
    const flag = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
    const rule = await call(
      vexil,
      'POST',
      `${base}/flags/new-checkout/environments/production/rules`,
      {
        token: org.token,
        body: {
          variationId: flag.body.variations[0].id,
          userSegmentId: segment.id,
          description: 'Beta testers first',
        },
      },
    );
    expect(rule.status).toBe(201);
    expect(rule.body.userSegmentId).toBe(segment.id);

    const usage = await call(vexil, 'GET', `${segments}/beta-testers/usage`, { token: viewer });
    expect(usage.status).toBe(200);
    expect(usage.body.items).toEqual([
      {
        ruleId: rule.body.id,
        // In words, as people name a rule (issue 43): its place and its description.
        rulePosition: 1,
        ruleDescription: 'Beta testers first',
        flagKey: 'new-checkout',
        flagName: flag.body.name,
        environmentKey: 'production',
        environmentName: expect.any(String),
      },
    ]);
    const unusedUsage = await call(vexil, 'GET', `${segments}/anyone-in-nl/usage`, {
      token: viewer,
    });
    expect(unusedUsage.body.items).toEqual([]);

    const refused = await call(vexil, 'DELETE', `${segments}/beta-testers`, { token: org.token });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('conflict');
    expect(refused.body.message).toContain('flag "new-checkout" in "production"');
    expect(refused.body.message).toContain(rule.body.id);

    const unused = await call(vexil, 'DELETE', `${segments}/anyone-in-nl`, { token: org.token });
    expect(unused.status).toBe(204);
    expect(
      (await call(vexil, 'GET', `${segments}/anyone-in-nl`, { token: org.token })).status,
    ).toBe(404);
    const deleted = await vexil.services.db
      .selectFrom('webhook_events')
      .select('type')
      .where('type', '=', 'segment.deleted')
      .execute();
    expect(deleted).toHaveLength(1);
  });
});
