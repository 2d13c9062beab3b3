import fc from 'fast-check';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { OpenFeature as WebOpenFeature } from '@openfeature/web-sdk';
import { createClient, type VexilClient } from '@vexil/node';
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
import { DEFAULT_WINDOW_HOURS } from '../metrics/schemas.js';
import { CHECK_INTERVAL_MS } from './checks.js';

const PROJECT = '/api/v1/orgs/acme/projects/web';
const experimentsOf = (flag: string, env = 'production') =>
  `${PROJECT}/flags/${flag}/environments/${env}/experiments`;

/** Seeded uniform draws in [0, 1): the same simulated users on every run. */
function draws(count: number, seed: number): number[] {
  return fc
    .sample(fc.noBias(fc.integer({ min: 0, max: 999_999 })), { seed, numRuns: count })
    .map((step) => step / 1_000_000);
}

describe.each(testDialects())('experiments on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;
  let sdkKey: string;
  let baseUrl: string;
  const clock = new TestClock(new Date());
  const clients: VexilClient[] = [];

  /** A Boolean flag on in production serving `false` to everyone. */
  async function flagServingFalse(key: string): Promise<Record<string, string>> {
    await callOk(vexil, 'POST', `${PROJECT}/flags`, token, { key, name: key });
    const variations = variationIdsByKey(
      await callOk(vexil, 'GET', `${PROJECT}/flags/${key}`, token),
    );
    const environment = `${PROJECT}/flags/${key}/environments/production`;
    await callOk(vexil, 'PATCH', environment, token, {
      strategy: 'SingleVariation',
      defaultVariationId: variations['false'],
    });
    await callOk(vexil, 'POST', `${environment}/toggle`, token, { enabled: true });
    return variations;
  }

  const experiment = (key: string, overrides: Record<string, unknown> = {}) => ({
    key,
    name: key,
    variations: [
      { key: 'false', weight: 5000 },
      { key: 'true', weight: 5000 },
    ],
    controlVariation: 'false',
    primaryMetric: 'checkout',
    minimumUsers: 100,
    ...overrides,
  });

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    ({ token } = await createOrg(vexil));
    ({ sdkKey } = await createProjectWithFlag(
      vexil,
      { token, slug: 'acme' },
      { flag: { key: 'unused' } },
    ));
    for (const metric of [
      {
        key: 'checkout',
        name: 'Checkout',
        eventKey: 'checkout',
        kind: 'conversion',
        direction: 'higher_is_better',
      },
      {
        key: 'revenue',
        name: 'Revenue',
        eventKey: 'checkout',
        kind: 'sum',
        valueProperty: 'amount',
        direction: 'higher_is_better',
      },
      {
        key: 'errors',
        name: 'Errors',
        eventKey: 'error',
        kind: 'count',
        direction: 'lower_is_better',
      },
    ])
      await callOk(vexil, 'POST', `${PROJECT}/metrics`, token, metric);
  });

  afterAll(async () => {
    for (const client of clients.splice(0)) await client.close();
    await vexil.close();
  });

  it('names the better variation from users simulated through the Node SDK, then ships it', async () => {
    const variations = await flagServingFalse('exp-checkout');
    const path = experimentsOf('exp-checkout');
    const created = await callOk(
      vexil,
      'POST',
      path,
      token,
      experiment('bigger-button', {
        secondaryMetrics: ['revenue'],
        guardrailMetrics: ['errors'],
      }),
    );
    expect(created).toMatchObject({ status: 'draft', salt: created.id, primaryMetric: 'checkout' });
    expect(created._actions.start.allowed).toBe(true);
    const started = await callOk(vexil, 'POST', `${path}/bigger-button/start`, token);
    expect(started.status).toBe('running');
    // The start reads the running experiments again without waiting; the test waits for it.
    await vexil.services.usage.exposures?.refresh();

    // 3,000 seeded users: 10% convert on `false`, 20% on `true`; each buyer spends a log-normal
    // amount, and one in ten of their events lacks it.
    const traffic = createClient({ baseUrl, sdkKey, streaming: false, flushIntervalMs: 3_600_000 });
    clients.push(traffic);
    expect(await traffic.waitForReady(10_000)).toBe(true);
    const served = { true: 0, false: 0 };
    let withoutAmount = 0;
    const [conversion, amount] = [draws(3000, 47), draws(3000, 48)];
    for (let index = 0; index < 3000; index++) {
      const userId = `user-${index}`;
      const value = traffic.boolVariation('exp-checkout', { userId }, false);
      served[value ? 'true' : 'false']++;
      if ((conversion[index] ?? 1) < (value ? 0.2 : 0.1)) {
        const draw = amount[index] ?? 0.5;
        if (index % 10 === 0) withoutAmount++;
        traffic.track({
          key: 'checkout',
          userId,
          metadata: index % 10 === 0 ? {} : { amount: Math.exp(3 + 2 * (draw - 0.5)) },
        });
      }
    }
    await traffic.close();
    await vexil.services.usage.flush();

    const results = await callOk(vexil, 'GET', `${path}/bigger-button/results`, token);
    expect(results.variations).toEqual([
      { key: 'false', exposedUsers: served.false, control: true },
      { key: 'true', exposedUsers: served.true },
    ]);
    // The split is the weights' (stable, bucketed with the experiment's salt).
    expect(served.true).toBeGreaterThan(1300);
    expect(served.false).toBeGreaterThan(1300);
    expect(results.srm.detected).toBe(false);
    const [checkout, revenue, errors] = results.metrics;
    expect(checkout).toMatchObject({ key: 'checkout', role: 'primary' });
    expect(checkout.byVariation.true.verdict).toBe('better');
    expect(checkout.byVariation.true.confidenceInterval[0]).toBeGreaterThan(0);
    expect(checkout.byVariation.true.relativeDifference).toBeGreaterThan(0.5);
    expect(checkout.byVariation.true.relativeDifference).toBeLessThan(1.6);
    expect(checkout.byVariation.false.value).toBeCloseTo(
      checkout.byVariation.false.usersWithEvent / served.false,
      10,
    );
    expect(revenue).toMatchObject({
      key: 'revenue',
      role: 'secondary',
      eventsWithoutValue: withoutAmount,
    });
    expect(revenue.byVariation.true.value).toBeGreaterThan(revenue.byVariation.false.value);
    // The series ends with this reading's point for each treatment and metric with data.
    expect(results.series).toContainEqual({
      at: results.computedAt,
      metric: 'checkout',
      variation: 'true',
      relativeDifference: checkout.byVariation.true.relativeDifference,
      confidenceInterval: checkout.byVariation.true.confidenceInterval,
    });
    // A guardrail says worse or nothing: no error events were sent.
    expect(errors).toMatchObject({ role: 'guardrail' });
    expect(errors.byVariation.true.verdict).toBe('inconclusive');

    // While it runs the fallthrough is the experiment's: a direct change is refused, turning the
    // flag off is allowed.
    const environment = `${PROJECT}/flags/exp-checkout/environments/production`;
    const refused = await call(vexil, 'PATCH', environment, {
      token,
      body: { strategy: 'SingleVariation', defaultVariationId: variations['true'] },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('EXPERIMENT_RUNNING');
    const deleting = await call(
      vexil,
      'DELETE',
      `${PROJECT}/flags/exp-checkout/variations/${variations['true']}`,
      { token },
    );
    expect(deleting.status).toBe(409);
    await callOk(vexil, 'POST', `${environment}/toggle`, token, { enabled: false });
    await callOk(vexil, 'POST', `${environment}/toggle`, token, { enabled: true });

    const stopped = await callOk(vexil, 'POST', `${path}/bigger-button/stop`, token, {
      decision: { ship: 'true' },
    });
    // Stopped with its final verdicts, for lists.
    expect(stopped).toMatchObject({
      status: 'stopped',
      decision: { ship: 'true' },
      primaryVerdicts: { true: 'better' },
    });
    const configuration = await callOk(vexil, 'GET', environment, token);
    expect(configuration).toMatchObject({
      strategy: 'SingleVariation',
      defaultVariationId: variations['true'],
    });
  });

  it('counts the users of the stock OFREP web provider, and their events from the client intake', async () => {
    await callOk(vexil, 'POST', `${PROJECT}/flags`, token, {
      key: 'exp-web',
      name: 'exp-web',
      clientSideVisible: true,
    });
    const variations = variationIdsByKey(
      await callOk(vexil, 'GET', `${PROJECT}/flags/exp-web`, token),
    );
    const environment = `${PROJECT}/flags/exp-web/environments/production`;
    await callOk(vexil, 'PATCH', environment, token, { defaultVariationId: variations['false'] });
    await callOk(vexil, 'POST', `${environment}/toggle`, token, { enabled: true });
    const path = experimentsOf('exp-web');
    await callOk(vexil, 'POST', path, token, experiment('web-banner'));
    await callOk(vexil, 'POST', `${path}/web-banner/start`, token);
    // The start reads the running experiments again without waiting; the test waits for it.
    await vexil.services.usage.exposures?.refresh();
    const { key: clientKey } = await callOk(
      vexil,
      'POST',
      `${PROJECT}/environments/production/sdk-keys`,
      token,
      { name: `web-${dialect}`, type: 'ClientSide' },
    );

    // Each simulated visitor: the provider evaluates in bulk for their context, and a converting
    // visitor's `track` goes to the client events intake.
    const domain = `experiment-web-${dialect}`;
    await WebOpenFeature.setContext(domain, { targetingKey: 'visitor-0' });
    await WebOpenFeature.setProviderAndWait(
      domain,
      new OFREPWebProvider({
        baseUrl,
        headers: [['Authorization', `Bearer ${clientKey}`]],
        cacheMode: 'disabled',
        pollInterval: 0,
      }),
    );
    const web = WebOpenFeature.getClient(domain);
    const served = { true: 0, false: 0 };
    const events: Record<string, unknown>[] = [];
    const draw = draws(120, 49);
    for (let index = 0; index < 120; index++) {
      const userId = `visitor-${index}`;
      await WebOpenFeature.setContext(domain, { targetingKey: userId });
      const value = web.getBooleanValue('exp-web', false);
      served[value ? 'true' : 'false']++;
      if ((draw[index] ?? 1) < 0.5)
        events.push({
          type: 'Custom',
          flagKey: 'checkout',
          userId,
          timestamp: new Date().toISOString(),
        });
    }
    await WebOpenFeature.clearProviders();
    const intake = await fetch(`${baseUrl}/v1/client/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${clientKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    expect(intake.status).toBe(202);
    await vexil.services.usage.flush();

    const results = await callOk(vexil, 'GET', `${path}/web-banner/results`, token);
    expect(results.variations).toEqual([
      { key: 'false', exposedUsers: served.false, control: true },
      { key: 'true', exposedUsers: served.true },
    ]);
    const { byVariation } = results.metrics[0];
    expect(byVariation.false.usersWithEvent + byVariation.true.usersWithEvent).toBe(events.length);
    // About 60 users a side, under minimumUsers: figures, but no verdict yet.
    expect(byVariation.true).toHaveProperty('confidenceInterval');
    expect(byVariation.true).not.toHaveProperty('verdict');
  });

  it('detects a sample ratio mismatch once, from exposures of one variation dropped', async () => {
    await flagServingFalse('exp-srm');
    const path = experimentsOf('exp-srm');
    const { id: srmId } = await callOk(vexil, 'POST', path, token, experiment('srm'));
    await callOk(vexil, 'POST', `${path}/srm/start`, token);
    // The start reads the running experiments again without waiting; the test waits for it.
    await vexil.services.usage.exposures?.refresh();
    // Reported evaluations (an SDK evaluating locally): of 900 users, a third of those served
    // `true` lost their exposure on the way.
    const now = clock.now().toISOString();
    const events = Array.from({ length: 900 }, (_, index) => ({
      type: 'Evaluation',
      flagKey: 'exp-srm',
      variation: index % 2 === 0 ? 'true' : 'false',
      userId: `srm-${index}`,
      timestamp: now,
    })).filter((_, index) => index % 6 !== 0);
    const intake = await fetch(`${baseUrl}/v1/sdk/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sdkKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    expect(intake.status).toBe(202);
    await vexil.services.usage.flush();
    const results = await callOk(vexil, 'GET', `${path}/srm/results`, token);
    expect(results.srm.detected).toBe(true);
    expect(results.srm.observed).toEqual({ false: 450, true: 300 });

    for (let pass = 0; pass < 3; pass++) {
      clock.advance(CHECK_INTERVAL_MS);
      await vexil.dueWork.runOnce();
    }
    const detections = await vexil.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('type', '=', 'experiment.srm_detected')
      .execute();
    // Of this experiment (another test's, still running, may show a mismatch of its own).
    const ofThis = detections.filter(
      (row) => (JSON.parse(row.payload) as { child: { id: string } }).child.id === srmId,
    );
    expect(ofThis).toHaveLength(1);
    const read = await callOk(vexil, 'GET', `${path}/srm`, token);
    expect(read.srmDetectedAt).not.toBeNull();
    expect(read.primaryVerdicts).toEqual({ true: 'inconclusive' });
  });

  it('refuses bad input with 400 naming the field', async () => {
    await flagServingFalse('exp-bad');
    const path = experimentsOf('exp-bad');
    const refusedOn = async (body: Record<string, unknown>, url = path) => {
      const response = await call(vexil, 'POST', url, { token, body });
      expect(response.status, response.text).toBe(400);
      expect(response.body.error).toBe('validation_failed');
      return Object.keys(response.body.fields as object);
    };
    expect(
      await refusedOn(
        experiment('weights', {
          variations: [
            { key: 'false', weight: 5000 },
            { key: 'true', weight: 4000 },
          ],
        }),
      ),
    ).toEqual(['variations']);
    expect(await refusedOn(experiment('metric', { primaryMetric: 'nope' }))).toEqual([
      'primaryMetric',
    ]);
    expect(await refusedOn(experiment('guard', { guardrailMetrics: ['errors', 'nope'] }))).toEqual([
      'guardrailMetrics[1]',
    ]);
    expect(
      await refusedOn(
        experiment('variation', {
          variations: [
            { key: 'false', weight: 5000 },
            { key: 'maybe', weight: 5000 },
          ],
        }),
      ),
    ).toEqual(['variations[1].key']);
    expect(
      await refusedOn(
        {
          key: 'aov',
          name: 'AOV',
          eventKey: 'checkout',
          kind: 'sum',
          direction: 'higher_is_better',
        },
        `${PROJECT}/metrics`,
      ),
    ).toEqual(['valueProperty']);
    await callOk(vexil, 'POST', `${PROJECT}/flags`, token, {
      key: 'one-variation',
      name: 'One variation',
      type: 'String',
      variations: [{ key: 'only', value: 'only' }],
    });
    expect(
      await refusedOn(
        experiment('lonely', {
          variations: [{ key: 'only', weight: 10000 }],
          controlVariation: 'only',
        }),
        experimentsOf('one-variation'),
      ),
    ).toEqual(['variations']);
    // A second running experiment on the flag in the environment.
    await callOk(vexil, 'POST', path, token, experiment('first'));
    await callOk(vexil, 'POST', path, token, experiment('second'));
    await callOk(vexil, 'POST', `${path}/first/start`, token);
    const second = await call(vexil, 'POST', `${path}/second/start`, { token });
    expect(second.status).toBe(400);
    expect(Object.keys(second.body.fields as object)).toEqual(['experiment']);
    // A metric in use is not deleted.
    const deleted = await call(vexil, 'DELETE', `${PROJECT}/metrics/checkout`, { token });
    expect(deleted.status).toBe(400);
    expect(deleted.body.message).toContain('experiment "first"');
  });

  it('in an environment that requires change requests, a start opens one instead', async () => {
    await flagServingFalse('exp-protected');
    await callOk(vexil, 'PATCH', `${PROJECT}/environments/production`, token, {
      changeRequests: { required: true },
    });
    try {
      const path = experimentsOf('exp-protected');
      await callOk(vexil, 'POST', path, token, experiment('guarded'));
      const proposed = await callOk(vexil, 'POST', `${path}/guarded/start`, token);
      expect(proposed.status).toBe('draft');
      expect(proposed.changeRequest.number).toBeGreaterThan(0);
      const request = await callOk(
        vexil,
        'GET',
        `${PROJECT}/change-requests/${proposed.changeRequest.number}`,
        token,
      );
      expect(request.changes).toEqual([
        { kind: 'experiment', flagKey: 'exp-protected', experimentKey: 'guarded', action: 'start' },
      ]);
    } finally {
      await callOk(vexil, 'PATCH', `${PROJECT}/environments/production`, token, {
        changeRequests: { required: false },
      });
    }
  });

  it('two nodes recording the same users count each user once, at their first exposure', async () => {
    await flagServingFalse('exp-nodes');
    const path = experimentsOf('exp-nodes');
    const { id } = await callOk(
      vexil,
      'POST',
      path,
      token,
      experiment('nodes', { secondaryMetrics: ['revenue'] }),
    );
    await callOk(vexil, 'POST', `${path}/nodes/start`, token);
    const environmentId = (
      await vexil.services.db
        .selectFrom('environments')
        .select('id')
        .where('key', '=', 'production')
        .executeTakeFirstOrThrow()
    ).id;
    const first = new ExposureRecorder(new DatabaseExposureStore(vexil.services.db));
    const second = new ExposureRecorder(new DatabaseExposureStore(vexil.services.db));
    await Promise.all([first.refresh(), second.refresh()]);
    const t = clock.now().getTime();
    for (let index = 0; index < 200; index++) {
      const context = { userId: `both-${index}` };
      second.recordEvaluation(environmentId, 'exp-nodes', 'true', 'SPLIT', context, t + 5000);
      first.recordEvaluation(environmentId, 'exp-nodes', 'false', 'SPLIT', context, t);
      first.recordMetric(environmentId, 'checkout', `both-${index}`, t + 1000);
      second.recordMetric(environmentId, 'checkout', `both-${index}`, t + 6000);
    }
    // A rule's match is not the experiment's split: not an exposure.
    first.recordEvaluation(
      environmentId,
      'exp-nodes',
      'true',
      'TARGETING_MATCH',
      { userId: 'ruled' },
      t,
    );
    await second.flush();
    await first.flush();
    const results = await callOk(vexil, 'GET', `${path}/nodes/results`, token);
    expect(results.variations).toEqual([
      { key: 'false', exposedUsers: 200, control: true },
      { key: 'true', exposedUsers: 0 },
    ]);
    // Both nodes' events of each user add up, on the variation of the first exposure.
    expect(results.metrics[0].byVariation.false).toMatchObject({ users: 200, usersWithEvent: 200 });
    const rows = await vexil.services.db
      .selectFrom('experiment_metric_users')
      .select('events')
      .where('experiment_id', '=', id)
      .execute();
    expect(rows.map((row) => row.events)).toEqual(Array.from({ length: 400 }, () => 2));

    // The flushes read the stored first exposures back: `first` knows the users' (at t) and
    // counts their events on arrival; `second` read its own (t + 5000), since moved earlier, so
    // an event before it is held for the store to judge, and counts too.
    const windowMs = DEFAULT_WINDOW_HOURS * 3_600_000;
    for (let index = 0; index < 200; index++) {
      first.recordMetric(environmentId, 'checkout', `both-${index}`, t + 2000, { amount: 10 });
      second.recordMetric(environmentId, 'checkout', `both-${index}`, t + 3000, { amount: 5 });
      // After the window: never counted, on arrival or by the store.
      first.recordMetric(environmentId, 'checkout', `both-${index}`, t + windowMs + 1);
      second.recordMetric(environmentId, 'checkout', `both-${index}`, t + windowMs + 5001);
    }
    await first.flush();
    await second.flush();
    const counted = await vexil.services.db
      .selectFrom('experiment_metric_users')
      .innerJoin('metrics', 'metrics.id', 'experiment_metric_users.metric_id')
      .select(['metrics.key', 'variation', 'events', 'with_value', 'value_sum'])
      .where('experiment_id', '=', id)
      .execute();
    expect(counted).toHaveLength(400);
    for (const row of counted)
      expect(row).toEqual(
        row.key === 'checkout'
          ? { key: 'checkout', variation: 'false', events: 4, with_value: 0, value_sum: 0 }
          : { key: 'revenue', variation: 'false', events: 4, with_value: 2, value_sum: 15 },
      );
  });
});
