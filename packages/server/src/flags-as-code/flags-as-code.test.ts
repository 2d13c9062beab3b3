import { evaluateAll } from '@vexil/engine';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  call,
  callOk,
  createMember,
  createOrg,
  createTestVexil,
  testDialects,
  testWebhookSettings,
  type TestVexil,
  variationIdsByKey,
} from '../test-support/harness.js';
import { applyDocument } from '../writes/apply.js';
import { documentJsonSchema } from '../writes/document.js';
import { parseDocumentText } from '../writes/validation.js';

const SOURCE = '/api/v1/orgs/acme/projects/web';
const TARGET = '/api/v1/orgs/acme/projects/copy';

/** Builds a project with segments, rules, rollouts and prerequisites through the API. */
async function seed(vexil: TestVexil, token: string): Promise<void> {
  await callOk(vexil, 'POST', '/api/v1/orgs/acme/projects', token, {
    key: 'web',
    name: 'Web',
    environments: [{ key: 'development' }, { key: 'staging' }, { key: 'production' }],
  });
  await callOk(vexil, 'POST', `${SOURCE}/segments`, token, {
    key: 'staff',
    name: 'Staff',
    conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
  });
  const checkout = await callOk(vexil, 'POST', `${SOURCE}/flags`, token, {
    key: 'new-checkout',
    tags: ['checkout'],
    metadata: { team: 'payments', ticket: 42 },
  });
  const banner = await callOk(vexil, 'POST', `${SOURCE}/flags`, token, {
    key: 'banner',
    type: 'String',
    variations: [
      { key: 'red', value: 'red' },
      { key: 'green', value: 'green' },
      { key: 'blue', value: 'blue' },
    ],
  });
  const checkoutIds = variationIdsByKey(checkout);
  const bannerIds = variationIdsByKey(banner);
  const staff = (await callOk(vexil, 'GET', `${SOURCE}/segments/staff`, token)).id as string;
  for (const env of ['staging', 'production']) {
    await callOk(vexil, 'POST', `${SOURCE}/flags/new-checkout/environments/${env}/toggle`, token, {
      enabled: true,
    });
    await callOk(vexil, 'POST', `${SOURCE}/flags/new-checkout/environments/${env}/rules`, token, {
      variationId: checkoutIds.true,
      userSegmentId: staff,
    });
    await callOk(vexil, 'POST', `${SOURCE}/flags/new-checkout/environments/${env}/rules`, token, {
      variationId: checkoutIds.true,
      rolloutWeight: 30000,
      conditionGroups: [
        {
          operator: 'Or',
          conditions: [
            { attribute: 'country', operator: 'In', values: ['NL', 'BE'] },
            { attribute: 'appVersion', operator: 'SemverGreaterThanOrEqual', values: ['2.1.0'] },
          ],
        },
      ],
    });
    await callOk(vexil, 'PATCH', `${SOURCE}/flags/banner/environments/${env}`, token, {
      strategy: 'PercentageRollout',
      rollout: [
        { variationId: bannerIds.red, weight: 50000 },
        { variationId: bannerIds.green, weight: 30000 },
        { variationId: bannerIds.blue, weight: 20000 },
      ],
      prerequisites: [{ prerequisiteFlagKey: 'new-checkout', expectedVariationKey: 'true' }],
    });
    await callOk(vexil, 'POST', `${SOURCE}/flags/banner/environments/${env}/toggle`, token, {
      enabled: true,
    });
    await callOk(vexil, 'POST', `${SOURCE}/flags/banner/environments/${env}/rules`, token, {
      variationId: bannerIds.blue,
      conditionGroups: [
        {
          conditions: [{ attribute: 'plan', operator: 'MatchesRegex', values: ['^(pro|ent)'] }],
        },
      ],
    });
  }
}

/** Every flag's value, variant and reason for each context, in each of the project's environments. */
async function evaluations(vexil: TestVexil, projectKey: string, environments: string[]) {
  const project = await vexil.services.db
    .selectFrom('projects')
    .select('id')
    .where('key', '=', projectKey)
    .executeTakeFirstOrThrow();
  const results: Record<string, unknown[]> = {};
  for (const key of environments) {
    const environment = await vexil.services.db
      .selectFrom('environments')
      .select('id')
      .where('project_id', '=', project.id)
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    const snapshot = await vexil.snapshots.get(environment.id);
    if (!snapshot) throw new Error(`no snapshot for ${key}`);
    results[key] = Array.from({ length: 200 }, (_, i) => {
      const context = {
        targetingKey: `user-${i}`,
        email: i % 7 === 0 ? `u${i}@acme.test` : `u${i}@example.test`,
        country: ['NL', 'BE', 'DE', 'US'][i % 4],
        appVersion: `${1 + (i % 3)}.${i % 5}.0`,
        plan: ['free', 'pro', 'enterprise'][i % 3],
      };
      return Object.entries(evaluateAll(snapshot.compiled, context)).map(([flag, result]) => [
        flag,
        result.value,
        result.variation,
        result.reason,
      ]);
    });
  }
  return results;
}

async function eventCount(vexil: TestVexil): Promise<number> {
  const row = await vexil.services.db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.countAll<string | number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

async function exportText(vexil: TestVexil, token: string, base = SOURCE, query = 'format=yaml') {
  const response = await call(vexil, 'GET', `${base}/export?${query}`, { token });
  expect(response.status, response.text).toBe(200);
  return response.text;
}

function applyYaml(vexil: TestVexil, token: string, base: string, yaml: string, query = '') {
  return call(vexil, 'POST', `${base}/apply${query}`, {
    token,
    body: yaml,
    headers: { 'content-type': 'application/yaml' },
  });
}

describe('the published document schema', () => {
  it('is the committed file docs/schemas/vexil-project.schema.json (run `npm run schemas`)', () => {
    const committed = readFileSync(
      new URL('../../../../docs/schemas/vexil-project.schema.json', import.meta.url),
      'utf8',
    );
    expect(committed).toBe(documentJsonSchema());
  });
});

describe.each(testDialects())('flags as code on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let source: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { config: { webhooks: testWebhookSettings() } });
    ({ token } = await createOrg(vexil));
    await seed(vexil, token);
    await callOk(vexil, 'POST', '/api/v1/orgs/acme/projects', token, {
      key: 'copy',
      name: 'Copy',
      environments: [{ key: 'development' }],
    });
    source = await exportText(vexil, token);
  }, 60_000);
  afterAll(async () => {
    await vexil.close();
  });

  it('exports the same state as byte-identical documents, YAML and JSON, by key and in order', async () => {
    expect(await exportText(vexil, token)).toBe(source);
    const json = await call(vexil, 'GET', `${SOURCE}/export`, { token });
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    expect((await call(vexil, 'GET', `${SOURCE}/export`, { token })).text).toBe(json.text);
    const byAccept = await call(vexil, 'GET', `${SOURCE}/export`, {
      token,
      headers: { accept: 'application/yaml' },
    });
    expect(byAccept.text).toBe(source);
    // The same reference on every instance: the schema file beside the document.
    expect(source.split('\n')[0]).toBe('# yaml-language-server: $schema=vexil-project.schema.json');
    const document = parse(source);
    expect(document).toEqual(json.body);
    expect(document.$schema).toBe('vexil-project.schema.json');
    // The instance also serves the published schema, without a credential.
    const schema = await call(vexil, 'GET', '/schemas/vexil-project.schema.json');
    expect(schema.status).toBe(200);
    expect(schema.text).toBe(documentJsonSchema());
    expect(document.environments.map((e: { key: string }) => e.key)).toEqual([
      'development',
      'staging',
      'production',
    ]);
    expect(document.flags.map((f: { key: string }) => f.key)).toEqual(['banner', 'new-checkout']);
    const rules = document.flags[1].environments.production.rules;
    expect(rules[0].segment).toBe('staff');
    expect(rules[1].conditionGroups[0].conditions[1].operator).toBe('SemverGreaterThanOrEqual');
    // Keys only: no database id anywhere.
    expect(source).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
  });

  it('exports only the environments asked for', async () => {
    const document = parse(
      await exportText(vexil, token, SOURCE, 'format=yaml&environment=production'),
    );
    expect(document.environments.map((e: { key: string }) => e.key)).toEqual(['production']);
    expect(Object.keys(document.flags[0].environments)).toEqual(['production']);
    const unknown = await call(vexil, 'GET', `${SOURCE}/export?environment=prod`, { token });
    expect(unknown.status).toBe(400);
    expect(unknown.body.fields.environment).toBeDefined();
  });

  it('applied to another project, evaluates identically over 200 contexts and every flag', async () => {
    const yaml = source.replace('key: web', 'key: copy');
    const dryRun = await applyYaml(vexil, token, TARGET, yaml, '?dryRun=true');
    expect(dryRun.status, dryRun.text).toBe(200);
    expect(dryRun.body.applied).toBe(false);
    expect(dryRun.body.summary.create).toBeGreaterThan(0);
    const applied = await applyYaml(vexil, token, TARGET, yaml);
    expect(applied.status, applied.text).toBe(200);
    expect(applied.body.applied).toBe(true);
    const environments = ['development', 'staging', 'production'];
    const [before, after] = [
      await evaluations(vexil, 'web', environments),
      await evaluations(vexil, 'copy', environments),
    ];
    expect(after).toEqual(before);
    // Rollouts and rules really split the contexts: the comparison is not of constants.
    const variants = new Set(
      before.production?.flatMap((row) => (row as string[][]).map((r) => r[2])),
    );
    expect(variants.size).toBeGreaterThan(3);
    // And the copy exports as the source, apart from the project's own name.
    const copy = await exportText(vexil, token, TARGET);
    expect(parse(copy).flags).toEqual(parse(source).flags);
  });

  it('applied to an empty instance (as vexil apply does: the project created too), evaluates identically', async () => {
    const empty = await createTestVexil(dialect);
    try {
      const { orgId } = await createOrg(empty);
      const target = {
        organizationId: orgId,
        project: null,
        actor: { userId: 'test', email: null, name: 'test' },
      };
      const input = parseDocumentText(source);
      const planned = await applyDocument(empty.services, target, input, {
        dryRun: true,
        prune: false,
      });
      expect(planned.changes[0]).toMatchObject({ action: 'create', kind: 'project', key: 'web' });
      expect(await empty.services.db.selectFrom('projects').selectAll().execute()).toEqual([]);
      const applied = await applyDocument(empty.services, target, input, {
        dryRun: false,
        prune: false,
      });
      expect(applied.changes).toEqual(planned.changes);
      const environments = ['development', 'staging', 'production'];
      expect(await evaluations(empty, 'web', environments)).toEqual(
        await evaluations(vexil, 'web', environments),
      );
      const project = await empty.services.db
        .selectFrom('projects')
        .selectAll()
        .executeTakeFirstOrThrow();
      const again = await applyDocument(empty.services, { ...target, project }, input, {
        dryRun: false,
        prune: false,
      });
      expect(again.changes).toEqual([]);
    } finally {
      await empty.close();
    }
  });

  it('applies the same document a second time with an empty plan and no event', async () => {
    const yaml = source.replace('key: web', 'key: copy');
    const events = await eventCount(vexil);
    const again = await applyYaml(vexil, token, TARGET, yaml);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ applied: false, changes: [] });
    expect(await eventCount(vexil)).toBe(events);
    const own = await applyYaml(vexil, token, SOURCE, source);
    expect(own.body.changes).toEqual([]);
  });

  it('reads `value: true` on a Boolean variation and `value: 2` on a Number one as their text', async () => {
    const pattern = /value: (["'])(true|false|-?\d+(?:\.\d+)?)\1/g;
    expect(source).toMatch(pattern);
    const written = source.replace(pattern, 'value: $2');
    const applied = await applyYaml(vexil, token, SOURCE, written);
    expect(applied.status, applied.text).toBe(200);
    expect(applied.body.changes).toEqual([]);
  });

  it('plans a change in a dry run without changing anything, then applies it with its events and webhook deliveries', async () => {
    const hook = await callOk(vexil, 'POST', '/api/v1/orgs/acme/webhooks', token, {
      name: 'apply',
      url: 'http://127.0.0.1:9/hook',
      provider: 'GenericHttp',
      eventTypes: [],
      projectIds: [],
      environmentIds: [],
    });
    const document = parse(source);
    document.flags[1].environments.production.enabled = false;
    document.flags[1].tags = ['checkout', 'q3'];
    document.flags[0].variations.push({ key: 'black', value: 'black' });
    const changed = JSON.stringify(document);
    const events = await eventCount(vexil);
    const plan = await call(vexil, 'POST', `${SOURCE}/apply?dryRun=true`, { token, body: changed });
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body.changes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'update', kind: 'flag', path: 'flags[1]' }),
        expect.objectContaining({
          action: 'update',
          kind: 'configuration',
          path: 'flags[1].environments.production.enabled',
        }),
        expect.objectContaining({
          action: 'create',
          kind: 'variation',
          path: 'flags[0].variations[3]',
        }),
      ]),
    );
    expect(await exportText(vexil, token)).toBe(source);
    expect(await eventCount(vexil)).toBe(events);

    const applied = await call(vexil, 'POST', `${SOURCE}/apply`, { token, body: changed });
    expect(applied.body.changes).toEqual(plan.body.changes);
    const types = (
      await vexil.services.db
        .selectFrom('webhook_events')
        .innerJoin('webhook_deliveries', 'webhook_deliveries.event_id', 'webhook_events.id')
        .select('webhook_events.type')
        .where('webhook_deliveries.subscription_id', '=', hook.id)
        .execute()
    ).map((row) => row.type);
    expect(types.sort()).toEqual(['flag.toggled', 'flag.updated', 'flag.variation.created']);
    const audit = await callOk(
      vexil,
      'GET',
      '/api/v1/orgs/acme/audit-log?type=flag.toggled',
      token,
    );
    expect(audit.items[0].description).toContain('"new-checkout" turned off in "production"');
    source = await exportText(vexil, token);
  });

  it('leaves flags and segments out of the document alone, and with prune archives and deletes them', async () => {
    const document = parse(source);
    document.flags = document.flags.filter((f: { key: string }) => f.key === 'banner');
    // A prerequisite on a flag the prune would archive is refused.
    const dangling = await call(vexil, 'POST', `${SOURCE}/apply?prune=true&dryRun=true`, {
      token,
      body: document,
    });
    expect(dangling.status).toBe(400);
    expect(dangling.body.fields['flags[0].environments.production.prerequisites[0].flag']).toEqual([
      'flag "new-checkout" is not in the document, and prune archives it',
    ]);
    document.flags[0].environments.production.prerequisites = [];
    document.flags[0].environments.staging.prerequisites = [];
    document.segments = [];
    await callOk(vexil, 'POST', `${SOURCE}/segments`, token, { key: 'unused' });
    const kept = await call(vexil, 'POST', `${SOURCE}/apply`, { token, body: document });
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.summary).toMatchObject({ archive: 0, delete: 0 });
    const pruned = await call(vexil, 'POST', `${SOURCE}/apply?prune=true`, {
      token,
      body: document,
    });
    expect(pruned.status, pruned.text).toBe(200);
    expect(pruned.body.changes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'archive', kind: 'flag', key: 'new-checkout' }),
        expect.objectContaining({ action: 'delete', kind: 'segment', key: 'unused' }),
      ]),
    );
    // The archived flag's rules still use "staff": it is kept, and the plan says why.
    expect(pruned.body.warnings.join(' ')).toContain('Segment "staff"');
    const flag = await callOk(vexil, 'GET', `${SOURCE}/flags/new-checkout`, token);
    expect(flag.isArchived).toBe(true);
    expect((await call(vexil, 'GET', `${SOURCE}/segments/unused`, { token })).status).toBe(404);
  });

  it('refuses a document with problems whole, listing every problem by its path', async () => {
    const document = parse(source);
    const banner = document.flags[0];
    banner.environments.production.rules[0].conditionGroups[0].conditions[0].values = ['(unclosed'];
    banner.environments.production.rules.push({
      variation: 'purple',
      segment: 'nobody',
      conditionGroups: [
        { conditions: [{ attribute: 'v', operator: 'SemverEquals', values: ['1.x'] }] },
      ],
    });
    banner.environments.staging.defaultVariation = 'grey';
    banner.variations.push({ key: 'pink', value: 'pink' });
    document.flags.push({
      key: 'brand-new',
      type: 'Boolean',
      variations: [{ key: 'on', value: 'yes' }],
    });
    const events = await eventCount(vexil);
    const refused = await call(vexil, 'POST', `${SOURCE}/apply`, { token, body: document });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('validation_failed');
    expect(Object.keys(refused.body.fields).sort()).toEqual([
      'flags[0].environments.production.rules[0].conditionGroups[0].conditions[0].values[0]',
      'flags[0].environments.production.rules[1].conditionGroups[0].conditions[0].values[0]',
      'flags[0].environments.production.rules[1].segment',
      'flags[0].environments.production.rules[1].variation',
      'flags[0].environments.staging.defaultVariation',
      'flags[2].variations[0].value',
    ]);
    expect(await eventCount(vexil)).toBe(events);
    expect((await call(vexil, 'GET', `${SOURCE}/flags/brand-new`, { token })).status).toBe(404);

    const shape = parse(source);
    shape.flags[0].environments.production.strategy = 'Bogus';
    shape.flags[0].colour = 'red';
    delete shape.version;
    const badShape = await applyYaml(vexil, token, SOURCE, JSON.stringify(shape));
    expect(badShape.status).toBe(400);
    expect(Object.keys(badShape.body.fields).sort()).toEqual([
      'flags[0].colour',
      'flags[0].environments.production.strategy',
      'version',
    ]);

    // A wrong shape does not hide the other problems: one run lists them all, the ones found
    // against the project included.
    const both = parse(source);
    both.flags[0].colour = 'red';
    both.flags[0].environments.production.rules[0].conditionGroups[0].conditions[0].operator =
      'Bogus';
    both.flags[0].environments.staging.defaultVariation = 'grey';
    both.flags[1].variations = 'not a list';
    both.flags.push({
      key: 'brand-new',
      type: 'Boolean',
      variations: [{ key: 'on', value: 'yes' }],
    });
    const all = await applyYaml(vexil, token, SOURCE, JSON.stringify(both));
    expect(all.status).toBe(400);
    expect(Object.keys(all.body.fields).sort()).toEqual([
      'flags[0].colour',
      'flags[0].environments.production.rules[0].conditionGroups[0].conditions[0].operator',
      'flags[0].environments.staging.defaultVariation',
      'flags[1].variations',
      'flags[2].variations[0].value',
    ]);
    const malformed = await applyYaml(vexil, token, SOURCE, 'flags: [unclosed');
    expect(malformed.status).toBe(400);
    expect(malformed.body.fields.document).toBeDefined();
  });

  it('lets a Viewer export and refuses a Viewer apply; a Member applies', async () => {
    const org = await vexil.services.db
      .selectFrom('organizations')
      .select('id')
      .where('slug', '=', 'acme')
      .executeTakeFirstOrThrow();
    const viewer = await createMember(vexil, org.id, 'Viewer');
    const member = await createMember(vexil, org.id, 'Member');
    expect((await call(vexil, 'GET', `${SOURCE}/export`, { token: viewer.token })).status).toBe(
      200,
    );
    const current = await exportText(vexil, token);
    expect((await applyYaml(vexil, viewer.token, SOURCE, current)).status).toBe(403);
    expect((await applyYaml(vexil, member.token, SOURCE, current)).status).toBe(200);
  });
});
