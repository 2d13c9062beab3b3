import { describe, expect, it } from 'vitest';
import { keptValue, type EnvironmentServing, type FlagDescription } from './kept-value.js';

const flag: FlagDescription = {
  key: 'theme',
  type: 'String',
  variations: [
    { id: 'v-dark', key: 'dark', value: 'dark' },
    { id: 'v-light', key: 'light', value: 'light' },
    { id: 'v-off', key: 'off', value: 'classic' },
  ],
};

function environment(key: string, overrides: Partial<EnvironmentServing> = {}): EnvironmentServing {
  return {
    environmentKey: key,
    isEnabled: true,
    defaultVariationId: 'v-dark',
    offVariationId: 'v-off',
    strategy: 'SingleVariation',
    rollout: [],
    prerequisites: [],
    rules: 0,
    ...overrides,
  };
}

describe('cleanup: the value kept (contract section 3)', () => {
  it('on: the variation served to everyone where the flag is on; off: the off variation', () => {
    const environments = [
      environment('production'),
      environment('staging', {
        strategy: 'PercentageRollout',
        rollout: [
          { variationId: 'v-dark', weight: 100_000 },
          { variationId: 'v-light', weight: 0 },
        ],
      }),
      // Rules, or switched off: no single variation for everyone when on; not counted.
      environment('development', { rules: 2, defaultVariationId: 'v-light' }),
      environment('qa', { isEnabled: false, defaultVariationId: 'v-light' }),
    ];
    expect(keptValue(flag, environments, 'on')).toEqual({
      value: 'dark',
      variation: 'dark',
      environments: ['production', 'staging'],
    });
    expect(keptValue(flag, environments, 'off')).toEqual({
      value: 'classic',
      variation: 'off',
      environments: ['production', 'staging', 'development', 'qa'],
    });
  });

  it('refuses when environments keep different values, naming them, or when none serves one', () => {
    expect(
      keptValue(
        flag,
        [environment('production'), environment('eu', { defaultVariationId: 'v-light' })],
        'on',
      ),
    ).toEqual({
      refused:
        'theme keeps different values in different environments (production: dark, eu: light); pass --value',
    });
    expect(keptValue(flag, [environment('production', { isEnabled: false })], 'on')).toEqual({
      refused: 'theme serves no single variation to everyone in any environment; pass --value',
    });
  });

  it('values are typed as SDKs receive them', () => {
    const json: FlagDescription = {
      key: 'limits',
      type: 'Json',
      variations: [{ id: 'v-dark', key: 'big', value: '{"max":3}' }],
    };
    expect(keptValue(json, [environment('production')], 'on')).toEqual({
      value: { max: 3 },
      variation: 'big',
      environments: ['production'],
    });
    const boolean: FlagDescription = {
      key: 'on',
      type: 'Boolean',
      variations: [
        { id: 'v-dark', key: 'on', value: 'true' },
        { id: 'v-off', key: 'off', value: 'false' },
      ],
    };
    expect(keptValue(boolean, [environment('production')], 'off')).toEqual({
      value: false,
      variation: 'off',
      environments: ['production'],
    });
  });
});
