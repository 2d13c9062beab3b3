import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedOneOfEverything, type Fixtures } from '../test-support/one-of-everything.js';
import {
  call,
  callOk,
  createMember,
  createTestVexil,
  TestClock,
  testDialects,
  testWebhookSettings,
  type TestVexil,
} from '../test-support/harness.js';
import { readVersions } from './environment-versions.js';
import { mutate } from './mutate.js';

const web = '/api/v1/orgs/acme/projects/web';
const rules = `${web}/flags/new-checkout/environments/production/rules`;

/**
 * Every PATCH and PUT of the management API that changes a stored entity, with a body that changes
 * it: sent once it records its events, sent again (the stored values) it records none. SSO
 * connections are left out: changing one needs an identity provider to answer (they go through
 * the same rule in `db/mutate.ts`).
 */
const WRITES: {
  name: string;
  method: 'PATCH' | 'PUT';
  path: (f: Fixtures) => string;
  body: (f: Fixtures) => Record<string, unknown>;
  /** Events the first (changing) request records. */
  events: number;
}[] = [
  {
    name: 'a flag',
    method: 'PATCH',
    path: () => `${web}/flags/new-checkout`,
    body: () => ({ name: 'Checkout v2', tags: ['web'], clientSideVisible: true }),
    events: 1,
  },
  {
    name: "a flag's configuration in an environment",
    method: 'PATCH',
    path: () => `${web}/flags/new-checkout/environments/production`,
    body: (f) => ({ offVariationId: f.otherOffVariation }),
    events: 1,
  },
  {
    name: 'a variation',
    method: 'PATCH',
    path: (f) => `${web}/flags/new-checkout/variations/${f.variation}`,
    body: () => ({ name: 'Served first', description: 'The first variation' }),
    events: 1,
  },
  {
    name: 'a rule (PATCH)',
    method: 'PATCH',
    path: (f) => `${rules}/${f.rule}`,
    body: () => ({ description: 'Beta users' }),
    events: 1,
  },
  {
    name: 'a rule (PUT, a full replacement)',
    method: 'PUT',
    path: (f) => `${rules}/${f.rule}`,
    body: (f) => ({ variationId: f.otherVariation, description: 'Everyone' }),
    events: 1,
  },
  {
    name: 'a segment',
    method: 'PATCH',
    path: () => `${web}/segments/beta`,
    body: () => ({ name: 'Beta testers', conditionLogic: 'Or' }),
    events: 1,
  },
  {
    name: 'an environment',
    method: 'PATCH',
    path: () => `${web}/environments/production`,
    body: () => ({ name: 'Live', critical: true }),
    events: 1,
  },
  {
    name: 'a project',
    method: 'PATCH',
    path: () => web,
    body: () => ({ name: 'Website', description: 'The shop' }),
    events: 1,
  },
  {
    name: 'the organization',
    method: 'PATCH',
    path: () => '/api/v1/orgs/acme',
    body: () => ({ name: 'Acme Inc' }),
    events: 1,
  },
  {
    name: 'a member',
    method: 'PATCH',
    path: (f) => `/api/v1/orgs/acme/members/${f.memberId}`,
    body: () => ({ role: 'Viewer' }),
    events: 1,
  },
  {
    // Webhook subscriptions have no event type of their own: neither request records one.
    name: 'a webhook subscription',
    method: 'PATCH',
    path: (f) => `/api/v1/orgs/acme/webhooks/${f.id}`,
    body: () => ({ name: 'Renamed hook' }),
    // Its audit entry (`webhook.updated`, audit-only since issue 43).
    events: 1,
  },
];

describe.each(testDialects())(
  'a write that changes nothing on %s (design record 048)',
  (dialect) => {
    const clock = new TestClock();
    let vexil: TestVexil;
    let owner: string;
    let fixtures: Fixtures;

    beforeAll(async () => {
      vexil = await createTestVexil(dialect, {
        clock,
        config: { webhooks: testWebhookSettings() },
      });
      const seeded = await seedOneOfEverything(vexil);
      owner = seeded.owner;
      const flag = await callOk(vexil, 'GET', `${web}/flags/new-checkout`, owner);
      const configuration = await callOk(
        vexil,
        'GET',
        `${web}/flags/new-checkout/environments/production`,
        owner,
      );
      const variationIds = (flag.variations as { id: string }[]).map((variation) => variation.id);
      const org = await callOk(vexil, 'GET', '/api/v1/orgs/acme', owner);
      const member = await createMember(vexil, org.id as string, 'Member');
      fixtures = {
        ...seeded.fixtures,
        otherVariation: variationIds.find((id) => id !== seeded.fixtures.variation) ?? '',
        otherOffVariation: variationIds.find((id) => id !== configuration.offVariationId) ?? '',
        memberId: member.userId,
      };
    });
    afterAll(() => vexil.close());

    const eventCount = async () =>
      Number(
        (
          await vexil.services.db
            .selectFrom('webhook_events')
            .select((eb) => eb.fn.countAll<string | number>().as('count'))
            .executeTakeFirstOrThrow()
        ).count,
      );
    const versions = async () => {
      const environments = await vexil.services.db
        .selectFrom('environments')
        .select('id')
        .execute();
      return readVersions(
        vexil.services.db,
        environments.map((environment) => environment.id),
      );
    };

    it('a mutation whose events say nothing changed still commits its other writes', async () => {
      const org = await callOk(vexil, 'GET', '/api/v1/orgs/acme', owner);
      const before = await eventCount();
      await mutate(
        vexil.services.db,
        {
          organizationId: org.id as string,
          actor: { userId: fixtures.userId ?? '', email: null, name: null },
          now: clock.now(),
          events: vexil.services.events,
        },
        async (m) => {
          // A claim of due work, say, commits whatever the work it guards turned out to change.
          await m.trx
            .insertInto('setup_codes')
            .values({ code_hash: 'claimed', created_at: m.now })
            .execute();
          await m.emit({
            type: 'project.updated',
            entity: { type: 'project', id: org.id as string, key: 'web' },
            changes: [],
            description: 'Nothing changed',
          });
        },
      );
      expect(await eventCount()).toBe(before);
      const claimed = await vexil.services.db
        .selectFrom('setup_codes')
        .select('code_hash')
        .where('code_hash', '=', 'claimed')
        .execute();
      expect(claimed).toHaveLength(1);
    });

    it.each(WRITES)(
      '$method of $name with the stored values answers as before, records no event and bumps no version',
      async ({ method, path, body, events }) => {
        const url = path(fixtures);
        const sent = body(fixtures);
        const before = await eventCount();
        clock.advance(60_000);
        const changed = await call(vexil, method, url, { token: owner, body: sent });
        expect(changed.status, changed.text).toBe(200);
        expect(await eventCount()).toBe(before + events);

        const versionsBefore = await versions();
        clock.advance(60_000);
        const again = await call(vexil, method, url, { token: owner, body: sent });
        expect(again.status, again.text).toBe(200);
        expect(Object.keys(again.body).sort()).toEqual(Object.keys(changed.body).sort());
        expect(await eventCount()).toBe(before + events);
        expect(await versions()).toEqual(versionsBefore);
      },
    );
  },
);
