import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  callOk,
  createMember,
  createOrg,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { applyDocument } from '../writes/apply.js';
import type { ProjectDocument } from '../writes/document.js';

/**
 * A project with `staging` and `production`, a segment, a Boolean flag on in both with a rule on
 * the segment, and a String flag; `protectedEnvironments` then require change requests.
 */
async function seed(vexil: TestVexil, token: string, key: string, protectedEnvironments: string[]) {
  const base = `/api/v1/orgs/acme/projects/${key}`;
  await callOk(vexil, 'POST', '/api/v1/orgs/acme/projects', token, {
    key,
    name: key,
    // Sorted in this order: staging first.
    environments: [{ key: 'staging' }, { key: 'production' }],
  });
  const staff = await callOk(vexil, 'POST', `${base}/segments`, token, {
    key: 'staff',
    conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
  });
  const checkout = await callOk(vexil, 'POST', `${base}/flags`, token, { key: 'new-checkout' });
  await callOk(vexil, 'POST', `${base}/flags`, token, {
    key: 'banner',
    type: 'String',
    variations: [
      { key: 'red', value: 'red' },
      { key: 'green', value: 'green' },
    ],
  });
  const on = checkout.variations.find((v: { key: string }) => v.key === 'true').id as string;
  for (const env of ['staging', 'production']) {
    await callOk(vexil, 'POST', `${base}/flags/new-checkout/environments/${env}/toggle`, token, {
      enabled: true,
    });
    await callOk(vexil, 'POST', `${base}/flags/new-checkout/environments/${env}/rules`, token, {
      variationId: on,
      userSegmentId: staff.id,
    });
  }
  for (const env of protectedEnvironments)
    await callOk(vexil, 'PATCH', `${base}/environments/${env}`, token, {
      changeRequests: { required: true, approvals: 1 },
    });
  return base;
}

/** The project's document, as exported (JSON). */
async function exported(vexil: TestVexil, base: string, token: string): Promise<ProjectDocument> {
  return (await callOk(vexil, 'GET', `${base}/export?format=json`, token)) as ProjectDocument;
}

/** The document's configuration of a flag in an environment (the export writes them all). */
function configurationOf(document: ProjectDocument, flag: string, environment: string) {
  const configuration = document.flags?.find((f) => f.key === flag)?.environments?.[environment];
  if (!configuration) throw new Error(`no ${flag}@${environment} in the document`);
  return configuration;
}

/**
 * The document with new-checkout off and without its rule in staging and production, the staff
 * segment widened, banner's `green` value changed, banner tagged, and a new flag on in production.
 */
function edited(document: ProjectDocument): ProjectDocument {
  const copy = structuredClone(document);
  for (const env of ['staging', 'production']) {
    const configuration = configurationOf(copy, 'new-checkout', env);
    configuration.enabled = false;
    configuration.rules = [];
  }
  const staff = copy.segments?.find((s) => s.key === 'staff');
  staff?.conditions?.push({ attribute: 'country', operator: 'In', values: ['NL'], negate: false });
  const banner = copy.flags?.find((f) => f.key === 'banner');
  if (banner) {
    banner.tags = ['homepage'];
    banner.variations = banner.variations.map((v) =>
      v.key === 'green' ? { ...v, value: 'lime' } : v,
    );
  }
  copy.flags?.push({
    key: 'dark-mode',
    type: 'Boolean',
    variations: [
      { key: 'false', value: 'false' },
      { key: 'true', value: 'true' },
    ],
    environments: {
      production: { enabled: true, defaultVariation: 'true', offVariation: 'false' },
    },
  });
  return copy;
}

/** The webhook events of a project, oldest first. */
async function eventTypes(vexil: TestVexil) {
  const rows = await vexil.services.db
    .selectFrom('webhook_events')
    .select('type')
    .orderBy('id')
    .execute();
  return rows.map((row) => row.type);
}

describe.each(testDialects())('flags as code and change requests on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let reviewer: string;
  let orgId: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil, 'acme');
    token = org.token;
    orgId = org.orgId;
    reviewer = (await createMember(vexil, orgId, 'Member')).token;
  });
  afterAll(() => vexil.close());

  it('without a change request, a plan reaching a protected environment is refused whole, naming it and each change', async () => {
    const base = await seed(vexil, token, 'refused', ['production']);
    const before = await exported(vexil, base, token);
    const events = await eventTypes(vexil);
    // (A dry run answers the plan instead, those changes marked: values-and-policy.test.ts.)
    const refused = await call(vexil, 'POST', `${base}/apply`, {
      token,
      body: edited(before),
    });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: 'change_request_required',
      next_actions: [
        {
          method: 'POST',
          path: '/api/v1/orgs/acme/projects/refused/change-requests',
        },
      ],
    });
    expect(refused.body.message).toMatch(/environment "production" serves/);
    expect(refused.body.message).toMatch(/changeRequest=title/);
    expect(Object.keys(refused.body.fields).sort()).toEqual([
      'flags[0].variations[1]',
      'flags[1].environments.production.enabled',
      'flags[1].environments.production.rules',
      'flags[2].environments.production',
      'segments[0]',
    ]);
    expect(await exported(vexil, base, token)).toEqual(before);
    expect(await eventTypes(vexil)).toEqual(events);

    // The CLI's path (the operator, no credential) is refused alike.
    const project = await vexil.services.db
      .selectFrom('projects')
      .selectAll()
      .where('key', '=', 'refused')
      .executeTakeFirstOrThrow();
    await expect(
      applyDocument(
        vexil.services,
        {
          organizationId: orgId,
          project,
          actor: { userId: 'vexil-cli', email: null, name: 'cli' },
        },
        edited(before),
        { dryRun: false, prune: false },
      ),
    ).rejects.toMatchObject({ code: 'change_request_required' });
    expect(await exported(vexil, base, token)).toEqual(before);
  });

  it('a plan that leaves protected environments alone is applied as before', async () => {
    const base = await seed(vexil, token, 'unreached', ['production']);
    const document = await exported(vexil, base, token);
    configurationOf(document, 'new-checkout', 'staging').enabled = false;
    const result = await callOk(vexil, 'POST', `${base}/apply`, token, document);
    expect(result).toMatchObject({ applied: true, changeRequests: [] });
    expect(configurationOf(await exported(vexil, base, token), 'new-checkout', 'staging')).toEqual(
      configurationOf(document, 'new-checkout', 'staging'),
    );
  });

  it('with a change request: the rest is written, protected changes are proposed in one request, which applied brings the project to the document', async () => {
    const base = await seed(vexil, token, 'proposed', ['production']);
    const before = await exported(vexil, base, token);
    const wanted = edited(before);

    const dryRun = await callOk(
      vexil,
      'POST',
      `${base}/apply?dryRun=true&changeRequest=Checkout%20off`,
      token,
      wanted,
    );
    expect(dryRun.changeRequests).toEqual([]);
    const result = await callOk(
      vexil,
      'POST',
      `${base}/apply?changeRequest=Checkout%20off&changeRequestDescription=From%20CI`,
      token,
      wanted,
    );
    expect(result).toMatchObject({
      applied: true,
      changeRequests: [{ environmentKey: 'production', number: 1, state: 'open', changes: 4 }],
    });
    // The dry run plans what the apply does, proposed changes marked alike.
    const marks = (changes: { key: string; proposedIn?: string }[]) =>
      changes.filter((c) => c.proposedIn).map((c) => `${c.key} in ${c.proposedIn}`);
    expect(marks(result.changes)).toEqual(
      expect.arrayContaining([
        'staff in production',
        'banner/green in production',
        'new-checkout@production in production',
        'new-checkout@production#1 in production',
        'dark-mode@production in production',
      ]),
    );
    expect(new Set(marks(dryRun.changes))).toEqual(new Set(marks(result.changes)));

    // Written: staging, the tag, the new flag (off in production, as a new flag starts).
    const afterApply = await exported(vexil, base, token);
    expect(configurationOf(afterApply, 'new-checkout', 'staging')).toEqual(
      configurationOf(wanted, 'new-checkout', 'staging'),
    );
    expect(afterApply.flags?.find((f) => f.key === 'banner')?.tags).toEqual(['homepage']);
    expect(configurationOf(afterApply, 'dark-mode', 'production').enabled).toBe(false);
    // Proposed, not written: production, the segment's conditions, the variation's value.
    expect(configurationOf(afterApply, 'new-checkout', 'production')).toEqual(
      configurationOf(before, 'new-checkout', 'production'),
    );
    expect(afterApply.segments).toEqual(before.segments);
    expect(
      afterApply.flags?.find((f) => f.key === 'banner')?.variations.map((v) => v.value),
    ).toEqual(['red', 'green']);

    const request = await callOk(vexil, 'GET', `${base}/change-requests/1`, token);
    expect(request).toMatchObject({
      title: 'Checkout off',
      description: 'From CI',
      state: 'open',
      environmentKey: 'production',
    });
    expect(request.changes.map((c: { kind: string }) => c.kind).sort()).toEqual([
      'flag',
      'flag',
      'segment',
      'variations',
    ]);
    expect(request.diff.every((d: { conflict: boolean }) => !d.conflict)).toBe(true);

    await callOk(vexil, 'POST', `${base}/change-requests/1/reviews`, reviewer, {
      decision: 'approve',
    });
    await callOk(vexil, 'POST', `${base}/change-requests/1/apply`, token, {});
    const applied = await exported(vexil, base, token);
    expect(applied.segments).toEqual(wanted.segments);
    expect(applied.flags?.find((f) => f.key === 'banner')?.variations.map((v) => v.value)).toEqual([
      'red',
      'lime',
    ]);
    for (const flag of ['new-checkout', 'dark-mode'])
      expect(configurationOf(applied, flag, 'production')).toMatchObject(
        configurationOf(wanted, flag, 'production'),
      );
    const again = await callOk(vexil, 'POST', `${base}/apply?changeRequest=Again`, token, wanted);
    expect(again).toMatchObject({ applied: false, changes: [], changeRequests: [] });
  });

  it('a variation added is proposed with its set; serving it elsewhere at once is refused, nothing written', async () => {
    const base = await seed(vexil, token, 'variations', ['production']);
    const before = await exported(vexil, base, token);
    const wanted = structuredClone(before);
    const banner = wanted.flags?.find((f) => f.key === 'banner');
    banner?.variations.push({ key: 'blue', name: 'Blue', value: 'blue', description: null });
    const result = await callOk(vexil, 'POST', `${base}/apply?changeRequest=Blue`, token, wanted);
    expect(result.changes).toEqual([
      expect.objectContaining({ action: 'create', key: 'banner/blue', proposedIn: 'production' }),
    ]);
    const request = await callOk(vexil, 'GET', `${base}/change-requests/1`, token);
    expect(request.changes).toMatchObject([
      { kind: 'variations', flagKey: 'banner', variations: banner?.variations },
    ]);
    expect(await exported(vexil, base, token)).toEqual(before);

    configurationOf(wanted, 'banner', 'staging').defaultVariation = 'blue';
    const refused = await call(vexil, 'POST', `${base}/apply?changeRequest=Blue`, {
      token,
      body: wanted,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/only its change requests would create/);
    expect(Object.keys(refused.body.fields)).toEqual([
      'flags[0].environments.staging.defaultVariation',
    ]);
    expect(await exported(vexil, base, token)).toEqual(before);
  });

  it('more than 100 changes to one environment: the request is refused, nothing written', async () => {
    const base = await seed(vexil, token, 'many', []);
    const document = await exported(vexil, base, token);
    for (let i = 0; i < 101; i++)
      document.flags?.push({
        key: `flag-${String(i).padStart(3, '0')}`,
        type: 'Boolean',
        variations: [
          { key: 'false', value: 'false' },
          { key: 'true', value: 'true' },
        ],
      });
    await callOk(vexil, 'POST', `${base}/apply`, token, document);
    await callOk(vexil, 'PATCH', `${base}/environments/production`, token, {
      changeRequests: { required: true, approvals: 1 },
    });
    const before = await exported(vexil, base, token);
    const wanted = structuredClone(before);
    for (const flag of wanted.flags ?? [])
      if (flag.key.startsWith('flag-'))
        configurationOf(wanted, flag.key, 'production').enabled = true;
    configurationOf(wanted, 'banner', 'staging').enabled = true;
    const refused = await call(vexil, 'POST', `${base}/apply?changeRequest=All`, {
      token,
      body: wanted,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/change request for "production" was refused/);
    expect(refused.body.fields).toHaveProperty('changes');
    expect(await exported(vexil, base, token)).toEqual(before);
  });

  it('several protected environments: one request each, project-wide changes in the first', async () => {
    const base = await seed(vexil, token, 'both', ['staging', 'production']);
    const wanted = edited(await exported(vexil, base, token));
    const result = await callOk(vexil, 'POST', `${base}/apply?changeRequest=Both`, token, wanted);
    expect(result.changeRequests).toEqual([
      { environmentKey: 'staging', number: 1, state: 'open', changes: 3 },
      { environmentKey: 'production', number: 2, state: 'open', changes: 2 },
    ]);
    const staging = await callOk(vexil, 'GET', `${base}/change-requests/1`, token);
    expect(staging.changes.map((c: { kind: string }) => c.kind).sort()).toEqual([
      'flag',
      'segment',
      'variations',
    ]);
    const production = await callOk(vexil, 'GET', `${base}/change-requests/2`, token);
    expect(production.changes.map((c: { flagKey: string }) => c.flagKey).sort()).toEqual([
      'dark-mode',
      'new-checkout',
    ]);
  });
});
