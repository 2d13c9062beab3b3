import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
  testWebhookSettings,
} from '../test-support/harness.js';

const HOUR = 60 * 60 * 1000;

describe.each(testDialects())('audit log on %s', (dialect) => {
  const clock = new TestClock(new Date('2026-06-01T12:00:00.000Z'));
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let admin: { token: string; userId: string };
  let projectId: string;
  let productionId: string;
  let flagId: string;
  let hookId: string;
  let testEventId: string;
  const log = '/api/v1/orgs/acme/audit-log';
  const web = '/api/v1/orgs/acme/projects/web';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, {
      clock,
      config: {
        webhooks: testWebhookSettings({ retryScheduleMs: [1000] }),
      },
    });
    org = await createOrg(vexil);
    admin = await createMember(vexil, org.orgId, 'Admin');
    await createProjectWithFlag(vexil, org);
    projectId = (await call(vexil, 'GET', web, { token: org.token })).body.id;
    productionId = (
      await call(vexil, 'GET', `${web}/environments/production`, { token: org.token })
    ).body.id;
    flagId = (await call(vexil, 'GET', `${web}/flags/new-checkout`, { token: org.token })).body.id;
    // An hour later, the Admin toggles the flag in production.
    clock.advance(HOUR);
    const toggled = await call(
      vexil,
      'POST',
      `${web}/flags/new-checkout/environments/production/toggle`,
      { token: admin.token, body: { enabled: true } },
    );
    expect(toggled.status).toBe(204);
    // A webhook and its test event: the subscription is audited, the test event is not.
    const hook = await call(vexil, 'POST', '/api/v1/orgs/acme/webhooks', {
      token: org.token,
      body: { name: 'Hook', url: 'http://127.0.0.1:9/hook' },
    });
    expect(hook.status, hook.text).toBe(201);
    const test = await call(vexil, 'POST', `/api/v1/orgs/acme/webhooks/${hook.body.id}/test`, {
      token: org.token,
    });
    expect(test.status, test.text).toBe(202);
    hookId = hook.body.id;
    testEventId = test.body.webhookEventId;
    await createOrg(vexil, 'other');
  });
  afterAll(() => vexil.close());

  it('lists every change, most recent first, with actor, entity and changes', async () => {
    const response = await call(vexil, 'GET', log, { token: org.token });
    expect(response.status, response.text).toBe(200);
    const items = response.body.items as { type: string; occurredAt: string }[];
    expect(items.length).toBeGreaterThanOrEqual(4);
    const times = items.map((item) => item.occurredAt);
    expect([...times].sort().reverse()).toEqual(times);
    const toggle = response.body.items.find(
      (item: { type: string }) => item.type === 'flag.toggled',
    );
    expect(toggle).toMatchObject({
      occurredAt: '2026-06-01T13:00:00.000Z',
      actor: { userId: admin.userId },
      entity: { type: 'flag', id: flagId },
      changes: [{ property: 'IsEnabled', from: 'false', to: 'true' }],
      projectId,
      environmentId: productionId,
      description: expect.any(String),
    });
    expect(toggle.id).toEqual(expect.any(String));
  });

  it('leaves out webhook test events, which name an entity id of their own', async () => {
    const response = await call(vexil, 'GET', `${log}?limit=200`, { token: org.token });
    const ids = response.body.items.map((item: { id: string }) => item.id);
    expect(ids).not.toContain(testEventId);
    // …though the test event was written to the outbox, naming an id that is not the nil uuid.
    const stored = await vexil.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('id', '=', testEventId)
      .executeTakeFirstOrThrow();
    const entity = (JSON.parse(stored.payload) as { entity: { id: string } }).entity;
    expect(entity.id).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  it('records creating, changing and deleting a webhook subscription and its signing secrets', async () => {
    const hooks = '/api/v1/orgs/acme/webhooks';
    const owner = { token: org.token };
    const changed = await call(vexil, 'PATCH', `${hooks}/${hookId}`, {
      ...owner,
      body: { name: 'Renamed hook', eventTypes: ['flag.toggled'] },
    });
    expect(changed.status, changed.text).toBe(200);
    const added = await call(vexil, 'POST', `${hooks}/${hookId}/secrets`, owner);
    expect(added.status, added.text).toBe(201);
    const retired = await call(
      vexil,
      'DELETE',
      `${hooks}/${hookId}/secrets/${added.body.secretId}`,
      owner,
    );
    expect(retired.status, retired.text).toBe(204);
    expect((await call(vexil, 'DELETE', `${hooks}/${hookId}`, owner)).status).toBe(204);
    const response = await call(vexil, 'GET', `${log}?type=webhook.&limit=200`, owner);
    expect(response.status, response.text).toBe(200);
    const items = [...response.body.items].reverse() as {
      type: string;
      entity: { id: string };
      child?: { id: string };
      changes: unknown[];
      actor: { userId: string };
    }[];
    expect(items.map((item) => item.type)).toEqual([
      'webhook.created',
      'webhook.secret.created',
      'webhook.updated',
      'webhook.secret.created',
      'webhook.secret.retired',
      'webhook.deleted',
    ]);
    expect(items.every((item) => item.entity.id === hookId)).toBe(true);
    expect(items[2]!.changes).toEqual([
      { property: 'name', from: 'Hook', to: 'Renamed hook' },
      { property: 'eventTypes', from: '[]', to: '["flag.toggled"]' },
    ]);
    expect(items[4]!.child).toEqual({ type: 'webhook_secret', id: added.body.secretId });
    // Audited, never delivered: no subscription receives what is done to subscriptions.
    const types = await call(vexil, 'GET', `${hooks}/event-types`, owner);
    expect(types.body).not.toContain('webhook.created');
  });

  it('filters by exact type and by prefix', async () => {
    const exact = await call(vexil, 'GET', `${log}?type=flag.toggled`, { token: org.token });
    expect(exact.body.items.map((item: { type: string }) => item.type)).toEqual(['flag.toggled']);
    const prefix = await call(vexil, 'GET', `${log}?type=flag.`, { token: org.token });
    const types = prefix.body.items.map((item: { type: string }) => item.type);
    expect(types).toContain('flag.created');
    expect(types).toContain('flag.toggled');
    expect(types.every((type: string) => type.startsWith('flag.'))).toBe(true);
    const unknown = await call(vexil, 'GET', `${log}?type=flag`, { token: org.token });
    expect(unknown.status).toBe(400);
    expect(unknown.body.fields.type).toBeDefined();
  });

  it('filters by project, environment, entity and actor', async () => {
    const get = async (query: string) =>
      (await call(vexil, 'GET', `${log}?${query}`, { token: org.token })).body.items as {
        type: string;
        projectId: string | null;
        environmentId: string | null;
      }[];
    const inProject = await get(`projectId=${projectId}`);
    expect(inProject.length).toBeGreaterThan(0);
    expect(inProject.every((item) => item.projectId === projectId)).toBe(true);
    expect((await get(`environmentId=${productionId}`)).map((item) => item.type)).toContain(
      'flag.toggled',
    );
    expect((await get(`entityId=${flagId}`)).map((item) => item.type).sort()).toEqual([
      'flag.created',
      'flag.toggled',
    ]);
    expect((await get(`actorId=${admin.userId}`)).map((item) => item.type)).toEqual([
      'flag.toggled',
    ]);
    const badId = await call(vexil, 'GET', `${log}?entityId=nope`, { token: org.token });
    expect(badId.status).toBe(400);
  });

  it('filters by time: from inclusive, to exclusive', async () => {
    const later = await call(vexil, 'GET', `${log}?from=2026-06-01T13:00:00Z`, {
      token: org.token,
    });
    expect(later.body.items.map((item: { type: string }) => item.type)).toContain('flag.toggled');
    expect(
      later.body.items.every((item: { occurredAt: string }) => item.occurredAt >= '2026-06-01T13'),
    ).toBe(true);
    // An offset is normalised to UTC: 14:30+02:00 is 12:30Z, before the toggle.
    const earlier = await call(vexil, 'GET', `${log}?to=2026-06-01T14:30:00%2B02:00`, {
      token: org.token,
    });
    const types = earlier.body.items.map((item: { type: string }) => item.type);
    expect(types).toContain('flag.created');
    expect(types).not.toContain('flag.toggled');
    const reversed = await call(
      vexil,
      'GET',
      `${log}?from=2026-06-02T00:00:00Z&to=2026-06-01T00:00:00Z`,
      { token: org.token },
    );
    expect(reversed.status).toBe(400);
  });

  it('pages with a cursor without duplicates or gaps', async () => {
    const all = (await call(vexil, 'GET', `${log}?limit=200`, { token: org.token })).body.items;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { items: { id: string }[]; next_cursor: string | null } } = await call(
        vexil,
        'GET',
        `${log}?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        { token: org.token },
      );
      seen.push(...page.body.items.map((item) => item.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.map((item: { id: string }) => item.id));
  });

  it('is per organization and for Admins', async () => {
    const member = await createMember(vexil, org.orgId, 'Member');
    const refused = await call(vexil, 'GET', log, { token: member.token });
    expect(refused.status).toBe(403);
    const other = await call(vexil, 'GET', '/api/v1/orgs/other/audit-log', {
      token: org.token,
    });
    expect(other.status).toBe(404);
  });

  it("a flag's history is open to Viewers and names variations by key, not id", async () => {
    const flag = (await call(vexil, 'GET', `${web}/flags/new-checkout`, { token: org.token })).body;
    const byKey = (key: string) =>
      flag.variations.find((v: { key: string }) => v.key === key).id as string;
    const changed = await call(
      vexil,
      'PATCH',
      `${web}/flags/new-checkout/environments/production`,
      {
        token: org.token,
        body: { defaultVariationId: byKey('false') },
      },
    );
    expect(changed.status, changed.text).toBe(200);
    const viewer = await createMember(vexil, org.orgId, 'Viewer');
    const history = await call(vexil, 'GET', `${web}/flags/new-checkout/history`, {
      token: viewer.token,
    });
    expect(history.status, history.text).toBe(200);
    expect(history.body.items.length).toBeGreaterThan(1);
    expect(
      history.body.items.every(
        (item: { entity: { id: string }; child?: { id: string } }) =>
          item.entity.id === flagId || item.child?.id === flagId,
      ),
    ).toBe(true);
    const change = history.body.items
      .flatMap((item: { changes: unknown[] }) => item.changes)
      .find((c: { property: string }) => c.property === 'DefaultVariationId');
    expect(change).toEqual({
      property: 'DefaultVariationId',
      from: byKey('true'),
      to: byKey('false'),
      fromKey: 'true',
      toKey: 'false',
    });
    // The organization's log resolves the same ids.
    const audit = await call(
      vexil,
      'GET',
      `${log}?entityId=${flagId}&type=flag.environment_config.updated`,
      {
        token: org.token,
      },
    );
    expect(audit.body.items.flatMap((item: { changes: unknown[] }) => item.changes)).toContainEqual(
      change,
    );
  });
});
