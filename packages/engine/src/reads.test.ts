import { describe, expect, it } from 'vitest';
import { compileEnvironment } from './compile.js';
import { selectFlags } from './evaluate.js';
import { attributesRead, readsKey } from './reads.js';
import type { SdkConfiguration, SdkFlag, SdkRule } from './types.js';

const variations = [
  { key: 'on', value: true },
  { key: 'off', value: false },
];

function flag(key: string, overrides: Partial<SdkFlag>): SdkFlag {
  return {
    key,
    version: 1,
    type: 'Boolean',
    enabled: true,
    variations,
    rules: [],
    fallthrough: { type: 'Fixed', variation: 'off' },
    offVariation: 'off',
    prerequisites: [],
    ...overrides,
  };
}

/** A rule serving `on` to contexts whose `attribute` is `value`. */
function ruleOn(id: string, attribute: string, value: string): SdkRule {
  return {
    id,
    priority: 0,
    conditionGroups: [
      { operator: 'And', conditions: [{ attribute, operator: 'In', values: [value] }] },
    ],
    serve: { type: 'Fixed', variation: 'on' },
  };
}

const configuration: SdkConfiguration = {
  environment: 'production',
  version: 1,
  segments: [
    {
      key: 'beta',
      version: 1,
      conditionLogic: 'And',
      conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
    },
  ],
  flags: [
    flag('by-country', {
      rules: [ruleOn('r1', 'country', 'NL')],
    }),
    flag('in-segment', {
      rules: [
        {
          id: 'r2',
          priority: 0,
          conditionGroups: [],
          segmentKey: 'beta',
          serve: { type: 'Fixed', variation: 'on' },
        },
      ],
    }),
    flag('rollout', {
      fallthrough: {
        type: 'Rollout',
        variations: [
          { key: 'on', weight: 50_000 },
          { key: 'off', weight: 50_000 },
        ],
      },
    }),
    flag('by-team', {
      fallthrough: {
        type: 'Rollout',
        bucketBy: 'team',
        variations: [{ key: 'on', weight: 100_000 }],
      },
    }),
    flag('after-country', {
      prerequisites: [{ prerequisiteFlagKey: 'by-country', expectedVariationKey: 'on' }],
    }),
    flag('off', {
      enabled: false,
      rules: [ruleOn('r3', 'plan', 'pro')],
    }),
  ],
};

describe('what an evaluation reads', () => {
  const env = compileEnvironment(configuration);
  const read = (...keys: string[]) => attributesRead(env, selectFlags(env, keys));

  it('names the attributes of conditions, segments, rollouts and prerequisites, sorted', () => {
    expect(read('by-country')).toEqual(['country']);
    expect(read('in-segment')).toEqual(['email']);
    expect(read('rollout')).toEqual(['key', 'targetingKey', 'userId']);
    expect(read('by-team')).toEqual(['team']);
    expect(read('after-country')).toEqual(['country']);
    expect(read('by-country', 'in-segment', 'by-team')).toEqual(['country', 'email', 'team']);
  });

  it('names nothing for a flag that is off: it serves its off variation unread', () => {
    expect(read('off')).toEqual([]);
  });

  it('keys contexts by the values read, wherever the context holds them', () => {
    const names = read('by-country', 'in-segment');
    expect(readsKey({ userId: 'a', country: 'NL' }, names)).toBe(
      readsKey({ userId: 'b', attributes: { country: 'NL', plan: 'pro' } }, names),
    );
    expect(readsKey({ country: 'NL' }, names)).not.toBe(readsKey({ country: 'DE' }, names));
    // A string and a number are different values, and absent is not the string "null".
    expect(readsKey({ country: 1 }, names)).not.toBe(readsKey({ country: '1' }, names));
    expect(readsKey({}, names)).not.toBe(readsKey({ country: 'null' }, names));
  });
});
