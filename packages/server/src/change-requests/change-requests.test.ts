import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_CALL_HEADER } from '../http/mcp-call.js';
import {
  call,
  callOk,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

const project = '/api/v1/orgs/acme/projects/web';
const flag = `${project}/flags/new-checkout`;
const production = `${flag}/environments/production`;
const development = `${flag}/environments/development`;
const requests = `${project}/change-requests`;
const environmentUrl = `${project}/environments/production`;

/** The flag-environment configuration in the flags-as-code shape, on or off. */
function configuration(enabled: boolean, extra: Record<string, unknown> = {}) {
  return { enabled, defaultVariation: 'true', offVariation: 'false', ...extra };
}

describe.each(testDialects())('change requests on %s', (dialect) => {
  let vexil: TestVexil;
  let clock: TestClock;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let member: { token: string; userId: string };
  let reviewer: { token: string; userId: string };
  let second: { token: string; userId: string };
  let serviceToken: string;
  let sdkKey: string;
  let ruleId: string;

  const evaluate = async (attributes: Record<string, string> = {}) =>
    (
      await call(vexil, 'POST', '/v1/sdk/evaluate', {
        headers: { authorization: sdkKey },
        body: { flagKey: 'new-checkout', context: { userId: 'u1', attributes } },
      })
    ).body as { variation: string; reason: string };

  const revision = async () =>
    (await callOk(vexil, 'GET', production, org.token)).revision as number;

  const events = async (type?: string) => {
    const rows = await vexil.services.db
      .selectFrom('webhook_events')
      .select(['type', 'payload'])
      .orderBy('occurred_at')
      .orderBy('id')
      .execute();
    return rows
      .map((row) => JSON.parse(row.payload) as Record<string, unknown> & { type: string })
      .filter((event) => type === undefined || event.type === type);
  };

  const open = async (token: string, body: Record<string, unknown>) =>
    call(vexil, 'POST', requests, {
      token,
      body: { environment: 'production', title: 'Turn it on', submit: true, ...body },
    });

  const protect = (body: Record<string, unknown>) =>
    callOk(vexil, 'PATCH', environmentUrl, org.token, { changeRequests: body });

  beforeAll(async () => {
    clock = new TestClock();
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
    member = await createMember(vexil, org.orgId, 'Member');
    reviewer = await createMember(vexil, org.orgId, 'Member');
    second = await createMember(vexil, org.orgId, 'Member');
    serviceToken = (
      await callOk(vexil, 'POST', '/api/v1/orgs/acme/service-tokens', org.token, {
        name: 'ci',
        role: 'Admin',
      })
    ).token;
    await callOk(vexil, 'POST', `${project}/segments`, org.token, {
      key: 'beta',
      conditions: [{ attribute: 'plan', operator: 'In', values: ['beta'] }],
    });
    const variations = (await callOk(vexil, 'GET', flag, org.token)).variations as {
      key: string;
      id: string;
    }[];
    ruleId = (
      await callOk(vexil, 'POST', `${production}/rules`, org.token, {
        variationId: variations.find((v) => v.key === 'true')?.id,
        conditionGroups: [
          { conditions: [{ attribute: 'country', operator: 'In', values: ['DE'] }] },
        ],
      })
    ).id;
    await protect({ required: true, approvals: 1 });
  });
  afterAll(() => vexil.close());

  describe('the policy', () => {
    it('is read with the environment and set by an Admin only, audited as environment.updated', async () => {
      const read = await callOk(vexil, 'GET', environmentUrl, org.token);
      expect(read.changeRequests).toEqual({ required: true, approvals: 1, emergencyOff: true });
      const byMember = await call(vexil, 'PATCH', environmentUrl, {
        token: member.token,
        body: { changeRequests: { required: false } },
      });
      expect(byMember.status).toBe(403);
      const tooMany = await call(vexil, 'PATCH', environmentUrl, {
        token: org.token,
        body: { changeRequests: { approvals: 6 } },
      });
      expect(tooMany.status).toBe(400);
      const updates = await events('environment.updated');
      expect(updates.at(-1)?.changes).toEqual([
        expect.objectContaining({ property: 'ChangeRequests' }),
      ]);
    });
  });

  describe('the guard', () => {
    /** Every direct write the contract covers, on the protected environment. */
    const covered: [string, () => Promise<{ status: number; body: { error: string } }>][] = [
      [
        'toggle on',
        () =>
          call(vexil, 'POST', `${production}/toggle`, {
            token: org.token,
            body: { enabled: true },
          }),
      ],
      [
        'configuration',
        () =>
          call(vexil, 'PATCH', production, {
            token: org.token,
            body: { strategy: 'SingleVariation' },
          }),
      ],
      [
        'prerequisites',
        () => call(vexil, 'PATCH', production, { token: org.token, body: { prerequisites: [] } }),
      ],
      [
        'rule create',
        async () => {
          const variations = (await callOk(vexil, 'GET', flag, org.token)).variations as {
            id: string;
          }[];
          return call(vexil, 'POST', `${production}/rules`, {
            token: org.token,
            body: { variationId: variations[0]?.id },
          });
        },
      ],
      [
        'rule update',
        () =>
          call(vexil, 'PATCH', `${production}/rules/${ruleId}`, {
            token: org.token,
            body: { rolloutWeight: 50_000 },
          }),
      ],
      [
        'rule delete',
        () => call(vexil, 'DELETE', `${production}/rules/${ruleId}`, { token: org.token }),
      ],
      [
        'rule reorder',
        () =>
          call(vexil, 'PUT', `${production}/rules/reorder`, {
            token: org.token,
            body: { ruleIds: [ruleId] },
          }),
      ],
      [
        'copy into it',
        () =>
          call(vexil, 'POST', `${development}/copy`, {
            token: org.token,
            body: { target: 'production' },
          }),
      ],
      [
        'segment conditions',
        () =>
          call(vexil, 'PATCH', `${project}/segments/beta`, {
            token: org.token,
            body: { conditions: [{ attribute: 'plan', operator: 'In', values: ['gold'] }] },
          }),
      ],
      [
        'variation value',
        () =>
          call(vexil, 'PATCH', `${flag}/variations/true`, {
            token: org.token,
            body: { value: 'false' },
          }),
      ],
      [
        'variation create',
        () =>
          call(vexil, 'POST', `${flag}/variations`, {
            token: org.token,
            body: { key: 'maybe', value: 'true' },
          }),
      ],
      [
        'flags-as-code apply',
        async () => {
          const document = await callOk(vexil, 'GET', `${project}/export?format=json`, org.token);
          document.flags[0].environments.production.enabled = true;
          return call(vexil, 'POST', `${project}/apply`, { token: org.token, body: document });
        },
      ],
    ];

    it.each(covered)(
      'refuses %s with 409 change_request_required, whatever the credential',
      async (_name, write) => {
        const before = await revision();
        const response = await write();
        expect(response.status).toBe(409);
        expect(response.body).toMatchObject({
          error: 'change_request_required',
          next_actions: [
            { method: 'POST', path: '/api/v1/orgs/acme/projects/web/change-requests' },
          ],
        });
        expect(await revision()).toBe(before);
      },
    );

    it('refuses a service token too', async () => {
      const response = await call(vexil, 'POST', `${production}/toggle`, {
        token: serviceToken,
        body: { enabled: true },
      });
      expect(response.status).toBe(409);
      expect(response.body.error).toBe('change_request_required');
    });

    /** Writes the contract leaves uncovered, and writes to an unprotected environment. */
    const uncovered: [string, () => Promise<{ status: number }>][] = [
      [
        'flag create',
        () =>
          call(vexil, 'POST', `${project}/flags`, {
            token: org.token,
            body: { key: 'other', name: 'Other' },
          }),
      ],
      [
        'flag rename and tags',
        () =>
          call(vexil, 'PATCH', flag, {
            token: org.token,
            body: { name: 'Checkout', tags: ['web'] },
          }),
      ],
      [
        'segment create',
        () =>
          call(vexil, 'POST', `${project}/segments`, { token: org.token, body: { key: 'staff' } }),
      ],
      [
        'segment rename',
        () =>
          call(vexil, 'PATCH', `${project}/segments/beta`, {
            token: org.token,
            body: { name: 'Beta users' },
          }),
      ],
      [
        'variation rename',
        () =>
          call(vexil, 'PATCH', `${flag}/variations/true`, {
            token: org.token,
            body: { name: 'Yes' },
          }),
      ],
      [
        'environment rename',
        () => call(vexil, 'PATCH', environmentUrl, { token: org.token, body: { name: 'Prod' } }),
      ],
      [
        'environment create',
        () =>
          call(vexil, 'POST', `${project}/environments`, { token: org.token, body: { key: 'qa' } }),
      ],
      [
        'toggle elsewhere',
        () =>
          call(vexil, 'POST', `${development}/toggle`, {
            token: org.token,
            body: { enabled: true },
          }),
      ],
      [
        'archive',
        () => call(vexil, 'POST', `${project}/flags/other/archive`, { token: org.token }),
      ],
    ];

    it.each(uncovered)('lets %s through', async (_name, write) => {
      expect((await write()).status).toBeLessThan(300);
    });
  });

  describe('emergency off', () => {
    it('lets a Member turn a flag off at once, marked as a bypass in the event and the audit log; never on', async () => {
      await protect({ required: false });
      await callOk(vexil, 'POST', `${production}/toggle`, org.token, { enabled: true });
      await protect({ required: true });
      const off = await call(vexil, 'POST', `${production}/toggle`, {
        token: member.token,
        body: { enabled: false },
      });
      expect(off.status).toBe(204);
      expect((await evaluate()).reason).toBe('DISABLED');
      const toggled = (await events('flag.toggled')).at(-1);
      expect(toggled).toMatchObject({ bypassedChangeRequest: true });
      const audit = await callOk(
        vexil,
        'GET',
        '/api/v1/orgs/acme/audit-log?type=flag.toggled',
        org.token,
      );
      expect(audit.items[0]).toMatchObject({ bypassedChangeRequest: true });
      const on = await call(vexil, 'POST', `${production}/toggle`, {
        token: member.token,
        body: { enabled: true },
      });
      expect(on.status).toBe(409);
    });

    it('is refused where the policy says emergencyOff: false', async () => {
      await protect({ required: false });
      await callOk(vexil, 'POST', `${production}/toggle`, org.token, { enabled: true });
      await protect({ required: true, emergencyOff: false });
      const off = await call(vexil, 'POST', `${production}/toggle`, {
        token: member.token,
        body: { enabled: false },
      });
      expect(off.status).toBe(409);
      await protect({ required: false });
      await callOk(vexil, 'POST', `${production}/toggle`, org.token, { enabled: false });
      await protect({ required: true, emergencyOff: true });
    });

    it("says so in the configuration's _actions: no direct edits, toggle only as an emergency off", async () => {
      type Hints = Record<string, { allowed: boolean; reason: string | null }>;
      const hints = async () =>
        ((await callOk(vexil, 'GET', production, member.token)) as { _actions: Hints })._actions;
      await protect({ required: false });
      await callOk(vexil, 'POST', `${production}/toggle`, org.token, { enabled: true });
      expect(Object.values(await hints()).every((hint) => hint.allowed)).toBe(true);
      await protect({ required: true, emergencyOff: true });
      const whileOn = await hints();
      expect(whileOn['update']).toEqual({
        allowed: false,
        reason: expect.stringContaining('requires change requests'),
      });
      expect(whileOn['createRule']?.allowed).toBe(false);
      expect(whileOn['toggle']?.allowed).toBe(true);
      await protect({ required: true, emergencyOff: false });
      expect((await hints())['toggle']?.allowed).toBe(false);
      await protect({ required: false });
      await callOk(vexil, 'POST', `${production}/toggle`, org.token, { enabled: false });
      await protect({ required: true, emergencyOff: true });
      expect((await hints())['toggle']?.allowed).toBe(false);
    });
  });

  describe('a request through its states', () => {
    it('is opened, refused review by its author, a service token and /mcp, approved, applied with the events of direct writes', async () => {
      const base = await revision();
      const opened = await open(member.token, {
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: base,
            configuration: configuration(true),
          },
        ],
      });
      expect(opened.status).toBe(201);
      expect(opened.body).toMatchObject({
        state: 'open',
        approvalsRequired: 1,
        author: { userId: member.userId },
        environmentKey: 'production',
        _actions: { approve: { allowed: false }, edit: { allowed: true } },
      });
      expect(opened.body.diff[0]).toMatchObject({
        before: { enabled: false },
        after: { enabled: true },
        conflict: false,
      });
      const number = opened.body.number as number;
      const review = (token: string, headers: Record<string, string> = {}) =>
        call(vexil, 'POST', `${requests}/${number}/reviews`, {
          token,
          body: { decision: 'approve' },
          headers,
        });
      expect((await review(member.token)).status).toBe(403);
      expect((await review(serviceToken)).status).toBe(403);
      expect((await review(reviewer.token, { [MCP_CALL_HEADER]: '1' })).status).toBe(403);
      const listed = await callOk(vexil, 'GET', `${requests}?reviewable=true`, reviewer.token);
      expect(listed.items.map((item: { number: number }) => item.number)).toContain(number);

      const approved = await review(reviewer.token);
      expect(approved.status).toBe(200);
      expect(approved.body.state).toBe('approved');
      expect(
        (await callOk(vexil, 'GET', `${requests}?reviewable=true`, reviewer.token)).items,
      ).toEqual([]);

      const applied = await call(vexil, 'POST', `${requests}/${number}/apply`, {
        token: member.token,
      });
      expect(applied.status).toBe(200);
      expect(applied.body).toMatchObject({
        state: 'applied',
        appliedBy: { userId: member.userId },
      });
      expect((await evaluate()).reason).not.toBe('DISABLED');
      expect(await revision()).toBe(base + 1);
      const toggled = (await events('flag.toggled')).at(-1);
      expect(toggled).toMatchObject({
        changeRequest: { number },
        actor: { userId: member.userId },
      });
      const types = (await events())
        .map((event) => event.type)
        .filter((type) => type.startsWith('change_request.'));
      expect(types.slice(-3)).toEqual([
        'change_request.opened',
        'change_request.approved',
        'change_request.applied',
      ]);
      const audit = await callOk(
        vexil,
        'GET',
        '/api/v1/orgs/acme/audit-log?type=flag.toggled',
        org.token,
      );
      expect(audit.items[0]).toMatchObject({ changeRequest: { number } });

      const again = await call(vexil, 'POST', `${requests}/${number}/apply`, {
        token: member.token,
      });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ error: 'conflict' });
      expect(again.body.message).toContain('applied');
    });

    it('applies the same events as the same changes made directly', async () => {
      // Directly in development, through a request in production: the same kinds of events.
      const variations = (await callOk(vexil, 'GET', flag, org.token)).variations as {
        key: string;
        id: string;
      }[];
      const id = (key: string) => variations.find((v) => v.key === key)?.id;
      const mark = (await events()).length;
      await callOk(vexil, 'PATCH', development, org.token, { defaultVariationId: id('false') });
      const direct = (await events()).slice(mark).map((e) => e.type);
      const current = await callOk(vexil, 'GET', `${requests}/1`, org.token);
      expect(current.state).toBe('applied');
      const opened = await open(member.token, {
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: await revision(),
            configuration: configuration(true, { defaultVariation: 'false' }),
          },
        ],
      });
      await callOk(vexil, 'POST', `${requests}/${opened.body.number}/reviews`, reviewer.token, {
        decision: 'approve',
      });
      const before = (await events()).length;
      await callOk(vexil, 'POST', `${requests}/${opened.body.number}/apply`, member.token);
      const applied = (await events()).slice(before).map((e) => e.type);
      expect(applied).toEqual([...direct, 'change_request.applied']);
      expect((await evaluate()).variation).toBe('false');
    });

    it('queues the webhook deliveries of each applied event for each subscription that covers it', async () => {
      const subscribe = async (eventTypes: string[]) =>
        (
          await callOk(vexil, 'POST', '/api/v1/orgs/acme/webhooks', org.token, {
            name: `Hook ${eventTypes.join(' ') || 'all'}`,
            url: 'https://93.184.215.14/hooks/vexil',
            provider: 'GenericHttp',
            eventTypes,
          })
        ).id as string;
      const everything = await subscribe([]);
      const toggles = await subscribe(['flag.toggled']);
      const current = await callOk(vexil, 'GET', production, org.token);
      const variations = (await callOk(vexil, 'GET', flag, org.token)).variations as {
        key: string;
        id: string;
      }[];
      const serving = variations.find((v) => v.id === current.defaultVariationId)?.key;
      expect(serving).toBeDefined();
      const opened = await open(member.token, {
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: await revision(),
            configuration: configuration(current.isEnabled !== true, {
              defaultVariation: serving === 'true' ? 'false' : 'true',
            }),
          },
        ],
      });
      await callOk(vexil, 'POST', `${requests}/${opened.body.number}/reviews`, reviewer.token, {
        decision: 'approve',
      });
      const stored = () =>
        vexil.services.db
          .selectFrom('webhook_events')
          .select(['id', 'type'])
          .orderBy('occurred_at')
          .orderBy('id')
          .execute();
      const mark = (await stored()).length;
      await callOk(vexil, 'POST', `${requests}/${opened.body.number}/apply`, member.token);
      const applied = (await stored()).slice(mark);
      const deliveries = await vexil.services.db
        .selectFrom('webhook_deliveries')
        .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
        .select(['webhook_deliveries.subscription_id', 'webhook_events.type'])
        .where(
          'webhook_events.id',
          'in',
          applied.map((event) => event.id),
        )
        .orderBy('webhook_events.id')
        .execute();
      const deliveredTo = (subscription: string) =>
        deliveries.filter((d) => d.subscription_id === subscription).map((d) => d.type);
      expect(applied.map((event) => event.type)).toEqual([
        'flag.environment_config.updated',
        'flag.toggled',
        'change_request.applied',
      ]);
      expect(deliveredTo(everything)).toEqual(applied.map((event) => event.type));
      expect(deliveredTo(toggles)).toEqual(['flag.toggled']);
    });

    it('takes edits back to review (approvals withdrawn), rejects, cancels and unschedules as the table says', async () => {
      await protect({ required: true, approvals: 2 });
      const opened = await open(member.token, {
        submit: false,
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: await revision(),
            configuration: configuration(false),
          },
        ],
      });
      expect(opened.body).toMatchObject({ state: 'draft', approvalsRequired: 2 });
      const number = opened.body.number as number;
      const url = `${requests}/${number}`;
      expect(
        (
          await call(vexil, 'POST', `${url}/reviews`, {
            token: reviewer.token,
            body: { decision: 'approve' },
          })
        ).body.message,
      ).toContain('draft');
      expect((await call(vexil, 'POST', `${url}/submit`, { token: reviewer.token })).status).toBe(
        403,
      );
      expect((await callOk(vexil, 'POST', `${url}/submit`, member.token)).state).toBe('open');
      await callOk(vexil, 'POST', `${url}/reviews`, reviewer.token, { decision: 'approve' });
      const twice = await call(vexil, 'POST', `${url}/reviews`, {
        token: reviewer.token,
        body: { decision: 'approve' },
      });
      expect(twice.status).toBe(409);
      const edited = await callOk(vexil, 'PATCH', url, member.token, { title: 'Turn it off' });
      expect(edited.state).toBe('open');
      expect(edited.reviews).toEqual([expect.objectContaining({ withdrawn: true })]);
      expect(
        (await call(vexil, 'PATCH', url, { token: reviewer.token, body: { title: 'x' } })).status,
      ).toBe(403);
      await callOk(vexil, 'POST', `${url}/reviews`, reviewer.token, { decision: 'approve' });
      const approved = await callOk(vexil, 'POST', `${url}/reviews`, second.token, {
        decision: 'approve',
      });
      expect(approved.state).toBe('approved');
      const applyAt = new Date(clock.now().getTime() + 3_600_000)
        .toISOString()
        .replace('Z', '+00:00');
      expect(
        (await call(vexil, 'POST', `${url}/apply`, { token: reviewer.token, body: { applyAt } }))
          .status,
      ).toBe(403);
      const scheduled = await callOk(vexil, 'POST', `${url}/apply`, member.token, { applyAt });
      expect(scheduled).toMatchObject({
        state: 'scheduled',
        applyAt: new Date(applyAt).toISOString(),
      });
      expect((await callOk(vexil, 'DELETE', `${url}/schedule`, org.token)).state).toBe('approved');
      const rejected = await callOk(vexil, 'POST', `${url}/reviews`, reviewer.token, {
        decision: 'reject',
        comment: 'not now',
      });
      expect(rejected.state).toBe('rejected');
      const cancel = await call(vexil, 'POST', `${url}/cancel`, { token: member.token });
      expect(cancel.status).toBe(409);
      expect(cancel.body.message).toContain('rejected');

      const other = await open(member.token, {
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: await revision(),
            configuration: configuration(false),
          },
        ],
      });
      expect(
        (
          await call(vexil, 'POST', `${requests}/${other.body.number}/cancel`, {
            token: reviewer.token,
          })
        ).status,
      ).toBe(403);
      expect(
        (await callOk(vexil, 'POST', `${requests}/${other.body.number}/cancel`, org.token)).state,
      ).toBe('cancelled');
      const eventTypes = (await events()).map((e) => e.type);
      expect(eventTypes).toContain('change_request.rejected');
      expect(eventTypes).toContain('change_request.cancelled');
      expect(eventTypes).toContain('change_request.scheduled');
      await protect({ required: true, approvals: 1 });
    });
  });

  describe('segment and variation changes', () => {
    it('apply project-wide through a request, with their revisions moved and their events naming it', async () => {
      await callOk(vexil, 'POST', `${project}/flags`, org.token, {
        key: 'banner',
        type: 'String',
        variations: [
          { key: 'a', value: 'hello' },
          { key: 'b', value: 'bye' },
        ],
      });
      const banner = await callOk(vexil, 'GET', `${project}/flags/banner`, org.token);
      const segment = await callOk(vexil, 'GET', `${project}/segments/beta`, org.token);
      const opened = await open(member.token, {
        changes: [
          {
            kind: 'variations',
            flagKey: 'banner',
            baseRevision: banner.variationsRevision,
            variations: [
              { key: 'a', value: 'hi' },
              { key: 'b', value: 'bye' },
              { key: 'c', value: 'ciao' },
            ],
          },
          {
            kind: 'segment',
            segmentKey: 'beta',
            baseRevision: segment.revision,
            definition: {
              conditions: [{ attribute: 'plan', operator: 'In', values: ['gold'] }],
            },
          },
        ],
      });
      expect(opened.status).toBe(201);
      expect(opened.body.diff[1].before).toMatchObject({
        conditions: [expect.objectContaining({ values: ['beta'] })],
      });
      const number = opened.body.number as number;
      await callOk(vexil, 'POST', `${requests}/${number}/reviews`, reviewer.token, {
        decision: 'approve',
      });
      const before = (await events()).length;
      await callOk(vexil, 'POST', `${requests}/${number}/apply`, member.token);
      const applied = (await events()).slice(before);
      expect(applied.map((event) => event.type)).toEqual([
        'segment.updated',
        'flag.variation.updated',
        'flag.variation.created',
        'change_request.applied',
      ]);
      for (const event of applied) expect(event).toMatchObject({ changeRequest: { number } });
      const after = await callOk(vexil, 'GET', `${project}/flags/banner`, org.token);
      expect(after.variations.map((v: { value: string }) => v.value)).toEqual([
        'hi',
        'bye',
        'ciao',
      ]);
      expect(after.variationsRevision).toBe(banner.variationsRevision + 1);
      const updated = await callOk(vexil, 'GET', `${project}/segments/beta`, org.token);
      expect(updated.revision).toBe(segment.revision + 1);
      expect(updated.conditions[0].values).toEqual(['gold']);
    });
  });

  describe('every state a request can be cancelled or rejected from', () => {
    /** A request brought to `state` by its author (Member) and the reviewer. */
    const reach = async (state: 'draft' | 'open' | 'approved' | 'scheduled') => {
      const opened = await open(member.token, {
        submit: state !== 'draft',
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: await revision(),
            configuration: configuration(false),
          },
        ],
      });
      const url = `${requests}/${opened.body.number}`;
      if (state === 'approved' || state === 'scheduled')
        await callOk(vexil, 'POST', `${url}/reviews`, reviewer.token, { decision: 'approve' });
      if (state === 'scheduled')
        await callOk(vexil, 'POST', `${url}/apply`, member.token, {
          applyAt: new Date(clock.now().getTime() + 3_600_000).toISOString(),
        });
      expect((await callOk(vexil, 'GET', url, org.token)).state).toBe(state);
      return url;
    };

    it.each(['draft', 'open', 'approved', 'scheduled'] as const)(
      'cancels from %s, with change_request.cancelled',
      async (state) => {
        const url = await reach(state);
        const cancelled = await callOk(vexil, 'POST', `${url}/cancel`, member.token);
        expect(cancelled.state).toBe('cancelled');
        expect((await events('change_request.cancelled')).at(-1)).toMatchObject({
          entity: { type: 'change_request', id: cancelled.id },
        });
      },
    );

    it.each(['open', 'approved', 'scheduled'] as const)(
      'rejects from %s, and nothing is applied',
      async (state) => {
        const url = await reach(state);
        const rejected = await callOk(vexil, 'POST', `${url}/reviews`, second.token, {
          decision: 'reject',
          comment: 'no',
        });
        expect(rejected).toMatchObject({
          state: 'rejected',
          reviews: expect.arrayContaining([
            expect.objectContaining({ decision: 'reject', comment: 'no' }),
          ]),
        });
        expect((await call(vexil, 'POST', `${url}/apply`, { token: member.token })).status).toBe(
          409,
        );
      },
    );

    it('refuses a review of a draft, naming its state', async () => {
      const url = await reach('draft');
      const review = await call(vexil, 'POST', `${url}/reviews`, {
        token: reviewer.token,
        body: { decision: 'reject' },
      });
      expect(review.status).toBe(409);
      expect(review.body.message).toContain('draft');
    });
  });

  describe('conflicts', () => {
    it('refuses the whole apply naming the change in conflict, writes nothing, and shows it in the diff', async () => {
      const base = await revision();
      const segment = await callOk(vexil, 'GET', `${project}/segments/beta`, org.token);
      const opened = await open(member.token, {
        changes: [
          {
            kind: 'segment',
            segmentKey: 'beta',
            baseRevision: segment.revision,
            definition: { conditions: [{ attribute: 'plan', operator: 'In', values: ['gold'] }] },
          },
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: base - 1,
            configuration: configuration(false),
          },
        ],
      });
      expect(opened.status).toBe(201);
      expect(opened.body.diff.map((d: { conflict: boolean }) => d.conflict)).toEqual([false, true]);
      await callOk(vexil, 'POST', `${requests}/${opened.body.number}/reviews`, reviewer.token, {
        decision: 'approve',
      });
      const applied = await call(vexil, 'POST', `${requests}/${opened.body.number}/apply`, {
        token: member.token,
      });
      expect(applied.status).toBe(409);
      expect(applied.body.error).toBe('change_request_conflict');
      expect(Object.keys(applied.body.fields)).toEqual(['changes[1]']);
      expect((await callOk(vexil, 'GET', `${project}/segments/beta`, org.token)).revision).toBe(
        segment.revision,
      );
      expect(
        (await callOk(vexil, 'GET', `${requests}/${opened.body.number}`, org.token)).state,
      ).toBe('approved');
    });
  });

  describe('bad input', () => {
    const base = { kind: 'flag', flagKey: 'new-checkout', baseRevision: 1 };
    it.each([
      ['an unknown kind', [{ kind: 'rocket' }], 'changes[0].kind'],
      [
        'a malformed configuration',
        [{ ...base, configuration: { enabled: 'yes' } }],
        'changes[0].configuration.enabled',
      ],
      [
        'an unknown variation',
        [{ ...base, configuration: configuration(true, { defaultVariation: 'maybe-not' }) }],
        'changes[0].configuration.defaultVariation',
      ],
      [
        'an unknown flag',
        [{ ...base, flagKey: 'nope', configuration: configuration(true) }],
        'changes[0]',
      ],
      ['more than 100 changes', Array.from({ length: 101 }, () => base), 'changes'],
      ['no change', [], 'changes'],
    ])('refuses %s with 400 naming the path, storing nothing', async (_name, changes, path) => {
      const count = (await callOk(vexil, 'GET', requests, org.token)).items.length;
      const response = await open(member.token, { changes });
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.fields ?? {})).toContain(path);
      expect((await callOk(vexil, 'GET', requests, org.token)).items.length).toBe(count);
    });

    it.each([
      ['in the past', '2020-01-01T00:00:00+00:00'],
      ['without an offset', '2030-01-01T00:00:00'],
      ['not a date', 'tomorrow'],
    ])('refuses applyAt %s', async (_name, applyAt) => {
      const response = await open(member.token, {
        applyAt,
        changes: [{ ...base, configuration: configuration(true) }],
      });
      expect(response.status).toBe(400);
      expect(response.body.fields).toHaveProperty('applyAt');
    });

    it('numbers requests per project and replays a create with the same Idempotency-Key', async () => {
      const body = {
        environment: 'production',
        title: 'Idempotent',
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: await revision(),
            configuration: configuration(true),
          },
        ],
      };
      const first = await call(vexil, 'POST', requests, {
        token: member.token,
        body,
        headers: { 'idempotency-key': 'cr-1' },
      });
      const retry = await call(vexil, 'POST', requests, {
        token: member.token,
        body,
        headers: { 'idempotency-key': 'cr-1' },
      });
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body.number).toBe(first.body.number);
      const mine = await callOk(
        vexil,
        'GET',
        `${requests}?author=me&state=draft&environment=production`,
        member.token,
      );
      expect(mine.items.map((item: { number: number }) => item.number)).toContain(
        first.body.number,
      );
    });
  });
});
