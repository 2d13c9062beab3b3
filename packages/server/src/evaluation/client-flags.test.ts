import {
  compileEnvironment,
  selectFlags,
  type SdkConfiguration,
  type SdkFlag,
} from '@vexil/engine';
import { describe, expect, it } from 'vitest';
import { clientFlagsBody, evaluateClientFlags } from './client-flags.js';
import { ConfigurationDocumentWriter } from './configuration-document.js';
import type { Snapshot } from './snapshots.js';

const flag = (key: string, over: Partial<SdkFlag> = {}): SdkFlag => ({
  key,
  version: 1,
  type: 'Json',
  enabled: true,
  variations: [
    { key: 'on', value: { quote: 'say "hi"', list: [1, 2] } },
    { key: 'off', value: null },
  ],
  rules: [
    {
      id: 'r1',
      priority: 1,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [{ attribute: 'plan', operator: 'Equals', values: ['pro'] }],
        },
      ],
      serve: { type: 'Fixed', variation: 'off' },
    },
  ],
  fallthrough: { type: 'Rollout', variations: [{ key: 'on', weight: 50_000 }] },
  offVariation: 'off',
  prerequisites: [],
  ...over,
});

async function snapshotOf(configuration: SdkConfiguration, visible: string[]): Promise<Snapshot> {
  const compiled = compileEnvironment(configuration);
  const clientFlags = selectFlags(compiled, visible);
  const writer = new ConfigurationDocumentWriter();
  writer.begin(configuration.environment!, configuration.version);
  await writer.addFlags(configuration.flags);
  return {
    environmentId: 'env',
    organizationId: 'org',
    projectId: 'project',
    version: configuration.version,
    compiled,
    document: await writer.finish(configuration.segments),
    environmentKey: configuration.environment!,
    flagDigests: writer.flagDigests,
    segments: configuration.segments,
    flagStamps: undefined,
    clientSideKeys: new Set(visible),
    clientFlags,
    clientEntries: clientFlags.map(() => []),
  };
}

describe('clientFlagsBody', async () => {
  const snapshot = await snapshotOf(
    {
      environment: 'production',
      version: 1,
      flags: [
        flag('a'),
        flag('hidden'),
        flag('b', { enabled: false }),
        flag('c', { prerequisites: [{ prerequisiteFlagKey: 'b', expectedVariationKey: 'on' }] }),
        flag('d', { fallthrough: { type: 'Fixed', variation: 'missing' } }),
        flag('we"ird\\key'),
        flag('drapeau-🚩-été'),
      ],
      segments: [],
    },
    ['a', 'b', 'c', 'd', 'we"ird\\key', 'drapeau-🚩-été'],
  );

  it('is the UTF-8 JSON of evaluateClientFlags, for every outcome and again from its cache', () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 40; i++) {
        const context = { userId: `user-${i}`, plan: i % 3 === 0 ? 'pro' : 'free' };
        const json = clientFlagsBody(snapshot, context, null).toString();
        const expected = evaluateClientFlags(snapshot, context).body;
        expect(JSON.parse(json)).toEqual(expected);
        expect(json).toBe(JSON.stringify(expected));
        for (const [key, result] of Object.entries(expected.flags))
          outcomes.add(
            JSON.stringify([key, result.variation, result.reason, result.prerequisiteKey]),
          );
      }
    }
    // One entry per distinct outcome, not per request.
    const entries = snapshot.clientEntries.reduce((sum, served) => sum + served.length, 0);
    expect(entries).toBe(outcomes.size);
  });
});
