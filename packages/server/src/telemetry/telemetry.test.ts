import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dialect } from '../db/database.js';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testConfig,
  testWebhookSettings,
  type TestVexil,
} from '../test-support/harness.js';
import { OtlpReceiver, type ReceivedSpan } from '../test-support/otlp-receiver.js';
import { eventually } from '../test-support/processes.js';
import { seedSdkFlags } from '../test-support/sdk-flags.js';
import { WebhookReceiver } from '../test-support/webhook-receiver.js';
import { createRelayNode } from '../node/relay-node.js';
import { startTelemetry, type Telemetry } from './tracing.js';

const project = '/api/v1/orgs/acme/projects/web';
const MINUTE = 60_000;

/** A caller's W3C trace context, as a traced client would send it. */
function callerTrace() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** Every span below `parent` in the received trace. */
function descendants(spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] {
  const children = spans.filter((span) => span.parentSpanId === parent.spanId);
  return children.flatMap((child) => [child, ...descendants(spans, child)]);
}

/** The environment a telemetry test runs in: OTLP variables as an operator would set them. */
function otelEnvironment(receiver: OtlpReceiver, protocol: string): NodeJS.ProcessEnv {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint(),
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_SERVICE_NAME: 'vexil-under-test',
    VEXIL_OTEL_EVALUATION_SAMPLE: '1',
  };
}

describe('without the OTLP variables', () => {
  let receiver: OtlpReceiver;
  let webhooks: WebhookReceiver;
  let vexil: TestVexil;
  let telemetry: Telemetry;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    webhooks = await WebhookReceiver.start();
    telemetry = startTelemetry(testConfig().telemetry);
    vexil = await createTestVexil('sqlite', {
      clock: new TestClock(new Date()),
      config: { webhooks: testWebhookSettings() },
    });
  });
  afterAll(async () => {
    await vexil.close();
    await telemetry.shutdown();
    await webhooks.close();
    await receiver.close();
  });

  it('exports nothing, and a webhook request carries no traceparent', async () => {
    expect(telemetry.exporting).toBe(false);
    const org = await createOrg(vexil);
    const { sdkKey } = await createProjectWithFlag(vexil, org);
    await callOk(vexil, 'POST', '/api/v1/orgs/acme/webhooks', org.token, {
      name: 'Hook',
      url: webhooks.url(),
      provider: 'GenericHttp',
    });
    await call(vexil, 'POST', `${project}/flags/new-checkout/environments/production/toggle`, {
      token: org.token,
      body: { enabled: true },
    });
    await vexil.webhookWorker.runOnce();
    await call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: sdkKey,
      body: { flagKey: 'new-checkout', context: { userId: 'u1' } },
    });
    await telemetry.flush();
    expect(webhooks.received).toHaveLength(1);
    expect(webhooks.received[0]!.headers.traceparent).toBeUndefined();
    expect(receiver.contentTypes.size).toBe(0);
    expect(receiver.spans).toEqual([]);
    expect(receiver.metrics).toEqual([]);
  });
});

describe.each<[string, Dialect]>([
  ['http/json', 'sqlite'],
  ['http/protobuf', 'postgres'],
])('traces over %s, on %s', (protocol, dialect) => {
  let receiver: OtlpReceiver;
  let webhooks: WebhookReceiver;
  let vexil: TestVexil;
  let telemetry: Telemetry;
  let clock: TestClock;
  let token: string;
  let sdkKey: string;

  const spans = async () => {
    await telemetry.flush();
    return receiver.spans;
  };

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    webhooks = await WebhookReceiver.start();
    const env = otelEnvironment(receiver, protocol);
    telemetry = startTelemetry(testConfig({}, env).telemetry);
    clock = new TestClock(new Date());
    vexil = await createTestVexil(dialect, {
      clock,
      env,
      config: { webhooks: testWebhookSettings() },
    });
    const org = await createOrg(vexil);
    token = org.token;
    sdkKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    await seedSdkFlags(vexil, token, 'false');
  });
  afterAll(async () => {
    await vexil.close();
    await telemetry.shutdown();
    await webhooks.close();
    await receiver.close();
  });

  it('continues a caller’s trace with a span per management request and its database work', async () => {
    const caller = callerTrace();
    const created = await call(vexil, 'POST', `${project}/flags`, {
      token,
      body: { key: 'traced-flag', name: 'Traced flag' },
      headers: { traceparent: caller.traceparent },
    });
    expect(created.status).toBe(201);
    const all = await spans();
    const request = all.find((span) => span.parentSpanId === caller.spanId);
    expect(request).toBeDefined();
    expect(request!.name).toBe('POST /api/v1/orgs/:org/projects/:project/flags');
    expect(request!.traceId).toBe(caller.traceId);
    expect(request!.serviceName).toBe('vexil-under-test');
    expect(request!.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/v1/orgs/:org/projects/:project/flags',
      'http.response.status_code': 201,
      'vexil.org': 'acme',
      'vexil.project': 'web',
    });
    // Never a secret: the token travels in a header, and no header is recorded.
    expect(JSON.stringify(request)).not.toContain(token);
    const database = descendants(all, request!).filter(
      (span) =>
        span.attributes['db.system.name'] === (dialect === 'sqlite' ? 'sqlite' : 'postgresql'),
    );
    expect(database.map((span) => span.attributes['db.operation.name'])).toContain('INSERT');
  });

  it('traces each webhook attempt, whose request carries the attempt’s traceparent', async () => {
    const subscription = await callOk(vexil, 'POST', '/api/v1/orgs/acme/webhooks', token, {
      name: 'Hook',
      url: webhooks.url(),
      provider: 'GenericHttp',
      eventTypes: ['flag.toggled'],
    });
    webhooks.defaultAnswer = { status: 503 };
    await call(vexil, 'POST', `${project}/flags/new-checkout/environments/production/toggle`, {
      token,
      body: { enabled: false },
    });
    await vexil.webhookWorker.runOnce();
    webhooks.defaultAnswer = { status: 200 };
    clock.advance(testWebhookSettings().retryScheduleMs[0]!);
    await vexil.webhookWorker.runOnce();
    const attempts = (await spans()).filter((span) => span.name === 'webhook.attempt flag.toggled');
    expect(attempts.map((span) => span.attributes)).toEqual([
      expect.objectContaining({
        'vexil.webhook.event_type': 'flag.toggled',
        'vexil.webhook.attempt': 1,
        'vexil.webhook.subscription_id': subscription.id,
        'http.response.status_code': 503,
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(webhooks.url()).port),
      }),
      expect.objectContaining({ 'vexil.webhook.attempt': 2, 'http.response.status_code': 200 }),
    ]);
    expect(attempts[0]!.status.code).toBe(2); // ERROR
    expect(webhooks.received).toHaveLength(2);
    webhooks.received.forEach((request, index) =>
      expect(request.headers.traceparent).toBe(
        `00-${attempts[index]!.traceId}-${attempts[index]!.spanId}-01`,
      ),
    );
  });

  it('traces a change request applied by the scheduler', async () => {
    const revision = (
      await callOk(vexil, 'GET', `${project}/flags/new-checkout/environments/development`, token)
    ).revision as number;
    const request = await callOk(vexil, 'POST', `${project}/change-requests`, token, {
      environment: 'development',
      title: 'On later',
      submit: true,
      applyAt: new Date(clock.now().getTime() + 10 * MINUTE).toISOString(),
      changes: [
        {
          kind: 'flag',
          flagKey: 'new-checkout',
          baseRevision: revision,
          configuration: { enabled: true, defaultVariation: 'true', offVariation: 'false' },
        },
      ],
    });
    expect(request.state).toBe('scheduled');
    clock.advance(10 * MINUTE);
    await vexil.dueWork.runOnce();
    const applied = (await spans()).find(
      (span) =>
        span.name === 'change_request.apply' &&
        span.attributes['vexil.change_request.id'] === request.id,
    );
    expect(applied).toBeDefined();
    expect(applied!.parentSpanId).toBe('');
    expect(descendants(receiver.spans, applied!).length).toBeGreaterThan(0);
  });

  it('traces each release-plan step the scheduler takes', async () => {
    await callOk(vexil, 'POST', `${project}/flags`, token, { key: 'planned', name: 'Planned' });
    const plan = await callOk(
      vexil,
      'PUT',
      `${project}/flags/planned/environments/development/release-plan`,
      token,
      {
        variation: 'false',
        steps: [
          { percentage: 10, after: 'PT0S' },
          { percentage: 100, after: 'PT1H' },
        ],
      },
    );
    clock.advance(60 * MINUTE);
    await vexil.dueWork.runOnce();
    const step = (await spans()).find(
      (span) =>
        span.name === 'release_plan.step' && span.attributes['vexil.release_plan.id'] === plan.id,
    );
    expect(step).toBeDefined();
    expect(step!.parentSpanId).toBe('');
    expect(descendants(receiver.spans, step!).length).toBeGreaterThan(0);
  });

  it('traces the relay’s sync from a real upstream, a span per environment and per patch it receives', async () => {
    const upstream = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const relayKey = (
      await callOk(vexil, 'POST', '/api/v1/orgs/acme/relay-keys', token, { name: 'edge' })
    ).key as string;
    const relay = await createRelayNode(testConfig({ usageFlushIntervalMs: 3_600_000 }), {
      upstreamUrl: upstream,
      relayKey,
      logger: false,
    });
    try {
      expect(await relay.follower.firstConnection()).toBeNull();
      const production = (await callOk(vexil, 'GET', `${project}/environments/production`, token))
        .id as string;
      const synced = (await spans()).filter((span) => span.name === 'relay.sync environment');
      expect(synced.map((span) => span.attributes['vexil.environment_id'])).toContain(production);
      expect(synced[0]!.attributes['vexil.relay.event']).toBe('environment');

      // A change then comes as what changed: the relay asked its upstream for patches.
      // Both ways: one of the two toggles changes the flag, whichever state it was in.
      for (const enabled of [true, false])
        await callOk(
          vexil,
          'POST',
          `${project}/flags/new-checkout/environments/production/toggle`,
          token,
          {
            enabled,
          },
        );
      const patched = async () =>
        (await spans()).some(
          (span) =>
            span.name === 'relay.sync patch' &&
            span.attributes['vexil.environment_id'] === production,
        );
      expect(await eventually(patched, 5_000)).toBe(true);
    } finally {
      await relay.close();
    }
  });

  it('sends the Prometheus metrics over OTLP too, as /metrics counts them', async () => {
    await call(vexil, 'GET', `${project}/flags`, { token });
    const scraped = (await call(vexil, 'GET', '/metrics')).text;
    await telemetry.flush();
    const latest = (name: string) => receiver.metrics.filter((m) => m.name === name).at(-1);

    const durations = latest('vexil_http_request_duration_seconds');
    expect(durations).toMatchObject({ kind: 'histogram', serviceName: 'vexil-under-test' });
    const route = '/api/v1/orgs/:org/projects/:project/flags';
    const listed = durations!.points.find(
      (point) =>
        point.attributes.route === route &&
        point.attributes.method === 'GET' &&
        point.attributes.status === '200',
    );
    const prometheus = new RegExp(
      `^vexil_http_request_duration_seconds_count\\{method="GET",route="${route}",status="200"\\} (\\d+)$`,
      'm',
    ).exec(scraped);
    expect(prometheus).not.toBeNull();
    expect(listed?.count).toBe(Number(prometheus![1]));
    expect(listed!.bucketCounts).toHaveLength(listed!.explicitBounds!.length + 1);
    expect(listed!.bucketCounts!.reduce((sum, count) => sum + count, 0)).toBe(listed!.count);
    expect(latest('vexil_snapshot_version')?.kind).toBe('gauge');
    expect(latest('process_cpu_user_seconds_total')?.kind).toBe('sum');
  });

  it('emits sampled feature_flag.evaluation events in the conventions’ names and values', async () => {
    const caller = callerTrace();
    const environmentId = (await callOk(vexil, 'GET', `${project}/environments/production`, token))
      .id as string;
    const version = (
      (await call(vexil, 'GET', '/v1/sdk/flags', { token: sdkKey })).body as { version: number }
    ).version;
    const evaluated = await call(vexil, 'POST', '/v1/sdk/evaluate', {
      token: sdkKey,
      body: { flagKey: 'banner-text', context: { userId: 'user-42' } },
      headers: { traceparent: caller.traceparent },
    });
    expect(evaluated.status).toBe(200);
    const unknown = await call(vexil, 'POST', '/ofrep/v1/evaluate/flags/kill-switch', {
      token: sdkKey,
      body: { context: { targetingKey: 'user-42' } },
    });
    expect(unknown.status).toBe(200);
    const all = await spans();
    const server = all.find(
      (span) => span.name === 'feature_flag.evaluation' && span.traceId === caller.traceId,
    );
    expect(server).toBeDefined();
    expect(server!.parentSpanId).toBe(caller.spanId);
    const contextId = createHash('sha256').update('user-42').digest('hex');
    expect(server!.events).toEqual([
      {
        name: 'feature_flag.evaluation',
        attributes: {
          'feature_flag.key': 'banner-text',
          'feature_flag.provider.name': 'Vexil',
          'feature_flag.set.id': environmentId,
          'feature_flag.version': String(version),
          'feature_flag.context.id': contextId,
          'feature_flag.result.variant': 'english',
          'feature_flag.result.value': 'Hello',
          'feature_flag.result.reason': 'default',
        },
      },
    ]);
    // A client evaluation (served by the lean lane) continues its caller's trace too.
    await callOk(vexil, 'PATCH', `${project}/flags/banner-text`, token, {
      clientSideVisible: true,
    });
    const clientKey = (
      await callOk(vexil, 'POST', `${project}/environments/production/sdk-keys`, token, {
        name: 'browser',
        type: 'ClientSide',
      })
    ).key as string;
    const browser = callerTrace();
    const clientEvaluated = await call(vexil, 'POST', '/v1/client/evaluate', {
      token: clientKey,
      body: { context: { userId: 'user-42' } },
      headers: { traceparent: browser.traceparent },
    });
    expect(clientEvaluated.status).toBe(200);
    const clientSpan = (await spans()).find(
      (span) => span.name === 'feature_flag.evaluation' && span.traceId === browser.traceId,
    );
    expect(clientSpan?.parentSpanId).toBe(browser.spanId);
    expect(clientSpan!.events.map((event) => event.attributes['feature_flag.key'])).toEqual([
      'banner-text',
    ]);

    const ofrep = all
      .filter((span) => span.name === 'feature_flag.evaluation')
      .flatMap((span) => span.events)
      .find((event) => event.attributes['feature_flag.key'] === 'kill-switch');
    expect(ofrep?.attributes).toMatchObject({
      'feature_flag.result.reason': 'disabled',
      'feature_flag.result.variant': 'false',
      'feature_flag.result.value': false,
      'feature_flag.context.id': contextId,
    });
  });
});
