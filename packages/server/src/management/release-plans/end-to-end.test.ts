import fc from 'fast-check';
import { createClient, type VexilClient } from '@vexil/node';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  TestClock,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  testWebhookSettings,
  variationIdsByKey,
  type TestVexil,
} from '../../test-support/harness.js';
import { WebhookReceiver } from '../../test-support/webhook-receiver.js';

/** Simulated users: enough for the guard to decide at 10% against 30%, few enough to be quick. */
const USERS = 2_000;
/** The seed of the simulated users' failures, so that every run sees the same users. */
const SEED = 35;
/** How often a user fails on the old variation; the target fails three times as often. */
const BASE_FAILURE_RATE = 0.1;
const METRIC = 'checkout-error';

const FLAG = 'new-checkout';
const ENV = 'production';

/** Steps of the uniform draws: a draw is one of a million equally likely values in [0, 1). */
const DRAW_STEPS = 1_000_000;

/**
 * One uniform draw in [0, 1) per simulated user, the same on every run: fast-check's seeded
 * generator, unbiased (its arbitraries otherwise favour small and boundary values).
 */
function seededDraws(count: number, seed: number): number[] {
  return fc
    .sample(fc.noBias(fc.integer({ min: 0, max: DRAW_STEPS - 1 })), { seed, numRuns: count })
    .map((step) => step / DRAW_STEPS);
}

interface WebhookPayload {
  type: string;
  actor: { name: string | null };
  changes: { property: string; to: string | null }[];
}

const headersOf = (request: { headers: Record<string, unknown> }) =>
  Object.fromEntries(
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
      name,
      String(request.headers[name]),
    ]),
  );

/**
 * Issue 35, "End to end": a real server listening on loopback, the Node SDK driven by a script
 * simulating users (bounded, seeded), a plan at 50% whose target variation fails three times as
 * often. The guard rolls it back by itself, the SDK is then served the old fallthrough, and a
 * local webhook receiver gets `release_plan.regression_detected` and the rollback's configuration
 * events, signed. Time is the test clock, moved on by hand; the work that falls due runs when the
 * test calls it.
 */
describe.each(testDialects())('a guarded release rolled back end to end on %s', (dialect) => {
  let vexil: TestVexil | undefined;
  let receiver: WebhookReceiver | undefined;
  const clients: VexilClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
    await vexil?.close();
    await receiver?.close();
  });

  it('a plan at 50% whose target fails three times as often is rolled back by its guard', async () => {
    // The real time: SDK events carry the process's clock, receivers check signature timestamps.
    const clock = new TestClock(new Date());
    vexil = await createTestVexil(dialect, {
      clock,
      config: { webhooks: testWebhookSettings() },
    });
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    receiver = await WebhookReceiver.start();
    const org = await createOrg(vexil);
    const { sdkKey } = await createProjectWithFlag(vexil, org, { flag: { key: FLAG } });
    const project = `/api/v1/orgs/${org.slug}/projects/web`;
    const flagPath = `${project}/flags/${FLAG}/environments/${ENV}`;
    const variations = variationIdsByKey(
      await callOk(vexil, 'GET', `${project}/flags/${FLAG}`, org.token),
    );
    // Before the plan: on, everyone gets `false`.
    await callOk(vexil, 'PATCH', flagPath, org.token, {
      strategy: 'SingleVariation',
      defaultVariationId: variations['false'],
    });
    await callOk(vexil, 'POST', `${flagPath}/toggle`, org.token, { enabled: true });
    const subscription = await callOk(
      vexil,
      'POST',
      `/api/v1/orgs/${org.slug}/webhooks`,
      org.token,
      {
        name: 'release watch',
        url: receiver.url(),
        provider: 'GenericHttp',
      },
    );

    await callOk(vexil, 'PUT', `${flagPath}/release-plan`, org.token, {
      variation: 'true',
      steps: [
        { percentage: 50, after: 'PT0S' },
        { percentage: 100, after: 'P7D' },
      ],
      guard: {
        metric: METRIC,
        kind: 'rate',
        direction: 'lower_is_better',
        minimumUsers: 100,
        confidence: 0.95,
        action: 'rollback',
      },
    });

    // The simulated users, through an SDK that evaluates locally and reports what it served and
    // what they tracked; closing it sends what is queued.
    const traffic = createClient({ baseUrl, sdkKey, streaming: false, flushIntervalMs: 3_600_000 });
    clients.push(traffic);
    expect(await traffic.waitForReady(10_000)).toBe(true);
    const draws = seededDraws(USERS, SEED);
    const served = { true: 0, false: 0 };
    for (const [index, draw] of draws.entries()) {
      const userId = `user-${index}`;
      const value = traffic.boolVariation(FLAG, { userId }, false);
      served[value ? 'true' : 'false']++;
      const failureRate = value ? 3 * BASE_FAILURE_RATE : BASE_FAILURE_RATE;
      if (draw < failureRate) traffic.track({ key: METRIC, userId });
    }
    // The 50% step splits the users about evenly.
    expect(served.true).toBeGreaterThan(USERS * 0.4);
    expect(served.false).toBeGreaterThan(USERS * 0.4);
    await traffic.close();

    // A second SDK watching the stream, as a service would, to see the rollback arrive.
    const watcher = createClient({ baseUrl, sdkKey });
    clients.push(watcher);
    expect(await watcher.waitForReady(10_000)).toBe(true);
    const someTargetUser = draws.findIndex((_, index) =>
      watcher.boolVariation(FLAG, { userId: `user-${index}` }, false),
    );
    expect(someTargetUser).toBeGreaterThanOrEqual(0);

    // The guard's pass: exposures and metric events are counted, the test decides, the plan is
    // rolled back.
    await vexil.services.usage.flush();
    clock.advance(5_000);
    await vexil.dueWork.runOnce();

    const plan = await callOk(vexil, 'GET', `${flagPath}/release-plan`, org.token);
    expect(plan.state).toBe('rolledBack');
    const guard = await callOk(vexil, 'GET', `${flagPath}/release-plan/guard`, org.token);
    expect(guard).toMatchObject({
      target: { exposedUsers: served.true },
      rest: { exposedUsers: served.false },
    });

    // The SDK is served the old fallthrough: `false` for everyone, the target's users included.
    await vi.waitFor(
      () =>
        expect(watcher.boolVariation(FLAG, { userId: `user-${someTargetUser}` }, true)).toBe(false),
      { timeout: 10_000 },
    );
    for (let index = 0; index < 50; index++)
      expect(watcher.boolVariation(FLAG, { userId: `user-${index}` }, true)).toBe(false);

    // The receiver gets the regression and the rollback's configuration events, every one signed
    // (a request whose signature does not verify throws here).
    while ((await vexil.webhookWorker.runOnce()) > 0);
    const verifier = new Webhook(subscription.secret);
    const payloads = receiver.received.map(
      (request) => verifier.verify(request.body, headersOf(request)) as WebhookPayload,
    );
    const change = (payload: WebhookPayload | undefined, property: string) =>
      payload?.changes.find((c) => c.property === property)?.to;
    const ofType = (type: string) => payloads.filter((payload) => payload.type === type);
    // Both sides' figures, as the SDK's users made them (deliveries arrive in any order).
    const [regression, ...others] = ofType('release_plan.regression_detected');
    expect(others).toEqual([]);
    expect(change(regression, 'TargetExposedUsers')).toBe(String(served.true));
    expect(change(regression, 'RestExposedUsers')).toBe(String(served.false));
    expect(Number(change(regression, 'TargetRate'))).toBeGreaterThan(
      2 * Number(change(regression, 'RestRate')),
    );
    expect(change(regression, 'Action')).toBe('rollback');
    // The rollback's configuration event puts the fallthrough back to one variation.
    expect(
      ofType('flag.environment_config.updated').map((payload) => [
        change(payload, 'Strategy'),
        payload.actor.name,
      ]),
    ).toContainEqual(['SingleVariation', 'Vexil release plan']);
    const [rolledBack] = ofType('release_plan.rolled_back');
    expect(change(rolledBack, 'Reason')).toContain(METRIC);
  });
});
