import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../node/full-node.js';
import { openDatabase } from '../db/database.js';
import {
  call,
  callOk,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testConfig,
  TestClock,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../test-support/harness.js';

const project = '/api/v1/orgs/acme/projects/web';
const flag = `${project}/flags/new-checkout`;
const requests = `${project}/change-requests`;
const MINUTE = 60_000;

/** A node's `now` plus `ms`, as RFC 3339 with a +02:00 offset (stored in UTC). */
function inZone(clock: TestClock, ms: number): string {
  const at = new Date(clock.now().getTime() + ms + 2 * 60 * MINUTE);
  return at.toISOString().replace('Z', '+02:00');
}

async function eventTypes(vexil: Vexil, type: string): Promise<Record<string, unknown>[]> {
  const rows = await vexil.services.db
    .selectFrom('webhook_events')
    .select('payload')
    .where('type', '=', type)
    .orderBy('occurred_at')
    .execute();
  return rows.map((row) => JSON.parse(row.payload) as Record<string, unknown>);
}

/**
 * What applying request `id` wrote, counted twice: its `change_request.applied` events, and the
 * configuration changes naming it in the audit log (`flag.` entries; the owner's `token` reads it).
 */
async function appliedCount(
  vexil: Vexil,
  token: string,
  id: unknown,
): Promise<{ applied: number; audited: number }> {
  const applied = (await eventTypes(vexil, 'change_request.applied')).filter(
    (event) => (event.entity as { id: string }).id === id,
  ).length;
  const log = await callOk(vexil, 'GET', '/api/v1/orgs/acme/audit-log?type=flag.&limit=200', token);
  const audited = (log.items as { changeRequest?: { id: string } }[]).filter(
    (entry) => entry.changeRequest?.id === id,
  ).length;
  return { applied, audited };
}

/** The production configuration of the flag: on or off, and the key of its default variation. */
async function served(vexil: Vexil, token: string, environment: string) {
  const keys = Object.fromEntries(
    Object.entries(
      variationIdsByKey(
        (await callOk(vexil, 'GET', flag, token)) as { variations: { key: string; id: string }[] },
      ),
    ).map(([key, id]) => [id, key]),
  );
  const read = await callOk(vexil, 'GET', `${flag}/environments/${environment}`, token);
  return {
    enabled: read.isEnabled as boolean,
    defaultVariation: keys[read.defaultVariationId as string],
  };
}

/** The project, a Member author, a reviewer, and a request maker for one environment. */
async function setUp(vexil: TestVexil) {
  const org = await createOrg(vexil);
  await createProjectWithFlag(vexil, org);
  const author = await createMember(vexil, org.orgId, 'Member');
  const reviewer = await createMember(vexil, org.orgId, 'Member');
  const revision = async (environment: string) =>
    (await callOk(vexil, 'GET', `${flag}/environments/${environment}`, org.token))
      .revision as number;
  const propose = async (
    environment: string,
    enabled: boolean,
    extra: Record<string, unknown> = {},
  ) =>
    callOk(vexil, 'POST', requests, author.token, {
      environment,
      title: `Turn ${enabled ? 'on' : 'off'} in ${environment}`,
      submit: true,
      changes: [
        {
          kind: 'flag',
          flagKey: 'new-checkout',
          baseRevision: await revision(environment),
          configuration: { enabled, defaultVariation: 'true', offVariation: 'false' },
        },
      ],
      ...extra,
    });
  return { org, author, reviewer, revision, propose };
}

describe.each(testDialects())('scheduled change requests on %s', (dialect) => {
  let vexil: TestVexil;
  let clock: TestClock;
  let ctx: Awaited<ReturnType<typeof setUp>>;

  beforeAll(async () => {
    clock = new TestClock();
    vexil = await createTestVexil(dialect, { clock });
    ctx = await setUp(vexil);
    await callOk(vexil, 'PATCH', `${project}/environments/production`, ctx.org.token, {
      changeRequests: { required: true, approvals: 2 },
    });
  });
  afterAll(() => vexil.close());

  it('is scheduled at once where no approval is required, and applied once when its time comes', async () => {
    const created = await ctx.propose('development', true, { applyAt: inZone(clock, 10 * MINUTE) });
    expect(created).toMatchObject({ state: 'scheduled', approvalsRequired: 0 });
    expect(created.applyAt).toBe(new Date(clock.now().getTime() + 10 * MINUTE).toISOString());
    await vexil.dueWork.runOnce();
    expect((await callOk(vexil, 'GET', `${requests}/${created.number}`, ctx.org.token)).state).toBe(
      'scheduled',
    );
    clock.advance(10 * MINUTE);
    await vexil.dueWork.runOnce();
    await vexil.dueWork.runOnce();
    const applied = await callOk(vexil, 'GET', `${requests}/${created.number}`, ctx.org.token);
    expect(applied).toMatchObject({ state: 'applied', appliedBy: { service: 'schedule' } });
    const done = (await eventTypes(vexil, 'change_request.applied')).filter(
      (event) => (event.entity as { id: string }).id === created.id,
    );
    expect(done).toHaveLength(1);
    const toggled = (await eventTypes(vexil, 'flag.toggled')).at(-1);
    expect(toggled).toMatchObject({
      changeRequest: { number: created.number },
      actor: { userId: ctx.author.userId },
    });
  });

  it('applies an approved request whose time has passed on approval', async () => {
    const created = await ctx.propose('production', true, { applyAt: inZone(clock, MINUTE) });
    expect(created.state).toBe('open');
    clock.advance(2 * MINUTE);
    const url = `${requests}/${created.number}/reviews`;
    await callOk(vexil, 'POST', url, ctx.reviewer.token, { decision: 'approve' });
    const approved = await callOk(vexil, 'POST', url, ctx.org.token, { decision: 'approve' });
    expect(approved.state).toBe('applied');
  });

  it('fails a scheduled request that no longer applies, writing nothing, and says why', async () => {
    const created = await ctx.propose('development', false, { applyAt: inZone(clock, MINUTE) });
    // A direct change meanwhile: the request was written against an older revision.
    await callOk(vexil, 'PATCH', `${flag}/environments/development`, ctx.org.token, {
      strategy: 'SingleVariation',
    });
    const before = await ctx.revision('development');
    clock.advance(MINUTE);
    await vexil.dueWork.runOnce();
    const failed = await callOk(vexil, 'GET', `${requests}/${created.number}`, ctx.org.token);
    expect(failed).toMatchObject({
      state: 'failed',
      failure: { code: 'change_request_conflict' },
      diff: [{ conflict: true }],
    });
    expect(await ctx.revision('development')).toBe(before);
    const events = await eventTypes(vexil, 'change_request.failed');
    expect(events.map((event) => (event.entity as { id: string }).id)).toEqual([created.id]);
  });

  it('two approvals at once: approved once', async () => {
    const created = await ctx.propose('production', false);
    const second = await createMember(vexil, ctx.org.orgId, 'Member');
    const url = `${requests}/${created.number}/reviews`;
    const answers = await Promise.all(
      [ctx.reviewer.token, second.token].map((token) =>
        call(vexil, 'POST', url, { token, body: { decision: 'approve' } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const read = await callOk(vexil, 'GET', `${requests}/${created.number}`, ctx.org.token);
    expect(read.state).toBe('approved');
    const approvals = (await eventTypes(vexil, 'change_request.approved')).filter(
      (event) => (event.entity as { id: string }).id === created.id,
    );
    expect(approvals).toHaveLength(1);
    await callOk(vexil, 'POST', `${requests}/${created.number}/cancel`, ctx.author.token);
  });

  it.each([
    [
      'a cancel',
      (number: number, token: string) =>
        call(vexil, 'POST', `${requests}/${number}/cancel`, { token }),
    ],
    [
      'an edit',
      (number: number, token: string) =>
        call(vexil, 'PATCH', `${requests}/${number}`, { token, body: { title: 'Edited' } }),
    ],
  ])('the schedule racing %s: exactly one outcome, applied at most once', async (_name, act) => {
    const created = await ctx.propose('development', true, { applyAt: inZone(clock, MINUTE) });
    clock.advance(MINUTE);
    const before = (await eventTypes(vexil, 'change_request.applied')).length;
    const [, answer] = await Promise.all([
      vexil.dueWork.runOnce(),
      act(created.number, ctx.author.token),
    ]);
    const read = await callOk(vexil, 'GET', `${requests}/${created.number}`, ctx.org.token);
    const applied = (await eventTypes(vexil, 'change_request.applied')).length - before;
    if (read.state === 'applied') {
      expect(answer.status).toBe(409);
      expect(applied).toBe(1);
    } else {
      expect(answer.status).toBe(200);
      expect(applied).toBe(0);
      // Whatever it became, a later pass does not apply it behind the edit's or cancel's back.
      await vexil.dueWork.runOnce();
      expect((await eventTypes(vexil, 'change_request.applied')).length - before).toBe(0);
    }
  });

  it('apply racing a cancel: exactly one wins', async () => {
    await callOk(vexil, 'PATCH', `${project}/environments/production`, ctx.org.token, {
      changeRequests: { approvals: 1 },
    });
    const created = await ctx.propose('production', true);
    await callOk(vexil, 'POST', `${requests}/${created.number}/reviews`, ctx.reviewer.token, {
      decision: 'approve',
    });
    const answers = await Promise.all([
      call(vexil, 'POST', `${requests}/${created.number}/apply`, { token: ctx.author.token }),
      call(vexil, 'POST', `${requests}/${created.number}/cancel`, { token: ctx.author.token }),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    const read = await callOk(vexil, 'GET', `${requests}/${created.number}`, ctx.org.token);
    expect(['applied', 'cancelled']).toContain(read.state);
  });

  it.each([
    ['its title', () => Promise.resolve({ title: 'Edited while it applies' })],
    [
      'its changes',
      async () => ({
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: await ctx.revision('production'),
            configuration: {
              enabled: !(await served(vexil, ctx.org.token, 'production')).enabled,
              defaultVariation: 'false',
              offVariation: 'false',
            },
          },
        ],
      }),
    ],
  ])(
    'a manual apply racing an edit of %s: one outcome, only approved content applied, at most once',
    async (_name, edit) => {
      await callOk(vexil, 'PATCH', `${project}/environments/production`, ctx.org.token, {
        changeRequests: { approvals: 1 },
      });
      const before = await served(vexil, ctx.org.token, 'production');
      const created = await ctx.propose('production', !before.enabled);
      const url = `${requests}/${created.number}`;
      await callOk(vexil, 'POST', `${url}/reviews`, ctx.reviewer.token, { decision: 'approve' });
      const body = await edit();
      const [apply, edited] = await Promise.all([
        call(vexil, 'POST', `${url}/apply`, { token: ctx.author.token }),
        call(vexil, 'PATCH', url, { token: ctx.author.token, body }),
      ]);
      expect([apply.status, edited.status].sort()).toEqual([200, 409]);
      const read = await callOk(vexil, 'GET', url, ctx.org.token);
      const count = await appliedCount(vexil, ctx.org.token, created.id);
      if (apply.status === 200) {
        // The approved content, exactly: the edit came too late and changed nothing.
        expect(read).toMatchObject({ state: 'applied', title: created.title });
        expect(read.changes).toEqual(created.changes);
        expect(await served(vexil, ctx.org.token, 'production')).toEqual({
          enabled: !before.enabled,
          defaultVariation: 'true',
        });
        expect(count).toEqual({ applied: 1, audited: 1 });
        return;
      }
      // The edit won: back to review, its approval withdrawn, nothing applied.
      expect(apply.body.error).toBe('conflict');
      expect(read.state).toBe('open');
      expect(read.reviews).toEqual([expect.objectContaining({ withdrawn: true })]);
      expect(await served(vexil, ctx.org.token, 'production')).toEqual(before);
      expect(count).toEqual({ applied: 0, audited: 0 });
      const again = await call(vexil, 'POST', `${url}/apply`, { token: ctx.author.token });
      expect(again.status).toBe(409);
      await callOk(vexil, 'POST', `${url}/cancel`, ctx.author.token);
    },
  );
});

describe('scheduled change requests across nodes on PostgreSQL', () => {
  let first: TestVexil;
  let second: Vexil;
  let clock: TestClock;
  let ctx: Awaited<ReturnType<typeof setUp>>;

  const node = (databaseUrl: string) =>
    createVexil(testConfig({ databaseUrl }), {
      database: openDatabase(databaseUrl),
      clock,
      logger: false,
      startWorkers: false,
    });

  beforeAll(async () => {
    clock = new TestClock();
    first = await createTestVexil('postgres', { clock });
    second = await node(first.databaseUrl);
    ctx = await setUp(first);
  });
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  it('two nodes passing at once apply a due request once', async () => {
    const created = await ctx.propose('development', true, { applyAt: inZone(clock, MINUTE) });
    clock.advance(MINUTE);
    await Promise.all([first.dueWork.runOnce(), second.dueWork.runOnce()]);
    const applied = (await eventTypes(first, 'change_request.applied')).filter(
      (event) => (event.entity as { id: string }).id === created.id,
    );
    expect(applied).toHaveLength(1);
    expect(await eventTypes(first, 'flag.toggled')).toHaveLength(1);
  });

  it('after a restart, an overdue request is applied once by the node that comes back', async () => {
    const created = await ctx.propose('development', false, { applyAt: inZone(clock, MINUTE) });
    await second.close();
    clock.advance(60 * MINUTE);
    second = await node(first.databaseUrl);
    await second.dueWork.runOnce();
    await second.dueWork.runOnce();
    const read = await callOk(second, 'GET', `${requests}/${created.number}`, ctx.org.token);
    expect(read.state).toBe('applied');
    const applied = (await eventTypes(first, 'change_request.applied')).filter(
      (event) => (event.entity as { id: string }).id === created.id,
    );
    expect(applied).toHaveLength(1);
  });

  it('applying by hand on one node racing the schedule on another: applied once', async () => {
    const before = await served(first, ctx.org.token, 'development');
    const created = await ctx.propose('development', !before.enabled, {
      applyAt: inZone(clock, MINUTE),
    });
    expect(created.state).toBe('scheduled');
    clock.advance(MINUTE);
    const url = `${requests}/${created.number}`;
    // The author takes it off the schedule and applies it now, on the first node, while the
    // second node's pass finds it due.
    const byHand = async () => {
      const unscheduled = await call(first, 'DELETE', `${url}/schedule`, {
        token: ctx.author.token,
      });
      const applied = await call(first, 'POST', `${url}/apply`, { token: ctx.author.token });
      return [unscheduled.status, applied.status];
    };
    const [statuses] = await Promise.all([byHand(), second.dueWork.runOnce()]);
    const read = await callOk(first, 'GET', url, ctx.org.token);
    expect(read.state).toBe('applied');
    expect(read.appliedBy).toEqual(
      statuses?.[1] === 200
        ? expect.objectContaining({ userId: ctx.author.userId })
        : { service: 'schedule' },
    );
    expect([
      [200, 200],
      [409, 409],
    ]).toContainEqual(statuses);
    expect(await served(first, ctx.org.token, 'development')).toEqual({
      enabled: !before.enabled,
      defaultVariation: 'true',
    });
    expect(await appliedCount(first, ctx.org.token, created.id)).toEqual({
      applied: 1,
      audited: 1,
    });
  });

  it('the last approval of an overdue request on one node racing the schedule on another: applied once', async () => {
    await callOk(first, 'PATCH', `${project}/environments/production`, ctx.org.token, {
      changeRequests: { required: true, approvals: 1 },
    });
    const before = await served(first, ctx.org.token, 'production');
    const created = await ctx.propose('production', !before.enabled, {
      applyAt: inZone(clock, MINUTE),
    });
    expect(created.state).toBe('open');
    clock.advance(MINUTE);
    // The approving node applies it at once (it is overdue); the other node's passes may find it
    // scheduled in between.
    const passes = async () => {
      for (let pass = 0; pass < 5; pass += 1) await second.dueWork.runOnce();
    };
    const [approved] = await Promise.all([
      callOk(first, 'POST', `${requests}/${created.number}/reviews`, ctx.reviewer.token, {
        decision: 'approve',
      }),
      passes(),
    ]);
    expect(approved.state).toBe('applied');
    expect(await served(first, ctx.org.token, 'production')).toEqual({
      enabled: !before.enabled,
      defaultVariation: 'true',
    });
    expect(await appliedCount(first, ctx.org.token, created.id)).toEqual({
      applied: 1,
      audited: 1,
    });
  });
});
