import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../../test-support/harness.js';
import { DatabaseExposureStore } from '../../usage/exposure-store.js';
import { ExposureRecorder } from '../../usage/exposures.js';
import { userHash } from '../../usage/user-hash.js';
import { GUARD_INTERVAL_MS } from './guard.js';
import { regressionTest } from '../../statistics/sequential-test.js';

const base = '/api/v1/orgs/acme/projects/web';
const planPath = (flag: string) => `${base}/flags/${flag}/environments/production/release-plan`;
const STEPS = [
  { percentage: 50, after: 'PT0S' },
  { percentage: 100, after: 'P1D' },
];

describe('the sequential test (mixture SPRT, one-sided)', () => {
  it('equal rates give no regression; a worse target does; a better target never does', () => {
    const equal = regressionTest(
      { users: 2000, converted: 100 },
      { users: 2000, converted: 100 },
      0.95,
      'lower_is_better',
    );
    expect(equal.regression).toBe(false);
    expect(equal.statistic).toBeLessThan(1);
    const worse = regressionTest(
      { users: 2000, converted: 300 },
      { users: 2000, converted: 100 },
      0.95,
      'lower_is_better',
    );
    expect(worse.regression).toBe(true);
    expect(worse.pValue).toBeLessThan(0.05);
    const better = regressionTest(
      { users: 2000, converted: 100 },
      { users: 2000, converted: 300 },
      0.95,
      'lower_is_better',
    );
    expect(better.regression).toBe(false);
  });

  it('with higher_is_better, a lower target rate is the regression', () => {
    const fewer = { users: 2000, converted: 100 };
    const more = { users: 2000, converted: 300 };
    expect(regressionTest(fewer, more, 0.95, 'higher_is_better').regression).toBe(true);
    expect(regressionTest(more, fewer, 0.95, 'higher_is_better').regression).toBe(false);
  });

  it('the threshold is 1 / (1 − confidence): more confidence needs more evidence', () => {
    const target = { users: 1500, converted: 120 };
    const rest = { users: 1500, converted: 80 };
    const loose = regressionTest(target, rest, 0.8, 'lower_is_better');
    const strict = regressionTest(target, rest, 0.999, 'lower_is_better');
    expect(loose.threshold).toBeCloseTo(5);
    expect(strict.threshold).toBeCloseTo(1000);
    expect(loose.statistic).toBe(strict.statistic);
    expect(loose.regression).toBe(true);
    expect(strict.regression).toBe(false);
  });
});

describe.each(testDialects())('guarded release plans on %s', (dialect) => {
  const clock = new TestClock(new Date('2026-06-01T12:00:00.000Z'));
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let serverKey: string;
  let clientKey: string;

  async function guardedFlag(key: string, guard: Record<string, unknown>) {
    const flag = await callOk(vexil, 'POST', `${base}/flags`, org.token, {
      key,
      name: key,
      clientSideVisible: true,
    });
    const ids = variationIdsByKey(flag);
    await callOk(vexil, 'PATCH', `${base}/flags/${key}/environments/production`, org.token, {
      defaultVariationId: ids.false,
    });
    await callOk(vexil, 'POST', `${base}/flags/${key}/environments/production/toggle`, org.token, {
      enabled: true,
    });
    const plan = await call(vexil, 'PUT', planPath(key), {
      token: org.token,
      body: { variation: 'true', steps: STEPS, guard },
    });
    expect(plan.status).toBe(201);
    await vexil.services.usage.exposures?.refresh();
    return { flagId: flag.id as string, planId: plan.body.id as string, ids, plan: plan.body };
  }

  /** Seeds exposures as the recorder writes them: `converted` of `users` sent the metric after. */
  async function seed(planId: string, side: 0 | 1, users: number, converted: number) {
    const at = clock.now().getTime();
    const rows = Array.from({ length: users }, (_, i) => ({
      plan_id: planId,
      user_hash: `${side}-${i}`,
      side,
      exposed_ms: at,
      metric_ms: i < converted ? at + 1000 : null,
    }));
    for (let i = 0; i < rows.length; i += 200)
      await vexil.services.db
        .insertInto('release_plan_exposures')
        .values(rows.slice(i, i + 200))
        .execute();
  }

  const events = async (type: string) =>
    (
      await vexil.services.db
        .selectFrom('webhook_events')
        .select('payload')
        .where('type', '=', type)
        .execute()
    ).map(
      (row) =>
        JSON.parse(row.payload) as {
          entity: { id: string };
          changes: { property: string; to: string | null }[];
        },
    );

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    ({ sdkKey: serverKey } = await createProjectWithFlag(vexil, org));
    clientKey = (
      await callOk(vexil, 'POST', `${base}/environments/production/sdk-keys`, org.token, {
        name: 'browser',
        type: 'ClientSide',
      })
    ).key;
  });
  afterAll(() => vexil.close());

  it('exposures come from server and client evaluate, OFREP and reported evaluations; metric events count only after the first exposure', async () => {
    const { plan, planId } = await guardedFlag('recorded', {
      metric: 'checkout-error',
      minimumUsers: 100,
    });
    expect(plan.warnings).toEqual([expect.stringMatching(/checkout-error/)]);
    expect(plan.guard).toEqual({
      metric: 'checkout-error',
      kind: 'rate',
      direction: 'lower_is_better',
      minimumUsers: 100,
      confidence: 0.95,
      action: 'rollback',
    });
    const custom = (userId: string) =>
      call(vexil, 'POST', '/v1/sdk/events', {
        token: serverKey,
        body: { events: [{ type: 'Custom', flagKey: 'checkout-error', userId }] },
      });
    // A metric event before any exposure does not count for that user.
    await custom('late');
    clock.advance(60_000);
    for (let i = 0; i < 10; i++)
      await call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: serverKey,
        body: { flagKey: 'recorded', context: { userId: `s-${i}` } },
      });
    for (let i = 0; i < 5; i++)
      await call(vexil, 'POST', '/v1/client/evaluate', {
        token: clientKey,
        body: { context: { userId: `c-${i}` } },
      });
    for (let i = 0; i < 5; i++)
      await call(vexil, 'POST', '/ofrep/v1/evaluate/flags/recorded', {
        token: serverKey,
        body: { context: { targetingKey: `o-${i}` } },
      });
    await call(vexil, 'POST', '/v1/sdk/events', {
      token: serverKey,
      body: {
        events: Array.from({ length: 5 }, (_, i) => ({
          type: 'Evaluation',
          flagKey: 'recorded',
          variation: i % 2 === 0 ? 'true' : 'false',
          userId: `e-${i}`,
        })),
      },
    });
    await call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: serverKey,
      body: { flagKey: 'recorded', context: { userId: 'late' } },
    });
    clock.advance(1000);
    for (const user of ['s-0', 'c-0', 'o-0', 'e-0', 'never-exposed']) await custom(user);
    await vexil.services.usage.flush();

    const reading = await callOk(vexil, 'GET', `${planPath('recorded')}/guard`, org.token);
    expect(reading.target.exposedUsers + reading.rest.exposedUsers).toBe(26);
    expect(reading.target.usersWithMetric + reading.rest.usersWithMetric).toBe(4);
    expect(reading.testing).toBe(false);
    expect(reading.target.variations).toEqual(['true']);
    const rows = await vexil.services.db
      .selectFrom('release_plan_exposures')
      .selectAll()
      .where('plan_id', '=', planId)
      .execute();
    // 26 exposed users and one who only sent the metric; identities are stored hashed.
    expect(rows.length).toBe(27);
    expect(rows.every((row) => row.user_hash.length === 16)).toBe(true);
    // Each exposure's side is the variation the user was served.
    const sides = new Map(rows.map((row) => [row.user_hash, row.side]));
    for (let i = 0; i < 10; i++) {
      const served = await call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: serverKey,
        body: { flagKey: 'recorded', context: { userId: `s-${i}` } },
      });
      expect(sides.get(userHash(`s-${i}`))).toBe(served.body.variation === 'true' ? 1 : 0);
    }
  });

  it('a user whose exposure this process wrote is not held or written again; their metric events still are', async () => {
    const { planId } = await guardedFlag('remembered', { metric: 'refund', minimumUsers: 100 });
    // A node with a database records exposures; only a relay has none.
    const exposures = vexil.services.usage.exposures!;
    const evaluate = (userId: string) =>
      call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: serverKey,
        body: { flagKey: 'remembered', context: { userId } },
      });
    for (let i = 0; i < 5; i++) await evaluate(`r-${i}`);
    expect(exposures.heldUsers).toBe(5);
    const clientEvaluate = () =>
      call(vexil, 'POST', '/v1/client/evaluate', {
        token: clientKey,
        body: { context: { userId: 'r-0' } },
      });
    // Client evaluate serves every guarded flag, the earlier tests' too.
    await clientEvaluate();
    await vexil.services.usage.flush();
    const written = await vexil.services.db
      .selectFrom('release_plan_exposures')
      .select(['user_hash', 'exposed_ms'])
      .where('plan_id', '=', planId)
      .execute();
    expect(written.length).toBe(5);
    clock.advance(60_000);
    for (let i = 0; i < 5; i++) await evaluate(`r-${i}`);
    await clientEvaluate();
    expect(exposures.heldUsers).toBe(0);
    await evaluate('r-new');
    await call(vexil, 'POST', '/v1/sdk/events', {
      token: serverKey,
      body: { events: [{ type: 'Custom', flagKey: 'refund', userId: 'r-1' }] },
    });
    expect(exposures.heldUsers).toBe(2);
    await vexil.services.usage.flush();
    const rows = await vexil.services.db
      .selectFrom('release_plan_exposures')
      .selectAll()
      .where('plan_id', '=', planId)
      .execute();
    expect(rows.length).toBe(6);
    const byHash = new Map(rows.map((row) => [row.user_hash, row]));
    // The first exposures stand; r-1's metric event was written.
    for (const row of written) expect(byHash.get(row.user_hash)?.exposed_ms).toBe(row.exposed_ms);
    expect(byHash.get(userHash('r-1'))?.metric_ms).toBe(clock.now().getTime());
    expect(byHash.get(userHash('r-new'))?.exposed_ms).toBe(clock.now().getTime());
  });

  it('exposures from several processes add up: the earliest exposure and its side, the latest metric event', async () => {
    const { planId } = await guardedFlag('two-processes', { metric: 'signup', minimumUsers: 100 });
    const first = new ExposureRecorder(new DatabaseExposureStore(vexil.services.db));
    const second = new ExposureRecorder(new DatabaseExposureStore(vexil.services.db));
    await Promise.all([first.refresh(), second.refresh()]);
    const environmentId = (
      await vexil.services.db
        .selectFrom('release_plans')
        .select('environment_id')
        .where('id', '=', planId)
        .executeTakeFirstOrThrow()
    ).environment_id;
    const t = clock.now().getTime();
    second.recordEvaluation(
      environmentId,
      'two-processes',
      'false',
      undefined,
      { userId: 'u' },
      t + 5000,
    );
    second.recordMetric(environmentId, 'signup', 'u', t + 2000);
    first.recordEvaluation(environmentId, 'two-processes', 'true', undefined, { userId: 'u' }, t);
    first.recordMetric(environmentId, 'signup', 'u', t + 1000);
    await second.flush();
    await first.flush();
    const row = await vexil.services.db
      .selectFrom('release_plan_exposures')
      .selectAll()
      .where('plan_id', '=', planId)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ side: 1, exposed_ms: t, metric_ms: t + 2000 });
  });

  it('a regression after minimumUsers on both sides rolls the plan back, with both sides’ figures and the statistic', async () => {
    const { flagId, planId, ids } = await guardedFlag('regressed', {
      metric: 'errors',
      minimumUsers: 100,
    });
    await seed(planId, 1, 400, 120);
    await seed(planId, 0, 400, 20);
    await vexil.dueWork.runOnce();
    const plan = await callOk(vexil, 'GET', planPath('regressed'), org.token);
    expect(plan.state).toBe('rolledBack');
    expect(plan.regression).toMatchObject({
      action: 'rollback',
      target: { exposedUsers: 400, usersWithMetric: 120, rate: 0.3 },
      rest: { exposedUsers: 400, usersWithMetric: 20, rate: 0.05 },
    });
    expect(plan.regression.statistic).toBeGreaterThanOrEqual(plan.regression.threshold);
    const configuration = await callOk(
      vexil,
      'GET',
      `${base}/flags/regressed/environments/production`,
      org.token,
    );
    expect(configuration).toMatchObject({
      strategy: 'SingleVariation',
      defaultVariationId: ids.false,
    });
    const [detected] = (await events('release_plan.regression_detected')).filter(
      (e) => e.entity.id === flagId,
    );
    const figure = (name: string) => detected?.changes.find((c) => c.property === name)?.to;
    expect(figure('TargetExposedUsers')).toBe('400');
    expect(figure('RestUsersWithMetric')).toBe('20');
    expect(figure('TargetRate')).toBe('0.3');
    expect(Number(figure('Statistic'))).toBeGreaterThan(20);
    expect(
      (await events('release_plan.rolled_back')).filter((e) => e.entity.id === flagId),
    ).toHaveLength(1);
    const reading = await callOk(vexil, 'GET', `${planPath('regressed')}/guard`, org.token);
    expect(reading).toMatchObject({ testing: true, regressionDetected: true });
    expect(reading.threshold).toBeCloseTo(20);
  });

  it('with action pause the plan is paused with the regression as its reason', async () => {
    const { planId } = await guardedFlag('paused-by-guard', {
      metric: 'errors',
      minimumUsers: 100,
      action: 'pause',
      confidence: 0.9,
    });
    await seed(planId, 1, 300, 90);
    await seed(planId, 0, 300, 15);
    await vexil.dueWork.runOnce();
    const plan = await callOk(vexil, 'GET', planPath('paused-by-guard'), org.token);
    expect(plan.state).toBe('paused');
    expect(plan.pausedReason).toMatch(/regression of "errors"/);
  });

  it('no test below minimumUsers, none on equal rates, at most one test every few seconds, and never an early step', async () => {
    const { planId } = await guardedFlag('watched', { metric: 'errors', minimumUsers: 200 });
    await seed(planId, 1, 150, 100);
    await seed(planId, 0, 150, 5);
    await vexil.dueWork.runOnce();
    let reading = await callOk(vexil, 'GET', `${planPath('watched')}/guard`, org.token);
    expect(reading).toMatchObject({ testing: false, regressionDetected: false, statistic: 1 });
    expect((await callOk(vexil, 'GET', planPath('watched'), org.token)).state).toBe('active');

    // Equal rates past minimumUsers: tested, and no stop.
    await vexil.services.db
      .deleteFrom('release_plan_exposures')
      .where('plan_id', '=', planId)
      .execute();
    await seed(planId, 1, 500, 50);
    await seed(planId, 0, 500, 50);
    clock.advance(GUARD_INTERVAL_MS);
    await vexil.dueWork.runOnce();
    reading = await callOk(vexil, 'GET', `${planPath('watched')}/guard`, org.token);
    expect(reading.testing).toBe(true);
    expect(reading.regressionDetected).toBe(false);
    const plan = await callOk(vexil, 'GET', planPath('watched'), org.token);
    expect(plan).toMatchObject({ state: 'active', currentStep: 0 });

    // A regression appears: not acted on until the guard's interval has passed since its last test.
    await vexil.services.db
      .updateTable('release_plan_exposures')
      .set({ metric_ms: clock.now().getTime() + 1000 })
      .where('plan_id', '=', planId)
      .where('side', '=', 1)
      .execute();
    clock.advance(GUARD_INTERVAL_MS - 1000);
    await vexil.dueWork.runOnce();
    expect((await callOk(vexil, 'GET', planPath('watched'), org.token)).state).toBe('active');
    clock.advance(1000);
    await vexil.dueWork.runOnce();
    expect((await callOk(vexil, 'GET', planPath('watched'), org.token)).state).toBe('rolledBack');
  });
});
