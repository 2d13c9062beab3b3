import { createHash } from 'node:crypto';
import { OpenFeature, type Client } from '@openfeature/server-sdk';
import { trace } from '@opentelemetry/api';
import { node, tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from '../../server/src/test-support/harness.js';
import { seedSdkFlags } from '../../server/src/test-support/sdk-flags.js';
import { EvaluationEventsHook, VexilProvider } from './index.js';

describe('EvaluationEventsHook', () => {
  let vexil: TestVexil;
  const spans = new tracing.InMemorySpanExporter();
  const provider = new node.NodeTracerProvider({
    spanProcessors: [new tracing.SimpleSpanProcessor(spans)],
  });
  const domain = 'vexil-events';
  let client: Client;

  beforeAll(async () => {
    provider.register();
    vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    const { sdkKey } = await createProjectWithFlag(vexil, org);
    await seedSdkFlags(vexil, org.token, 'false');
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    await OpenFeature.setProviderAndWait(
      domain,
      new VexilProvider({ baseUrl, sdkKey, pollIntervalMs: 60_000 }),
    );
    client = OpenFeature.getClient(domain);
    client.addHooks(new EvaluationEventsHook({ trace, setId: 'production' }));
  });
  afterAll(async () => {
    await OpenFeature.clearProviders();
    await vexil.close();
    await provider.shutdown();
  });

  it('adds feature_flag.evaluation events in the conventions’ names to the active span', async () => {
    await trace.getTracer('test').startActiveSpan('handle request', async (span) => {
      await client.getStringValue('banner-text', 'x', { targetingKey: 'user-42' });
      await client.getBooleanValue('no-such-flag', true, { targetingKey: 'user-42' });
      span.end();
    });
    await client.getBooleanValue('new-checkout', false, { targetingKey: 'outside-a-span' });
    const [recorded] = spans.getFinishedSpans();
    expect(spans.getFinishedSpans()).toHaveLength(1);
    const contextId = createHash('sha256').update('user-42').digest('hex');
    expect(recorded!.events.map(({ name, attributes }) => ({ name, attributes }))).toEqual([
      {
        name: 'feature_flag.evaluation',
        attributes: {
          'feature_flag.key': 'banner-text',
          'feature_flag.provider.name': 'Vexil',
          'feature_flag.set.id': 'production',
          'feature_flag.context.id': contextId,
          'feature_flag.result.variant': 'english',
          'feature_flag.result.value': 'Hello',
          'feature_flag.result.reason': 'default',
        },
      },
      {
        name: 'feature_flag.evaluation',
        attributes: {
          'feature_flag.key': 'no-such-flag',
          'feature_flag.provider.name': 'Vexil',
          'feature_flag.set.id': 'production',
          'feature_flag.context.id': contextId,
          'feature_flag.result.reason': 'error',
          'error.type': 'flag_not_found',
        },
      },
    ]);
  });
});
