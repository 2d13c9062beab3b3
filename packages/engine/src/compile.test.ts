import { describe, expect, it } from 'vitest';
import { compileEnvironment, compileLazily } from './compile.js';
import { evaluateAll, evaluateFlag } from './evaluate.js';
import type { SdkCondition, SdkConfiguration, SdkFlag } from './types.js';

const condition = (attribute: string, value: string): SdkCondition => ({
  attribute,
  operator: 'Equals',
  values: [value],
  negate: false,
});

/** A Boolean flag whose one rule serves `false` to contexts with every listed attribute "yes". */
const flag = (key: string, attributes: string[], over: Partial<SdkFlag> = {}): SdkFlag => ({
  key,
  version: 1,
  type: 'Boolean',
  enabled: true,
  variations: [
    { key: 'true', value: true },
    { key: 'false', value: false },
  ],
  rules: [
    {
      id: `${key}-rule`,
      priority: 1,
      conditionGroups: [
        { operator: 'And', conditions: attributes.map((name) => condition(name, 'yes')) },
      ],
      serve: { type: 'Fixed', variation: 'false' },
    },
  ],
  fallthrough: { type: 'Fixed', variation: 'true' },
  offVariation: 'false',
  prerequisites: [],
  ...over,
});

/** An environment over `flags` that records which flags it was asked to read. */
function lazyEnvironment(flags: SdkFlag[]) {
  const reads: string[] = [];
  const env = compileLazily({
    environment: 'production',
    version: 1,
    flagKeys: flags.map((f) => f.key),
    segments: [],
    flag: (index) => {
      reads.push(flags[index]!.key);
      return flags[index]!;
    },
  });
  return { env, reads };
}

describe('compilation: each flag is compiled when first evaluated, and once', () => {
  const flags = [
    flag('a', ['plan']),
    flag('b', ['plan'], {
      prerequisites: [{ prerequisiteFlagKey: 'c', expectedVariationKey: 'true' }],
    }),
    flag('c', ['country']),
    flag('d', ['beta']),
  ];

  it('reads no flag until one is evaluated, then only that flag and its prerequisites', () => {
    const { env, reads } = lazyEnvironment(flags);
    expect(env.flagKeys).toEqual(['a', 'b', 'c', 'd']);
    expect(reads).toEqual([]);
    expect(evaluateFlag(env, 'nope', {}).errorCode).toBe('FLAG_NOT_FOUND');
    expect(reads).toEqual([]);
    expect(evaluateFlag(env, 'b', { plan: 'yes' }).variation).toBe('false');
    expect(reads).toEqual(['b', 'c']);
    evaluateFlag(env, 'b', {});
    evaluateAll(env, {}, ['a', 'c']);
    expect(reads).toEqual(['b', 'c', 'a']);
    evaluateAll(env, {}, (key) => key !== 'd');
    expect(reads).toEqual(['b', 'c', 'a']);
    evaluateAll(env, {});
    expect(reads).toEqual(['b', 'c', 'a', 'd']);
  });

  it('matches conditions that later flags add as it matches the first ones', () => {
    // Each flag adds conditions the environment has not seen, so the memo of condition results
    // grows while evaluateAll runs; every result must equal the one from a fresh environment.
    const many = Array.from({ length: 40 }, (_, i) =>
      flag(
        `f${i}`,
        Array.from({ length: (i % 5) + 1 }, (_, j) => `attribute-${i}-${j}`),
      ),
    );
    const contexts = [
      {},
      Object.fromEntries(
        many.flatMap((_, i) => [0, 1, 2, 3, 4].map((j) => [`attribute-${i}-${j}`, 'yes'])),
      ),
      { 'attribute-3-0': 'yes', 'attribute-7-0': 'yes', 'attribute-7-1': 'yes' },
    ];
    const { env } = lazyEnvironment(many);
    evaluateFlag(env, 'f0', contexts[1]!);
    for (const context of contexts) {
      const all = evaluateAll(env, context);
      for (const f of many) {
        const fresh = compileEnvironment({
          environment: 'p',
          version: 1,
          flags: [f],
          segments: [],
        });
        expect(all[f.key], f.key).toEqual(evaluateFlag(fresh, f.key, context));
      }
    }
  });
});

describe('compilation: parts flags have in common are shared, never mixed up', () => {
  it('serves every flag its own variations, salts and rule ids', () => {
    const configuration: SdkConfiguration = {
      environment: 'production',
      version: 1,
      segments: [],
      flags: [
        flag('boolean-1', ['plan']),
        flag('boolean-2', ['plan']),
        {
          ...flag('json', ['plan']),
          type: 'Json',
          variations: [
            { key: 'true', value: { limit: 1 } },
            { key: 'false', value: { limit: 2 } },
          ],
        },
        ...[1, 2].map((n) => ({
          ...flag(`split-${n}`, []),
          rules: [],
          fallthrough: {
            type: 'Rollout' as const,
            salt: `salt-${n}`,
            variations: [
              { key: 'true', weight: 50_000 },
              { key: 'false', weight: 50_000 },
            ],
          },
        })),
      ],
    };
    const env = compileEnvironment(configuration);
    const pro = { userId: 'u', plan: 'yes' };
    expect(evaluateFlag(env, 'boolean-1', pro)).toMatchObject({
      value: false,
      ruleId: 'boolean-1-rule',
    });
    expect(evaluateFlag(env, 'boolean-2', pro)).toMatchObject({
      value: false,
      ruleId: 'boolean-2-rule',
    });
    expect(evaluateFlag(env, 'json', pro).value).toEqual({ limit: 2 });
    expect(evaluateFlag(env, 'json', {}).value).toEqual({ limit: 1 });
    // Different salts bucket independently: some user lands differently in the two splits.
    const users = Array.from({ length: 50 }, (_, i) => ({ userId: `user-${i}` }));
    expect(
      users.some(
        (user) =>
          evaluateFlag(env, 'split-1', user).value !== evaluateFlag(env, 'split-2', user).value,
      ),
    ).toBe(true);
  });
});
