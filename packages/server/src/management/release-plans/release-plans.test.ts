import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../../node/full-node.js';
import { openDatabase } from '../../db/database.js';
import type { Dialect } from '../../db/dialect.js';
import {
  call,
  callOk,
  createOrg,
  createPostgresDatabase,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testConfig,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../../test-support/harness.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const HOUR = 3_600_000;
const base = '/api/v1/orgs/acme/projects/web';
const planPath = (flag: string, env = 'production') =>
  `${base}/flags/${flag}/environments/${env}/release-plan`;

const STEPS = [
  { percentage: 1, after: 'PT0S' },
  { percentage: 10, after: 'PT1H' },
  { percentage: 50, after: 'P1D' },
  { percentage: 100, after: 'P2D' },
];

/** Events about a flag (of one type, if given), oldest first. */
async function eventsOf(vexil: Vexil, flagId: string, type?: string) {
  const rows = await vexil.services.db
    .selectFrom('webhook_events')
    .select(['type', 'payload', 'environment_id'])
    .orderBy('occurred_at')
    .orderBy('id')
    .execute();
  return rows
    .map((row) => ({
      type: row.type,
      environmentId: row.environment_id,
      payload: JSON.parse(row.payload) as {
        description: string;
        entity: { id: string };
        actor: { name: string | null };
        changes: { property: string; to: string | null }[];
      },
    }))
    .filter((event) => event.payload.entity.id === flagId && (!type || event.type === type));
}

describe.each(testDialects())('release plans on %s', (dialect) => {
  const clock = new TestClock(new Date('2026-06-01T12:00:00.000Z'));
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let sdkKey: string;

  /** A Boolean flag on in production, its fallthrough serving `false`. */
  async function flagServingFalse(key: string) {
    const flag = await callOk(vexil, 'POST', `${base}/flags`, org.token, { key, name: key });
    const ids = variationIdsByKey(flag);
    await callOk(vexil, 'PATCH', `${base}/flags/${key}/environments/production`, org.token, {
      defaultVariationId: ids.false,
    });
    await callOk(vexil, 'POST', `${base}/flags/${key}/environments/production/toggle`, org.token, {
      enabled: true,
    });
    return { id: flag.id as string, ids };
  }

  const fallthrough = async (key: string) =>
    callOk(vexil, 'GET', `${base}/flags/${key}/environments/production`, org.token);

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
  });
  afterAll(() => vexil.close());

  it('validation: percentages rise strictly to 100 with 0.001 precision, waits are ISO 8601 and not negative, 400 naming the step', async () => {
    await flagServingFalse('validated');
    const put = (body: unknown) =>
      call(vexil, 'PUT', planPath('validated'), { token: org.token, body });
    const cases: [unknown, string][] = [
      [
        {
          variation: 'true',
          steps: [
            { percentage: 10, after: 'PT0S' },
            { percentage: 10, after: 'PT1H' },
            { percentage: 100, after: 'PT1H' },
          ],
        },
        'steps.1.percentage',
      ],
      [
        {
          variation: 'true',
          steps: [
            { percentage: 10, after: 'PT0S' },
            { percentage: 50, after: 'PT1H' },
          ],
        },
        'steps.1.percentage',
      ],
      [
        {
          variation: 'true',
          steps: [
            { percentage: 0.0001, after: 'PT0S' },
            { percentage: 100, after: 'PT1H' },
          ],
        },
        'steps.0.percentage',
      ],
      [
        {
          variation: 'true',
          steps: [
            { percentage: 1, after: 'one hour' },
            { percentage: 100, after: 'PT1H' },
          ],
        },
        'steps.0.after',
      ],
      [
        {
          variation: 'true',
          steps: [
            { percentage: 1, after: 'PT0S' },
            { percentage: 100, after: '-PT1H' },
          ],
        },
        'steps.1.after',
      ],
      [
        {
          variation: 'true',
          steps: [
            { percentage: 1, after: 'PT0S' },
            { percentage: 100, after: 'P1M' },
          ],
        },
        'steps.1.after',
      ],
      [{ variation: 'maybe', steps: [{ percentage: 100, after: 'PT0S' }] }, 'variation'],
      [{ variation: 'false', steps: [{ percentage: 100, after: 'PT0S' }] }, 'variation'],
    ];
    for (const [body, field] of cases) {
      const response = await put(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(response.body.fields)).toEqual([field]);
    }
    for (const guard of [
      { metric: 'errors', minimumUsers: 99 },
      { metric: 'errors', confidence: 0.79 },
      { metric: 'errors', confidence: 0.9991 },
    ]) {
      const response = await put({
        variation: 'true',
        steps: [{ percentage: 100, after: 'PT0S' }],
        guard,
      });
      expect(response.status, JSON.stringify(guard)).toBe(400);
      expect(JSON.stringify(response.body.fields)).toMatch(/minimumUsers|confidence/);
    }
    expect((await call(vexil, 'GET', planPath('validated'), { token: org.token })).status).toBe(
      404,
    );
  });

  it('a guard may name a conversion metric of the catalogue: its event key and direction', async () => {
    await flagServingFalse('guarded-by-metric');
    for (const metric of [
      { key: 'refunds', eventKey: 'refund-issued', kind: 'conversion' },
      { key: 'spend', eventKey: 'purchase', kind: 'sum', valueProperty: 'amount' },
    ])
      await callOk(vexil, 'POST', `${base}/metrics`, org.token, {
        ...metric,
        name: metric.key,
        direction: 'lower_is_better',
      });
    const put = (guard: Record<string, unknown>) =>
      call(vexil, 'PUT', planPath('guarded-by-metric'), {
        token: org.token,
        body: { variation: 'true', steps: STEPS, guard },
      });
    for (const [guard, field] of [
      [{ metricKey: 'spend' }, 'guard.metricKey'],
      [{ metricKey: 'nope' }, 'guard.metricKey'],
      [{ metricKey: 'refunds', metric: 'other' }, 'guard.metric'],
      [{ minimumUsers: 100 }, 'guard.metric'],
    ] as const) {
      const refused = await put(guard);
      expect(refused.status, JSON.stringify(guard)).toBe(400);
      expect(Object.keys(refused.body.fields as object)).toEqual([field]);
    }
    const started = await put({ metricKey: 'refunds', minimumUsers: 100 });
    expect(started.status, started.text).toBe(201);
    expect(started.body.guard).toMatchObject({
      metric: 'refund-issued',
      metricKey: 'refunds',
      direction: 'lower_is_better',
    });
    // The metric is in use while the plan is.
    const deleted = await call(vexil, 'DELETE', `${base}/metrics/refunds`, { token: org.token });
    expect(deleted.status).toBe(400);
    expect(deleted.body.message).toContain('release plan of flag "guarded-by-metric"');
  });

  it('start: the first step applies at once through the one configuration write; a second active plan is 409', async () => {
    const { id, ids } = await flagServingFalse('started');
    const response = await call(vexil, 'PUT', planPath('started'), {
      token: org.token,
      body: { variation: 'true', steps: STEPS },
    });
    expect(response.status).toBe(201);
    const now = clock.now();
    expect(response.body).toMatchObject({
      variation: 'true',
      previousVariation: 'false',
      state: 'active',
      currentStep: 0,
      nextStepAt: new Date(now.getTime() + HOUR).toISOString(),
      startedAt: now.toISOString(),
      guard: null,
    });
    expect(response.body.steps[0].startedAt).toBe(now.toISOString());
    expect(response.body.steps[1].startedAt).toBeNull();
    const configuration = await fallthrough('started');
    expect(configuration.strategy).toBe('PercentageRollout');
    expect(configuration.rollout).toEqual([
      { variationId: ids.true, weight: 1000 },
      { variationId: ids.false, weight: 99000 },
    ]);
    const types = (await eventsOf(vexil, id)).map((e) => e.type);
    expect(types.slice(-3)).toEqual([
      'release_plan.started',
      'flag.environment_config.updated',
      'release_plan.advanced',
    ]);
    const again = await call(vexil, 'PUT', planPath('started'), {
      token: org.token,
      body: { variation: 'true', steps: STEPS },
    });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
  });

  it('steps advance at their time, exactly once, and a user in the target at 10% stays in it at 50%', async () => {
    const { id } = await flagServingFalse('advancing');
    await callOk(vexil, 'PUT', planPath('advancing'), org.token, {
      variation: 'true',
      steps: STEPS,
    });
    const served = async () => {
      const inTarget = new Set<string>();
      for (let i = 0; i < 300; i++) {
        const result = await call(vexil, 'POST', '/v1/sdk/evaluate', {
          token: sdkKey,
          body: { flagKey: 'advancing', context: { userId: `user-${i}` } },
        });
        if (result.body.variation === 'true') inTarget.add(`user-${i}`);
      }
      return inTarget;
    };
    clock.advance(HOUR - 1000);
    await vexil.dueWork.runOnce();
    expect((await callOk(vexil, 'GET', planPath('advancing'), org.token)).currentStep).toBe(0);
    clock.advance(1000);
    await vexil.dueWork.runOnce();
    await vexil.dueWork.runOnce();
    const atTen = await callOk(vexil, 'GET', planPath('advancing'), org.token);
    expect(atTen.currentStep).toBe(1);
    expect(atTen.nextStepAt).toBe(new Date(clock.now().getTime() + 24 * HOUR).toISOString());
    expect((await eventsOf(vexil, id, 'release_plan.advanced')).length).toBe(2);
    const tenPercent = await served();
    expect(tenPercent.size).toBeGreaterThan(10);
    expect(tenPercent.size).toBeLessThan(60);
    clock.advance(24 * HOUR);
    await vexil.dueWork.runOnce();
    const fiftyPercent = await served();
    expect(fiftyPercent.size).toBeGreaterThan(110);
    for (const user of tenPercent) expect(fiftyPercent.has(user)).toBe(true);
    const advanced = await eventsOf(vexil, id, 'release_plan.advanced');
    // The first step came with the person's PUT; the service moved the others.
    expect(advanced.map((e) => e.payload.actor.name === 'Vexil release plan')).toEqual([
      false,
      true,
      true,
    ]);
  });

  it('after downtime, overdue steps go straight to the latest due step in one change', async () => {
    const { id, ids } = await flagServingFalse('overdue');
    await callOk(vexil, 'PUT', planPath('overdue'), org.token, { variation: 'true', steps: STEPS });
    const configEvents = (await eventsOf(vexil, id, 'flag.environment_config.updated')).length;
    clock.advance(30 * HOUR);
    await vexil.dueWork.runOnce();
    const plan = await callOk(vexil, 'GET', planPath('overdue'), org.token);
    expect(plan.currentStep).toBe(2);
    expect(plan.steps[1].startedAt).toBeNull();
    expect(plan.steps[2].startedAt).toBe(clock.now().toISOString());
    expect((await eventsOf(vexil, id, 'flag.environment_config.updated')).length).toBe(
      configEvents + 1,
    );
    expect((await fallthrough('overdue')).rollout[0]).toEqual({
      variationId: ids.true,
      weight: 50000,
    });
    clock.advance(100 * HOUR);
    await vexil.dueWork.runOnce();
    const done = await callOk(vexil, 'GET', planPath('overdue'), org.token);
    expect(done).toMatchObject({ state: 'completed', currentStep: 3, nextStepAt: null });
    expect((await eventsOf(vexil, id, 'release_plan.completed')).length).toBe(1);
  });

  it('a direct change to the fallthrough or on/off pauses the plan with the reason; resume writes the step again', async () => {
    const { id, ids } = await flagServingFalse('paused-directly');
    await callOk(vexil, 'PUT', planPath('paused-directly'), org.token, {
      variation: 'true',
      steps: STEPS,
    });
    await callOk(
      vexil,
      'PATCH',
      `${base}/flags/paused-directly/environments/production`,
      org.token,
      {
        strategy: 'SingleVariation',
        defaultVariationId: ids.false,
      },
    );
    const paused = await callOk(vexil, 'GET', planPath('paused-directly'), org.token);
    expect(paused).toMatchObject({
      state: 'paused',
      nextStepAt: null,
      pausedReason: 'the fallthrough was changed directly',
    });
    const pausedEvents = await eventsOf(vexil, id, 'release_plan.paused');
    expect(pausedEvents[0]?.payload.description).toMatch(/fallthrough was changed directly/);
    clock.advance(30 * HOUR);
    await vexil.dueWork.runOnce();
    expect((await callOk(vexil, 'GET', planPath('paused-directly'), org.token)).currentStep).toBe(
      0,
    );

    const resumed = await callOk(vexil, 'POST', `${planPath('paused-directly')}/resume`, org.token);
    expect(resumed).toMatchObject({
      state: 'active',
      pausedReason: null,
      nextStepAt: new Date(clock.now().getTime() + HOUR).toISOString(),
    });
    expect((await fallthrough('paused-directly')).rollout[0]).toEqual({
      variationId: ids.true,
      weight: 1000,
    });
    expect((await eventsOf(vexil, id, 'release_plan.resumed')).length).toBe(1);
    // A resumed plan continues from its resume, not from the schedule it had before the pause.
    clock.advance(HOUR);
    await vexil.dueWork.runOnce();
    expect((await callOk(vexil, 'GET', planPath('paused-directly'), org.token)).currentStep).toBe(
      1,
    );

    await callOk(
      vexil,
      'POST',
      `${base}/flags/paused-directly/environments/production/toggle`,
      org.token,
      {
        enabled: false,
      },
    );
    expect(await callOk(vexil, 'GET', planPath('paused-directly'), org.token)).toMatchObject({
      state: 'paused',
      pausedReason: 'the flag was turned off directly',
    });
    const again = await call(vexil, 'POST', `${planPath('paused-directly')}/pause`, {
      token: org.token,
    });
    expect(again.status).toBe(409);
  });

  it('pause by a person, then rollback restores the fallthrough before the plan', async () => {
    const { id, ids } = await flagServingFalse('rolled-back');
    await callOk(vexil, 'PUT', planPath('rolled-back'), org.token, {
      variation: 'true',
      steps: STEPS,
    });
    const paused = await callOk(vexil, 'POST', `${planPath('rolled-back')}/pause`, org.token);
    expect(paused.state).toBe('paused');
    expect(paused.pausedReason).toMatch(/^paused by /);
    const rolledBack = await callOk(
      vexil,
      'POST',
      `${planPath('rolled-back')}/rollback`,
      org.token,
    );
    expect(rolledBack.state).toBe('rolledBack');
    const configuration = await fallthrough('rolled-back');
    expect(configuration).toMatchObject({
      strategy: 'SingleVariation',
      defaultVariationId: ids.false,
    });
    expect((await eventsOf(vexil, id, 'release_plan.rolled_back')).length).toBe(1);
    expect(
      (await call(vexil, 'POST', `${planPath('rolled-back')}/rollback`, { token: org.token }))
        .status,
    ).toBe(409);
    // An ended plan makes way for a new one; DELETE removes it and leaves the fallthrough.
    await callOk(vexil, 'PUT', planPath('rolled-back'), org.token, {
      variation: 'true',
      steps: STEPS,
    });
    expect(
      (await call(vexil, 'DELETE', planPath('rolled-back'), { token: org.token })).status,
    ).toBe(204);
    expect((await fallthrough('rolled-back')).strategy).toBe('PercentageRollout');
    expect((await eventsOf(vexil, id, 'release_plan.deleted')).length).toBe(1);
  });

  it('audit: the plan events are in the flag history, tied to the environment', async () => {
    const { id } = await flagServingFalse('audited');
    await callOk(vexil, 'PUT', planPath('audited'), org.token, { variation: 'true', steps: STEPS });
    const history = await callOk(vexil, 'GET', `${base}/flags/audited/history`, org.token);
    const types = (history.items as { type: string }[]).map((item) => item.type);
    expect(types).toEqual(
      expect.arrayContaining(['release_plan.started', 'release_plan.advanced']),
    );
    const [started] = await eventsOf(vexil, id, 'release_plan.started');
    expect(started?.environmentId).toEqual(expect.any(String));
  });
});

describe.each(testDialects())('release plan steps across two nodes on %s', (dialect: Dialect) => {
  it('two nodes passing at once advance a step exactly once', async () => {
    const clock = new TestClock(new Date('2026-06-01T12:00:00.000Z'));
    const folder = mkdtempSync(join(tmpdir(), 'vexil-plans-'));
    const postgres = dialect === 'postgres' ? await createPostgresDatabase() : undefined;
    const databaseUrl = postgres?.url ?? join(folder, 'vexil.db');
    const start = () =>
      createVexil(testConfig({ databaseUrl }), {
        clock,
        database: openDatabase(databaseUrl),
        logger: false,
        startWorkers: false,
      });
    const first = await start();
    const second = await start();
    try {
      const org = await createOrg(first);
      await createProjectWithFlag(first, org);
      const flag = await callOk(first, 'GET', `${base}/flags/new-checkout`, org.token);
      const ids = variationIdsByKey(flag);
      await callOk(
        first,
        'PATCH',
        `${base}/flags/new-checkout/environments/production`,
        org.token,
        {
          defaultVariationId: ids.false,
        },
      );
      await callOk(first, 'PUT', planPath('new-checkout'), org.token, {
        variation: 'true',
        steps: STEPS,
      });
      clock.advance(HOUR);
      await Promise.all([first.dueWork.runOnce(), second.dueWork.runOnce()]);
      await Promise.all([first.dueWork.runOnce(), second.dueWork.runOnce()]);
      const advanced = await eventsOf(first, flag.id, 'release_plan.advanced');
      expect(advanced.length).toBe(2);
      expect((await callOk(second, 'GET', planPath('new-checkout'), org.token)).currentStep).toBe(
        1,
      );
    } finally {
      await second.close();
      await first.close();
      await postgres?.drop();
      rmSync(folder, { recursive: true, force: true });
    }
    // Two nodes migrate and start on a shared, busy machine: more than the default 20 s at times.
  }, 90_000);
});
