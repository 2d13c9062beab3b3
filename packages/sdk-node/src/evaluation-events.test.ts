import { createHash } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { node, tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from '../../server/src/test-support/harness.js';
import { seedSdkFlags } from '../../server/src/test-support/sdk-flags.js';
import { createClient, type VexilClient } from './index.js';

describe('@vexil/node evaluation events', () => {
  let vexil: TestVexil;
  let client: VexilClient;
  let version: number;
  const spans = new tracing.InMemorySpanExporter();
  const provider = new node.NodeTracerProvider({
    spanProcessors: [new tracing.SimpleSpanProcessor(spans)],
  });

  beforeAll(async () => {
    provider.register();
    vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    const { sdkKey } = await createProjectWithFlag(vexil, org);
    await seedSdkFlags(vexil, org.token, 'false');
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    version = (
      (await call(vexil, 'GET', '/v1/sdk/flags', { token: sdkKey })).body as {
        version: number;
      }
    ).version;
    client = createClient({
      baseUrl,
      sdkKey,
      streaming: false,
      pollIntervalMs: 60_000,
      evaluationEvents: { trace },
    });
    await client.waitForReady();
  });
  afterAll(async () => {
    await client.close();
    await vexil.close();
    await provider.shutdown();
  });

  it('writes each evaluation as the event the server writes, on the active span only', () => {
    trace.getTracer('test').startActiveSpan('handle request', (span) => {
      client.stringVariation('banner-text', { userId: 'user-42' }, 'x');
      client.boolVariation('no-such-flag', { userId: 'user-42' }, true);
      span.end();
    });
    client.boolVariation('new-checkout', { userId: 'outside-a-span' }, false);
    expect(spans.getFinishedSpans()).toHaveLength(1);
    const [recorded] = spans.getFinishedSpans();
    const contextId = createHash('sha256').update('user-42').digest('hex');
    expect(recorded!.events.map(({ name, attributes }) => ({ name, attributes }))).toEqual([
      {
        name: 'feature_flag.evaluation',
        attributes: {
          'feature_flag.key': 'banner-text',
          'feature_flag.provider.name': 'Vexil',
          'feature_flag.set.id': 'production',
          'feature_flag.version': String(version),
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
          'feature_flag.version': String(version),
          'feature_flag.context.id': contextId,
          'feature_flag.result.reason': 'error',
          'error.type': 'flag_not_found',
        },
      },
    ]);
  });
});
