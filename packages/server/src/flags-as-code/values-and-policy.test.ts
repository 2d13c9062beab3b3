import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  call,
  callOk,
  createMember,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

// Issue 43, item 7: Json values as values, the environments' change-request policy in the
// document, and a dry run that shows what a protected environment would need.

const PROJECTS = '/api/v1/orgs/acme/projects';

/** A document as exported, read loosely: the tests change values of any JSON type. */
interface Exported {
  environments: { key: string; changeRequests?: Record<string, unknown> }[];
  flags: {
    key: string;
    variations: { key: string; value: unknown }[];
    environments: Record<string, { enabled: boolean }>;
  }[];
}

async function exported(vexil: TestVexil, token: string, project: string): Promise<Exported> {
  return (await callOk(vexil, 'GET', `${PROJECTS}/${project}/export`, token)) as Exported;
}

function apply(vexil: TestVexil, token: string, project: string, body: unknown, query = '') {
  return call(vexil, 'POST', `${PROJECTS}/${project}/apply${query}`, { token, body });
}

/** The stored values of a flag's variations, by key. */
async function storedValues(vexil: TestVexil, token: string, project: string, flag: string) {
  const body = await callOk(vexil, 'GET', `${PROJECTS}/${project}/flags/${flag}`, token);
  return Object.fromEntries(
    (body.variations as { key: string; value: string }[]).map((v) => [v.key, v.value]),
  );
}

describe.each(testDialects())('flags as code: values and policies on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let member: string;
  let admin: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil, 'acme');
    token = org.token;
    member = (await createMember(vexil, org.orgId, 'Member')).token;
    admin = (await createMember(vexil, org.orgId, 'Admin')).token;
  });
  afterAll(() => vexil.close());

  it('exports Json variation values as JSON values and applies them back (text still accepted) with an empty plan', async () => {
    await callOk(vexil, 'POST', PROJECTS, token, {
      key: 'json',
      name: 'Json',
      environments: [{ key: 'production' }],
    });
    await callOk(vexil, 'POST', `${PROJECTS}/json/flags`, token, {
      key: 'layout',
      type: 'Json',
      variations: [
        // Written with spaces: the stored text is kept when the document means the same.
        { key: 'grid', value: '{"columns": 3, "tags": ["a", "b"], "dense": false}' },
        { key: 'list', value: '[1, 2]' },
        { key: 'plain', value: '"blue"' },
        { key: 'none', value: 'null' },
      ],
    });
    const yaml = await call(vexil, 'GET', `${PROJECTS}/json/export?format=yaml`, { token });
    const document = await exported(vexil, token, 'json');
    expect(parse(yaml.text)).toEqual(document);
    expect(document.flags[0]?.variations.map((v) => v.value)).toEqual([
      { columns: 3, tags: ['a', 'b'], dense: false },
      [1, 2],
      // A JSON string stays its JSON text, so that reading it back is not ambiguous.
      '"blue"',
      null,
    ]);

    const again = await apply(vexil, token, 'json', document);
    expect(again.status, again.text).toBe(200);
    expect(again.body.changes).toEqual([]);

    const changed = structuredClone(document);
    const variations = changed.flags[0]?.variations ?? [];
    variations[0] = { key: 'grid', value: { columns: 4 } };
    variations[1] = { key: 'list', value: '[3]' };
    const applied = await apply(vexil, token, 'json', changed);
    expect(applied.status, applied.text).toBe(200);
    expect(await storedValues(vexil, token, 'json', 'layout')).toEqual({
      grid: '{"columns":4}',
      list: '[3]',
      plain: '"blue"',
      none: 'null',
    });

    // An object is still refused on a flag whose values are not JSON.
    const wrong = structuredClone(changed);
    wrong.flags.push({
      key: 'label',
      variations: [{ key: 'a', value: { not: 'text' } }],
      environments: {},
      ...{ type: 'String' },
    });
    const refused = await apply(vexil, token, 'json', wrong);
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.fields as object)).toEqual(['flags[1].variations[0].value']);
  });

  it("exports each environment's change-request policy; a project rebuilt from the document keeps review protection", async () => {
    await callOk(vexil, 'POST', PROJECTS, token, {
      key: 'guarded',
      name: 'Guarded',
      environments: [{ key: 'staging' }, { key: 'production' }],
    });
    // What production serves is set up first: rebuilt, it is written before the policy is.
    await callOk(vexil, 'POST', `${PROJECTS}/guarded/segments`, token, {
      key: 'staff',
      conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
    });
    await callOk(vexil, 'POST', `${PROJECTS}/guarded/flags`, token, { key: 'checkout' });
    await callOk(
      vexil,
      'POST',
      `${PROJECTS}/guarded/flags/checkout/environments/production/toggle`,
      token,
      { enabled: true },
    );
    await callOk(vexil, 'PATCH', `${PROJECTS}/guarded/environments/production`, token, {
      changeRequests: { required: true, approvals: 2, emergencyOff: false },
    });
    const document = await exported(vexil, token, 'guarded');
    expect(document.environments.map((e) => [e.key, e.changeRequests])).toEqual([
      ['staging', { required: false, approvals: 1, emergencyOff: true }],
      ['production', { required: true, approvals: 2, emergencyOff: false }],
    ]);

    // Rebuilt in an empty project by an Admin: the environments come with their policy.
    await callOk(vexil, 'POST', PROJECTS, token, {
      key: 'rebuilt',
      name: 'Rebuilt',
      // A project starts with an environment; the document's are created beside it.
      environments: [{ key: 'scratch' }],
    });
    const rebuilt = await apply(vexil, admin, 'rebuilt', {
      ...document,
      project: { key: 'rebuilt' },
    });
    expect(rebuilt.status, rebuilt.text).toBe(200);
    const production = await callOk(
      vexil,
      'GET',
      `${PROJECTS}/rebuilt/environments/production`,
      token,
    );
    expect(production.changeRequests).toEqual({
      required: true,
      approvals: 2,
      emergencyOff: false,
    });
    const direct = await call(
      vexil,
      'POST',
      `${PROJECTS}/rebuilt/flags/checkout/environments/production/toggle`,
      { token: member, body: { enabled: false } },
    );
    expect(direct.status).toBe(409);
    expect(direct.body.error).toBe('change_request_required');
    const copy = await exported(vexil, token, 'rebuilt');
    expect(copy.environments.filter((e) => e.key !== 'scratch')).toEqual(document.environments);
    expect(copy.flags[0]?.environments.production).toEqual(
      document.flags[0]?.environments.production,
    );
    expect(copy.flags[0]?.environments.production?.enabled).toBe(true);

    // A Member applies the document as it is, but cannot change a policy through it.
    const same = await apply(vexil, member, 'rebuilt', copy);
    expect(same.status, same.text).toBe(200);
    expect(same.body.changes).toEqual([]);
    const weakened = structuredClone(copy);
    const at = weakened.environments.findIndex((e) => e.key === 'production');
    weakened.environments[at] = { key: 'production', changeRequests: { required: false } };
    const forbidden = await apply(vexil, member, 'rebuilt', weakened);
    expect(forbidden.status).toBe(403);
    expect(Object.keys(forbidden.body.fields as object)).toEqual([
      `environments[${at}].changeRequests`,
    ]);
    // Left out, the policy is kept (documents written before it was exported do not drop it).
    const older = structuredClone(copy);
    for (const environment of older.environments) delete environment.changeRequests;
    const kept = await apply(vexil, member, 'rebuilt', older);
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.changes).toEqual([]);
    // An Admin changes it, as PATCH does.
    const changed = await apply(vexil, admin, 'rebuilt', weakened);
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.changes).toMatchObject([
      { action: 'update', kind: 'environment', key: 'production' },
    ]);
    expect(
      (await callOk(vexil, 'GET', `${PROJECTS}/rebuilt/environments/production`, token))
        .changeRequests,
    ).toEqual({ required: false, approvals: 1, emergencyOff: true });
  });

  it('a dry run reaching a protected environment answers the plan, marking what would need a change request', async () => {
    await callOk(vexil, 'POST', PROJECTS, token, {
      key: 'planned',
      name: 'Planned',
      environments: [{ key: 'staging' }, { key: 'production' }],
    });
    await callOk(vexil, 'POST', `${PROJECTS}/planned/flags`, token, { key: 'checkout' });
    await callOk(vexil, 'PATCH', `${PROJECTS}/planned/environments/production`, token, {
      changeRequests: { required: true },
    });
    const before = await exported(vexil, token, 'planned');
    const wanted = structuredClone(before);
    const checkout = wanted.flags[0];
    if (!checkout?.environments.staging || !checkout.environments.production)
      throw new Error('checkout is configured in both environments');
    checkout.environments.staging.enabled = true;
    checkout.environments.production.enabled = true;

    const plan = await apply(vexil, member, 'planned', wanted, '?dryRun=true');
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body).toMatchObject({ dryRun: true, applied: false, changeRequests: [] });
    expect(
      (plan.body.changes as { key: string; proposedIn?: string }[]).map((c) => [
        c.key,
        c.proposedIn ?? null,
      ]),
    ).toEqual([
      ['checkout@staging', null],
      ['checkout@production', 'production'],
    ]);
    expect(plan.body.warnings).toEqual([
      expect.stringMatching(/reaches "production", which requires change requests/),
    ]);
    expect(await exported(vexil, token, 'planned')).toEqual(before);
    // The apply itself is still refused whole.
    expect((await apply(vexil, member, 'planned', wanted)).status).toBe(409);
  });
});
