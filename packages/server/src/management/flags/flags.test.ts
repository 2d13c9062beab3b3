import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

describe.each(testDialects())('flags on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const base = '/api/v1/orgs/acme/projects/web';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  it('walkthrough: create, toggle, evaluate', async () => {
    const key = await call(vexil, 'POST', `${base}/environments/production/sdk-keys`, {
      token: org.token,
      body: { name: 'k', type: 'ServerSide' },
    });
    const evaluate = () =>
      call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: key.body.key,
        body: { flagKey: 'new-checkout', context: { userId: 'u1' } },
      });
    expect((await evaluate()).body).toEqual({
      key: 'new-checkout',
      variation: 'false',
      value: false,
      reason: 'DISABLED',
    });
    const toggle = await call(
      vexil,
      'POST',
      `${base}/flags/new-checkout/environments/production/toggle`,
      { token: org.token, body: { enabled: true } },
    );
    expect(toggle.status).toBe(204);
    expect((await evaluate()).body).toEqual({
      key: 'new-checkout',
      variation: 'true',
      value: true,
      reason: 'DEFAULT',
    });
  });

  it('toggle to the current state answers 204 and records no event', async () => {
    const toggle = (enabled: boolean) =>
      call(vexil, 'POST', `${base}/flags/new-checkout/environments/development/toggle`, {
        token: org.token,
        body: { enabled },
      });
    const events = async () =>
      Number(
        (
          await vexil.services.db
            .selectFrom('webhook_events')
            .select((eb) => eb.fn.countAll<string | number>().as('count'))
            .executeTakeFirstOrThrow()
        ).count,
      );
    expect((await toggle(true)).status).toBe(204);
    const afterChange = await events();
    expect((await toggle(true)).status).toBe(204);
    expect(await events()).toBe(afterChange);
    expect((await toggle(false)).status).toBe(204);
    expect(await events()).toBe(afterChange + 1);
  });

  it('toggle: a null or missing enabled is validation_failed, never false', async () => {
    for (const body of [{ enabled: null }, {}, { enabled: 'true' }]) {
      const response = await call(
        vexil,
        'POST',
        `${base}/flags/new-checkout/environments/production/toggle`,
        { token: org.token, body },
      );
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('validation_failed');
      expect(response.body.fields).toHaveProperty('enabled');
    }
  });

  it('removalPrUrl takes http(s) links only: javascript: and data: are 400 naming the field', async () => {
    for (const url of ['javascript:alert(1)', 'JavaScript://%0aalert(1)', 'data:text/html,x']) {
      const created = await call(vexil, 'POST', `${base}/flags`, {
        token: org.token,
        body: { key: 'link-flag', name: 'Link', removalPrUrl: url },
      });
      expect(created.status, url).toBe(400);
      expect(created.body.fields.removalPrUrl).toContain('must be an http:// or https:// URL');
      const patched = await call(vexil, 'PATCH', `${base}/flags/new-checkout`, {
        token: org.token,
        body: { removalPrUrl: url },
      });
      expect(patched.status, url).toBe(400);
      expect(patched.body.fields).toHaveProperty('removalPrUrl');
    }
    const linked = await call(vexil, 'PATCH', `${base}/flags/new-checkout`, {
      token: org.token,
      body: { removalPrUrl: 'https://github.com/acme/web/pull/42' },
    });
    expect(linked.status, linked.text).toBe(200);
    expect(linked.body.removalPrUrl).toBe('https://github.com/acme/web/pull/42');
  });

  it('a duplicate flag key is 409 conflict naming the field', async () => {
    const response = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key: 'new-checkout' },
    });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ error: 'conflict', fields: { key: ['already exists'] } });
  });

  it('an unknown flag is 404 with did_you_mean', async () => {
    const response = await call(vexil, 'GET', `${base}/flags/new-chekout`, { token: org.token });
    expect(response.status).toBe(404);
    expect(response.body.did_you_mean).toEqual(['new-checkout']);
    expect(response.body.docs_url).toMatch(/\/docs\/errors#not_found$/);
  });
});

describe.each(testDialects())('flag resources on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const base = '/api/v1/orgs/acme/projects/web';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  it('flag create: typed variations are checked against the type', async () => {
    const bad = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: {
        key: 'limit',
        type: 'Number',
        variations: [
          { key: 'low', value: '10' },
          { key: 'high', value: 'lots' },
        ],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.fields).toHaveProperty(['variations.1.value']);
    const noVariations = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key: 'copy', type: 'String' },
    });
    expect(noVariations.status).toBe(400);
    const good = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: {
        key: 'theme',
        type: 'Json',
        tags: ['ui'],
        variations: [
          { key: 'dark', value: '{"bg":"#000"}' },
          { key: 'light', value: '{"bg":"#fff"}' },
        ],
        offVariationKey: 'dark',
      },
    });
    expect(good.status).toBe(201);
    expect(good.body).toMatchObject({
      key: 'theme',
      type: 'Json',
      tags: ['ui'],
      isArchived: false,
      owner: null,
      offVariationKey: 'dark',
    });
    expect(good.body.variations.map((v: { key: string }) => v.key)).toEqual(['dark', 'light']);
  });

  describe('the off variation of a new flag (design record 021)', () => {
    const create = (body: Record<string, unknown>) =>
      call(vexil, 'POST', `${base}/flags`, { token: org.token, body });
    const offVariationKeys = async (flag: string) => {
      const detail = await call(vexil, 'GET', `${base}/flags/${flag}`, { token: org.token });
      const keyOf = new Map<string, string>(
        detail.body.variations.map((v: { id: string; key: string }) => [v.id, v.key]),
      );
      const configurations = await call(vexil, 'GET', `${base}/flags/${flag}/environments`, {
        token: org.token,
      });
      return configurations.body.map((c: { offVariationId: string }) =>
        keyOf.get(c.offVariationId),
      );
    };
    const colors = ['red', 'green', 'blue'].map((key) => ({ key, value: key }));

    it('a flag with several variations, not Boolean, serves its first unless it names one', async () => {
      const unnamed = await create({ key: 'color', type: 'String', variations: colors });
      expect(unnamed.status).toBe(201);
      expect(unnamed.body.offVariationKey).toBe('red');
      expect(await offVariationKeys('color')).toEqual(['red', 'red']);
      const unknown = await create({
        key: 'color-2',
        type: 'String',
        variations: colors,
        offVariationKey: 'pink',
      });
      expect(unknown.body.fields).toEqual({
        offVariationKey: ['must be the key of one of the variations (red, green, blue)'],
      });
      const named = await create({
        key: 'color-2',
        type: 'String',
        variations: colors,
        offVariationKey: 'green',
      });
      expect(named.status).toBe(201);
      expect(named.body.offVariationKey).toBe('green');
      expect(await offVariationKeys('color-2')).toEqual(['green', 'green']);
    });

    it('a Boolean flag serves false while off; a flag with one variation, that one', async () => {
      const boolean = await create({ key: 'dark-mode' });
      expect(boolean.body.offVariationKey).toBe('false');
      // Listed false first: still the false variation, not the last.
      const reversed = await create({
        key: 'reversed',
        variations: [
          { key: 'no', value: 'false' },
          { key: 'yes', value: 'true' },
        ],
      });
      expect(reversed.body.offVariationKey).toBe('no');
      expect(await offVariationKeys('reversed')).toEqual(['no', 'no']);
      const single = await create({
        key: 'greeting',
        type: 'String',
        variations: [{ key: 'hello', value: 'Hello' }],
      });
      expect(single.body.offVariationKey).toBe('hello');
    });

    it("a new environment takes each flag's off variation from the project's first environment", async () => {
      await create({ key: 'size', type: 'String', variations: colors, offVariationKey: 'blue' });
      const created = await call(vexil, 'POST', `${base}/environments`, {
        token: org.token,
        body: { key: 'staging', name: 'Staging' },
      });
      expect(created.status).toBe(201);
      expect(await offVariationKeys('size')).toEqual(['blue', 'blue', 'blue']);
    });
  });

  it('flag list: filters by tag and search, paged', async () => {
    const byTag = await call(vexil, 'GET', `${base}/flags?tag=ui`, { token: org.token });
    expect(byTag.body.items.map((f: { key: string }) => f.key)).toEqual(['theme']);
    const bySearch = await call(vexil, 'GET', `${base}/flags?q=CHECK`, { token: org.token });
    expect(bySearch.body.items.map((f: { key: string }) => f.key)).toEqual(['new-checkout']);
    const page = await call(vexil, 'GET', `${base}/flags?limit=1`, { token: org.token });
    expect(page.body.items).toHaveLength(1);
    expect(page.body.next_cursor).toEqual(expect.any(String));
  });

  it('flag list: filters by type, on/off per environment, owner, keys; sorts before paging', async () => {
    const list = async (query: string, token = org.token) => {
      const response = await call(vexil, 'GET', `${base}/flags?${query}`, { token });
      expect(response.status).toBe(200);
      return response.body.items.map((f: { key: string }) => f.key);
    };
    await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key: 'mine', ownerId: org.userId },
    });
    await call(vexil, 'POST', `${base}/flags/mine/environments/production/toggle`, {
      token: org.token,
      body: { enabled: true },
    });
    const all = await list('sort=key');
    expect(all).toEqual([...all].sort());
    expect(all).toEqual(expect.arrayContaining(['mine', 'new-checkout', 'theme']));
    const everything = await call(vexil, 'GET', `${base}/flags?sort=key`, { token: org.token });
    const strings = everything.body.items
      .filter((f: { type: string }) => f.type === 'String')
      .map((f: { key: string }) => f.key);
    expect(strings.length).toBeGreaterThan(0);
    expect(strings.length).toBeLessThan(all.length);
    expect(await list('type=String&sort=key')).toEqual(strings);
    expect(await list('environment=production&enabled=true')).toEqual(['mine']);
    // Each item says whether it is on in every environment, in the project's order.
    const mine = everything.body.items.find((f: { key: string }) => f.key === 'mine');
    expect(mine.environments).toEqual([
      { environmentKey: 'development', isEnabled: false },
      { environmentKey: 'staging', isEnabled: false },
      { environmentKey: 'production', isEnabled: true },
    ]);
    expect(await list('environment=production&enabled=false&sort=key')).toEqual(
      all.filter((key: string) => key !== 'mine'),
    );
    expect(await list('owner=me')).toEqual(['mine']);
    expect(await list('keys=theme,mine,unknown&sort=key')).toEqual(['mine', 'theme']);
    // Newest first, and the order holds across pages.
    const first = await call(vexil, 'GET', `${base}/flags?sort=created&limit=1`, {
      token: org.token,
    });
    expect(first.body.items[0].key).toBe('mine');
    const second = await call(
      vexil,
      'GET',
      `${base}/flags?sort=created&limit=1&cursor=${first.body.next_cursor}`,
      { token: org.token },
    );
    expect(second.body.items[0].key).not.toBe('mine');

    const noEnvironment = await call(vexil, 'GET', `${base}/flags?enabled=true`, {
      token: org.token,
    });
    expect(noEnvironment.status).toBe(400);
    expect(noEnvironment.body.fields).toHaveProperty('environment');
    const unknown = await call(vexil, 'GET', `${base}/flags?environment=nowhere&enabled=true`, {
      token: org.token,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.fields.environment[0]).toMatch(/no environment "nowhere"/);
    await call(vexil, 'DELETE', `${base}/flags/mine`, { token: org.token });
  });

  it('flag update emits changes; owner must be an org member', async () => {
    const updated = await call(vexil, 'PATCH', `${base}/flags/theme`, {
      token: org.token,
      body: { name: 'Theme', ownerId: org.userId, clientSideVisible: true },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'Theme',
      clientSideVisible: true,
      owner: { id: org.userId },
    });
    const stranger = await call(vexil, 'PATCH', `${base}/flags/theme`, {
      token: org.token,
      body: { ownerId: '0190a9b2-0000-7000-8000-000000000000' },
    });
    expect(stranger.status).toBe(400);
    expect(stranger.body.fields).toHaveProperty('ownerId');
  });

  it('variation create is re-read after persisting; duplicates 409; deleting a served variation 409', async () => {
    const created = await call(vexil, 'POST', `${base}/flags/theme/variations`, {
      token: org.token,
      body: { key: 'contrast', name: 'High contrast', value: '{"bg":"#ff0"}', description: null },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      key: 'contrast',
      name: 'High contrast',
      value: '{"bg":"#ff0"}',
      description: null,
    });
    expect(created.body._actions).toBeDefined();
    const duplicate = await call(vexil, 'POST', `${base}/flags/theme/variations`, {
      token: org.token,
      body: { key: 'contrast', value: '{}' },
    });
    expect(duplicate.status).toBe(409);
    const served = await call(vexil, 'DELETE', `${base}/flags/theme/variations/dark`, {
      token: org.token,
    });
    expect(served.status).toBe(409);
    expect(
      (await call(vexil, 'DELETE', `${base}/flags/theme/variations/contrast`, { token: org.token }))
        .status,
    ).toBe(204);
  });

  it('environment configuration: update validates variations, rollout weights and prerequisites', async () => {
    const flag = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
    const [on, off] = flag.body.variations.map((v: { id: string }) => v.id);
    const url = `${base}/flags/new-checkout/environments/production`;
    const badSum = await call(vexil, 'PATCH', url, {
      token: org.token,
      body: {
        strategy: 'PercentageRollout',
        rollout: [
          { variationId: on, weight: 50000 },
          { variationId: off, weight: 40000 },
        ],
      },
    });
    expect(badSum.status).toBe(400);
    expect(badSum.body.fields).toHaveProperty('rollout');
    const foreign = await call(vexil, 'PATCH', url, {
      token: org.token,
      body: { defaultVariationId: '0190a9b2-0000-7000-8000-000000000000' },
    });
    expect(foreign.status).toBe(400);
    const good = await call(vexil, 'PATCH', url, {
      token: org.token,
      body: {
        strategy: 'PercentageRollout',
        rollout: [
          { variationId: on, weight: 25000 },
          { variationId: off, weight: 75000 },
        ],
        offVariationId: off,
      },
    });
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({
      environmentKey: 'production',
      strategy: 'PercentageRollout',
      offVariationId: off,
    });
    const unknownPrerequisite = await call(vexil, 'PATCH', url, {
      token: org.token,
      body: { prerequisites: [{ prerequisiteFlagKey: 'nope', expectedVariationKey: 'true' }] },
    });
    expect(unknownPrerequisite.status).toBe(400);
    const self = await call(vexil, 'PATCH', url, {
      token: org.token,
      body: {
        prerequisites: [{ prerequisiteFlagKey: 'new-checkout', expectedVariationKey: 'true' }],
      },
    });
    expect(self.status).toBe(400);
  });

  it('prerequisite cycles are refused on write', async () => {
    await call(vexil, 'POST', `${base}/flags`, { token: org.token, body: { key: 'a' } });
    await call(vexil, 'POST', `${base}/flags`, { token: org.token, body: { key: 'b' } });
    const first = await call(vexil, 'PATCH', `${base}/flags/a/environments/production`, {
      token: org.token,
      body: { prerequisites: [{ prerequisiteFlagKey: 'b', expectedVariationKey: 'true' }] },
    });
    expect(first.status).toBe(200);
    const cycle = await call(vexil, 'PATCH', `${base}/flags/b/environments/production`, {
      token: org.token,
      body: { prerequisites: [{ prerequisiteFlagKey: 'a', expectedVariationKey: 'true' }] },
    });
    expect(cycle.status).toBe(400);
    expect(cycle.body.error).toBe('validation_failed');
    // Reported at the prerequisite that leads into the cycle, so a form can show it there.
    expect(cycle.body.fields['prerequisites.0.prerequisiteFlagKey'][0]).toMatch(/cycle/i);
  });

  it('flag delete: refused with 409 while another flag has it as a prerequisite', async () => {
    await call(vexil, 'POST', `${base}/flags`, { token: org.token, body: { key: 'base-flag' } });
    await call(vexil, 'POST', `${base}/flags`, { token: org.token, body: { key: 'dependent' } });
    const linked = await call(vexil, 'PATCH', `${base}/flags/dependent/environments/development`, {
      token: org.token,
      body: { prerequisites: [{ prerequisiteFlagKey: 'base-flag', expectedVariationKey: 'true' }] },
    });
    expect(linked.status).toBe(200);
    const refused = await call(vexil, 'DELETE', `${base}/flags/base-flag`, { token: org.token });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('dependent (development)');
    expect((await call(vexil, 'GET', `${base}/flags/base-flag`, { token: org.token })).status).toBe(
      200,
    );
    await call(vexil, 'PATCH', `${base}/flags/dependent/environments/development`, {
      token: org.token,
      body: { prerequisites: [] },
    });
    expect(
      (await call(vexil, 'DELETE', `${base}/flags/base-flag`, { token: org.token })).status,
    ).toBe(204);
  });

  it('flag delete: Admin only, then 404', async () => {
    await call(vexil, 'POST', `${base}/flags`, { token: org.token, body: { key: 'doomed' } });
    expect((await call(vexil, 'DELETE', `${base}/flags/doomed`, { token: org.token })).status).toBe(
      204,
    );
    expect((await call(vexil, 'GET', `${base}/flags/doomed`, { token: org.token })).status).toBe(
      404,
    );
  });
});

describe.each(testDialects())('flag expiry on %s', (dialect) => {
  const base = '/api/v1/orgs/acme/projects/web';

  async function setUp(flagExpirationEnabled: boolean) {
    const clock = new TestClock();
    const vexil = await createTestVexil(dialect, { clock, config: { flagExpirationEnabled } });
    const org = await createOrg(vexil);
    const { sdkKey } = await createProjectWithFlag(vexil, org, {
      flag: { expiresAtUtc: '2026-06-02T00:00:00.000Z' },
    });
    await call(vexil, 'POST', `${base}/flags/new-checkout/environments/production/toggle`, {
      token: org.token,
      body: { enabled: true },
    });
    return { vexil, org, clock, sdkKey };
  }

  it('a passed expiry surfaces in detail, list and _actions, and never changes evaluation', async () => {
    const { vexil, org, clock, sdkKey } = await setUp(true);
    try {
      const evaluate = () =>
        call(vexil, 'POST', '/v1/sdk/evaluate', {
          token: sdkKey,
          body: { flagKey: 'new-checkout', context: { userId: 'u' } },
        });
      const before = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
      expect(before.body.isExpired).toBe(false);
      expect(before.body._actions.removeExpiry).toEqual({ allowed: true, reason: null });
      const served = (await evaluate()).body;

      clock.advance(2 * 24 * 3600 * 1000);
      const after = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
      expect(after.body.isExpired).toBe(true);
      const expired = await call(vexil, 'GET', `${base}/flags?expired=true`, { token: org.token });
      expect(expired.body.items.map((f: { key: string }) => f.key)).toEqual(['new-checkout']);
      const live = await call(vexil, 'GET', `${base}/flags?expired=false`, { token: org.token });
      expect(live.body.items).toEqual([]);
      expect((await evaluate()).body).toEqual(served);

      const removed = await call(vexil, 'DELETE', `${base}/flags/new-checkout/expiry`, {
        token: org.token,
      });
      expect(removed.status).toBe(204);
      const cleared = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
      expect(cleared.body).toMatchObject({ expiresAtUtc: null, isExpired: false });
      expect(cleared.body._actions.removeExpiry.allowed).toBe(false);
    } finally {
      await vexil.close();
    }
  });

  it('with flag expiration switched off nothing is expired, and expiry delete is still allowed', async () => {
    const { vexil, org, clock } = await setUp(false);
    try {
      clock.advance(2 * 24 * 3600 * 1000);
      const flag = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
      expect(flag.body).toMatchObject({
        isExpired: false,
        expiresAtUtc: '2026-06-02T00:00:00.000Z',
      });
      const removed = await call(vexil, 'DELETE', `${base}/flags/new-checkout/expiry`, {
        token: org.token,
      });
      expect(removed.status).toBe(204);
    } finally {
      await vexil.close();
    }
  });
});

describe.each(testDialects())('flag metadata on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let sdkKey: string;
  const base = '/api/v1/orgs/acme/projects/web';
  const flagUpdates = async () =>
    (
      await vexil.services.db
        .selectFrom('webhook_events')
        .select('payload')
        .where('type', '=', 'flag.updated')
        .orderBy('id')
        .execute()
    ).map((row) => JSON.parse(row.payload) as { changes: unknown[] });
  const sdkFlag = async (key: string) =>
    (await call(vexil, 'GET', `/v1/sdk/flags/${key}`, { token: sdkKey })).body;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
  });
  afterAll(() => vexil.close());

  it('is set at create, returned in the detail and served to SDKs; {} when none is given', async () => {
    const metadata = { version: '1.0.2', replicas: 2, ratio: 0.1, audited: true };
    const created = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key: 'with-metadata', metadata },
    });
    expect(created.status).toBe(201);
    expect(created.body.metadata).toEqual(metadata);
    const detail = await call(vexil, 'GET', `${base}/flags/with-metadata`, { token: org.token });
    expect(detail.body.metadata).toEqual(metadata);
    expect((await sdkFlag('with-metadata')).metadata).toEqual(metadata);

    const plain = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token: org.token });
    expect(plain.body.metadata).toEqual({});
    // Omitted, not {}: documents of flags without metadata are as they were before it existed.
    expect(await sdkFlag('new-checkout')).not.toHaveProperty('metadata');
  });

  it('update replaces it, emits the change, and bumps the flag version SDKs see', async () => {
    const before = await sdkFlag('with-metadata');
    const updated = await call(vexil, 'PATCH', `${base}/flags/with-metadata`, {
      token: org.token,
      body: { metadata: { version: '1.0.3' } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.metadata).toEqual({ version: '1.0.3' });
    const after = await sdkFlag('with-metadata');
    expect(after.metadata).toEqual({ version: '1.0.3' });
    expect(after.version).toBe(before.version + 1);
    expect((await flagUpdates()).at(-1)?.changes).toEqual([
      {
        property: 'Metadata',
        from: '{"audited":true,"ratio":0.1,"replicas":2,"version":"1.0.2"}',
        to: '{"version":"1.0.3"}',
      },
    ]);

    // The same metadata again (keys in any order) is no change for SDKs.
    await call(vexil, 'PATCH', `${base}/flags/with-metadata`, {
      token: org.token,
      body: { metadata: { version: '1.0.3' }, name: 'With metadata' },
    });
    expect((await sdkFlag('with-metadata')).version).toBe(after.version);
    expect((await flagUpdates()).at(-1)?.changes).toEqual([
      { property: 'Name', from: null, to: 'With metadata' },
    ]);

    const cleared = await call(vexil, 'PATCH', `${base}/flags/with-metadata`, {
      token: org.token,
      body: { metadata: {} },
    });
    expect(cleared.body.metadata).toEqual({});
    expect(await sdkFlag('with-metadata')).not.toHaveProperty('metadata');
  });

  it('is validated at the edge with field-level errors, on create and update', async () => {
    const tooMany = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i]));
    const cases: [unknown, string][] = [
      [tooMany, 'metadata'],
      [{ ['k'.repeat(65)]: 1 }, 'metadata'],
      [{ '': 1 }, 'metadata'],
      [{ note: 'x'.repeat(513) }, 'metadata.note'],
      [{ nested: { a: 1 } }, 'metadata.nested'],
      [{ list: [1] }, 'metadata.list'],
      [{ nothing: null }, 'metadata.nothing'],
      ['1.0.2', 'metadata'],
    ];
    for (const [metadata, field] of cases) {
      for (const [method, url, extra] of [
        ['POST', `${base}/flags`, { key: 'refused' }],
        ['PATCH', `${base}/flags/with-metadata`, {}],
      ] as const) {
        const response = await call(vexil, method, url, {
          token: org.token,
          body: { ...extra, metadata },
        });
        expect(response.status, `${method} ${JSON.stringify(metadata)}`).toBe(400);
        expect(response.body.error).toBe('validation_failed');
        expect(response.body.fields, JSON.stringify(metadata)).toHaveProperty([field]);
      }
    }
    // JSON can spell a number too large for a double: it would be stored as null.
    const infinite = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: '{"key":"refused","metadata":{"huge":1e999}}',
    });
    expect(infinite.status).toBe(400);
    expect(infinite.body.fields).toEqual({ 'metadata.huge': ['must be a finite number'] });
    // Nothing was half-written.
    const refused = await call(vexil, 'GET', `${base}/flags/refused`, { token: org.token });
    expect(refused.status).toBe(404);
    const kept = await call(vexil, 'GET', `${base}/flags/with-metadata`, { token: org.token });
    expect(kept.body.metadata).toEqual({});
  });
});
