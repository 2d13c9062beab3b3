import { describe, expect, it } from 'vitest';
import { compileEnvironment, compileLazily } from './compile.js';
import {
  evaluateAll,
  evaluateFlag,
  evaluateSelected,
  flagMetadata,
  isStaticFlag,
  selectFlags,
} from './evaluate.js';
import type { EvaluationContext, SdkConfiguration, SdkFlag } from './types.js';

const flag = (key: string, over: Partial<SdkFlag> = {}): SdkFlag => ({
  key,
  version: 1,
  type: 'Json',
  enabled: true,
  variations: [
    { key: 'on', value: { limits: [1, 2] } },
    { key: 'off', value: null },
  ],
  rules: [],
  fallthrough: { type: 'Fixed', variation: 'on' },
  offVariation: 'off',
  prerequisites: [],
  ...over,
});

const config = (...flags: SdkFlag[]): SdkConfiguration => ({
  environment: 'production',
  version: 3,
  flags,
  segments: [],
});

describe('evaluation: unknown flag', () => {
  it('is an ERROR result with FLAG_NOT_FOUND, null value and variation', () => {
    expect(evaluateFlag(compileEnvironment(config()), 'nope', {})).toEqual({
      key: 'nope',
      value: null,
      variation: null,
      reason: 'ERROR',
      errorCode: 'FLAG_NOT_FOUND',
    });
  });
});

describe('evaluation: results carry only the fields that apply', () => {
  it('a default result has no ruleId, prerequisiteKey or errorCode', () => {
    const result = evaluateFlag(compileEnvironment(config(flag('a'))), 'a', {});
    expect(Object.keys(result).sort()).toEqual(['key', 'reason', 'value', 'variation']);
  });
});

describe('evaluation: the context may be any value', () => {
  it.each([null, undefined, 'user', 42, ['a']])('treats %j as an empty context', (context) => {
    const env = compileEnvironment(config(flag('a')));
    expect(evaluateFlag(env, 'a', context as unknown as EvaluationContext).reason).toBe('DEFAULT');
  });
});

describe('compilation: the configuration is read, never changed', () => {
  it('leaves the input untouched and serves frozen copies of JSON values', () => {
    const input = config(
      flag('a', {
        rules: [
          { id: 'r2', priority: 2, conditionGroups: [], serve: { type: 'Fixed', variation: 'on' } },
          { id: 'r1', priority: 1, conditionGroups: [], serve: { type: 'Fixed', variation: 'on' } },
        ],
      }),
    );
    const snapshot = structuredClone(input);
    const env = compileEnvironment(input);
    expect(input).toEqual(snapshot);
    expect(Object.isFrozen(input.flags[0]?.variations[0]?.value)).toBe(false);
    const { value } = evaluateFlag(env, 'a', {});
    expect(value).toEqual({ limits: [1, 2] });
    expect(Object.isFrozen(value)).toBe(true);
    expect(Object.isFrozen((value as { limits: number[] }).limits)).toBe(true);
  });

  it('keeps the first of duplicate flag keys', () => {
    const env = compileEnvironment(config(flag('a'), flag('a', { enabled: false })));
    expect(env.flagKeys).toEqual(['a']);
    expect(evaluateFlag(env, 'a', {}).reason).toBe('DEFAULT');
  });

  it('exposes the environment name and version', () => {
    const env = compileEnvironment(config(flag('a'), flag('b')));
    expect(env.environment).toBe('production');
    expect(env.version).toBe(3);
    expect(env.flagKeys).toEqual(['a', 'b']);
  });
});

describe('evaluation: evaluateAll', () => {
  const env = compileEnvironment(
    config(flag('a'), flag('b', { enabled: false }), flag('c', { prerequisites: [] })),
  );

  it('evaluates every flag, keyed by flag key', () => {
    const all = evaluateAll(env, { userId: 'u' });
    expect(Object.keys(all)).toEqual(['a', 'b', 'c']);
    expect(all.b).toMatchObject({ key: 'b', variation: 'off', reason: 'DISABLED' });
  });

  it('evaluates only the flags the filter includes', () => {
    expect(Object.keys(evaluateAll(env, {}, (key) => key !== 'b'))).toEqual(['a', 'c']);
  });

  it('returns the same results as evaluateFlag', () => {
    const all = evaluateAll(env, { userId: 'u' });
    for (const key of env.flagKeys)
      expect(all[key]).toEqual(evaluateFlag(env, key, { userId: 'u' }));
  });

  it('accepts a list of keys, evaluated in configuration order, unknown and repeated keys ignored', () => {
    expect(Object.keys(evaluateAll(env, {}, ['a', 'c']))).toEqual(['a', 'c']);
    expect(Object.keys(evaluateAll(env, {}, ['c', 'missing', 'a', 'c']))).toEqual(['a', 'c']);
    expect(evaluateAll(env, {}, [])).toEqual({});
  });

  it('gives the same results for a key list as for the equivalent predicate', () => {
    const keys = ['c', 'b', 'x'];
    expect(evaluateAll(env, { userId: 'u' }, keys)).toEqual(
      evaluateAll(env, { userId: 'u' }, (key) => keys.includes(key)),
    );
  });

  it('handles a flag keyed "__proto__" as a plain key', () => {
    const all = evaluateAll(compileEnvironment(config(flag('__proto__'))), {});
    expect(Object.getPrototypeOf(all)).toBe(Object.prototype);
    expect(Object.keys(all)).toEqual(['__proto__']);
    expect(JSON.stringify(all)).toMatch(/^\{"__proto__":\{"key":"__proto__"/);
    const listed = evaluateAll(compileEnvironment(config(flag('__proto__'))), {}, ['__proto__']);
    expect(Object.getPrototypeOf(listed)).toBe(Object.prototype);
    expect(Object.keys(listed)).toEqual(['__proto__']);
  });
});

describe('evaluation: selectFlags and evaluateSelected', () => {
  const env = compileEnvironment(
    config(flag('a'), flag('b', { enabled: false }), flag('c'), flag('d')),
  );

  it('selects positions in configuration order, unknown and repeated keys dropped', () => {
    expect(selectFlags(env)).toEqual([0, 1, 2, 3]);
    expect(selectFlags(env, ['d', 'missing', 'b', 'd'])).toEqual([1, 3]);
    expect(selectFlags(env, (key) => key !== 'c')).toEqual([0, 1, 3]);
    expect(selectFlags(env, [])).toEqual([]);
  });

  it('evaluates the selected flags in order, as evaluateFlag would', () => {
    const results = evaluateSelected(env, { userId: 'u' }, selectFlags(env, ['d', 'b']));
    expect(results).toEqual([
      evaluateFlag(env, 'b', { userId: 'u' }),
      evaluateFlag(env, 'd', { userId: 'u' }),
    ]);
    expect(results[0]).toMatchObject({ key: 'b', reason: 'DISABLED' });
  });

  it('compiles only the flags it evaluates', () => {
    const compiled: number[] = [];
    const lazy = compileLazily({
      ...config(),
      flagKeys: ['a', 'b', 'c'],
      flag: (index) => {
        compiled.push(index);
        return flag(['a', 'b', 'c'][index] as string);
      },
    });
    const positions = selectFlags(lazy, ['c']);
    expect(compiled).toEqual([]);
    expect(evaluateSelected(lazy, {}, positions).map((result) => result.key)).toEqual(['c']);
    expect(compiled).toEqual([2]);
  });
});

describe('evaluation: conditions shared between flags and segments', () => {
  // Identical conditions compile to one and are matched once per evaluation; every flag must
  // still see the result for the context being evaluated.
  const country = { attribute: 'country', operator: 'In' as const, values: ['NL', 'DE'] };
  const plan = { attribute: 'plan', operator: 'Equals' as const, values: ['pro'] };
  const targeted = (key: string, segmentKey?: string): SdkFlag =>
    flag(key, {
      rules: [
        {
          id: `${key}-rule`,
          priority: 1,
          conditionGroups: [{ operator: 'And', conditions: [country, { ...plan }] }],
          ...(segmentKey ? { segmentKey } : {}),
          serve: { type: 'Fixed', variation: 'off' },
        },
      ],
    });
  const env = compileEnvironment({
    ...config(
      targeted('a'),
      targeted('b', 'pros'),
      targeted('c'),
      // Rollouts by the default identity (found once per evaluation) and by an attribute.
      flag('r', { fallthrough: { type: 'Rollout', variations: [{ key: 'on', weight: 50_000 }] } }),
      flag('rb', {
        fallthrough: {
          type: 'Rollout',
          bucketBy: 'country',
          variations: [{ key: 'on', weight: 50_000 }],
        },
      }),
    ),
    segments: [{ key: 'pros', version: 1, conditionLogic: 'And', conditions: [plan, country] }],
  });
  const contexts: EvaluationContext[] = [
    { country: 'NL', plan: 'pro' },
    { country: 'NL', plan: 'free' },
    { attributes: { country: 'DE', plan: 'pro' } },
    {},
    ...Array.from({ length: 40 }, (_, i) => ({ userId: `user-${i}`, country: `c${i}` })),
  ];

  it('evaluateAll agrees with evaluating each flag on its own, context after context', () => {
    for (const context of contexts) {
      const all = evaluateAll(env, context);
      for (const key of ['a', 'b', 'c', 'r', 'rb'])
        expect(all[key]).toEqual(evaluateFlag(env, key, context));
    }
    expect(evaluateAll(env, { country: 'NL', plan: 'pro' }).a?.variation).toBe('off');
    expect(evaluateAll(env, { country: 'NL', plan: 'free' }).a?.variation).toBe('on');
  });

  it('an evaluation started inside an evaluateAll predicate does not disturb it', () => {
    const matching = contexts[0] as EvaluationContext;
    const other = contexts[1] as EvaluationContext;
    const targetedKeys = ['a', 'b', 'c'];
    const nested = evaluateAll(env, matching, (key) => {
      if (!targetedKeys.includes(key)) return false;
      expect(evaluateAll(env, other, [key])[key]?.variation).toBe('on');
      return true;
    });
    expect(nested).toEqual(evaluateAll(env, matching, targetedKeys));
    expect(Object.values(nested).map((result) => result.variation)).toEqual(['off', 'off', 'off']);
  });
});

describe('isStaticFlag: whether a flag reads the context at all', () => {
  const rule = {
    id: 'r1',
    priority: 1,
    conditionGroups: [],
    serve: { type: 'Fixed' as const, variation: 'on' },
  };
  const env = compileEnvironment(
    config(
      flag('fixed'),
      flag('disabled', { enabled: false }),
      flag('targeted', { rules: [rule] }),
      flag('split', {
        fallthrough: { type: 'Rollout', variations: [{ key: 'on', weight: 100_000 }] },
      }),
      flag('gated', {
        prerequisites: [{ prerequisiteFlagKey: 'fixed', expectedVariationKey: 'on' }],
      }),
    ),
  );

  it('is true only for an enabled flag with a fixed default and nothing else', () => {
    expect(
      ['fixed', 'disabled', 'targeted', 'split', 'gated', 'unknown'].filter((key) =>
        isStaticFlag(env, key),
      ),
    ).toEqual(['fixed']);
  });
});

describe('flagMetadata: what the team recorded about a flag', () => {
  const metadata = { version: '1.0.2', replicas: 2, audited: true };
  const env = compileEnvironment(
    config(
      flag('described', { metadata }),
      flag('plain'),
      // Configurations are not trusted: values outside OpenFeature's metadata types are dropped.
      flag('odd', { metadata: { kept: 'yes', nested: { a: 1 }, none: null } as never }),
    ),
  );

  it('is the flag metadata, frozen; {} without; undefined for unknown flags', () => {
    expect(flagMetadata(env, 'described')).toEqual(metadata);
    expect(Object.isFrozen(flagMetadata(env, 'described'))).toBe(true);
    expect(flagMetadata(env, 'plain')).toEqual({});
    expect(flagMetadata(env, 'odd')).toEqual({ kept: 'yes' });
    expect(flagMetadata(env, 'unknown')).toBeUndefined();
  });

  it('does not change evaluation', () => {
    const { key: _described, ...described } = evaluateFlag(env, 'described', {});
    const { key: _plain, ...plain } = evaluateFlag(env, 'plain', {});
    expect(described).toEqual(plain);
  });
});
