import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucket, BUCKET_COUNT } from './bucketing.js';
import { compileEnvironment } from './compile.js';
import { evaluateAll, evaluateFlag } from './evaluate.js';
import { CONDITION_OPERATORS } from './types.js';
import type { EvaluationContext, SdkConfiguration, SdkFlag } from './types.js';

// Fixed seed: these are statistical properties, and a test suite must not flake.
const SEED = 20_240_601;

const rolloutFlag = (key: string, weight: number, salt?: string): SdkFlag => ({
  key,
  version: 1,
  type: 'Boolean',
  enabled: true,
  variations: [
    { key: 'in', value: true },
    { key: 'out', value: false },
  ],
  rules: [
    {
      id: 'pct',
      priority: 1,
      conditionGroups: [],
      serve: { type: 'Rollout', salt, variations: [{ key: 'in', weight }] },
    },
  ],
  fallthrough: { type: 'Fixed', variation: 'out' },
  offVariation: 'out',
  prerequisites: [],
});

const envOf = (...flags: SdkFlag[]) =>
  compileEnvironment({ environment: null, version: 1, flags, segments: [] });

describe('rollout: buckets are uniform', () => {
  it('spreads 100 000 distinct ids over 10 equal ranges, each within ±5% of its share', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 24 }), {
          minLength: 100_000,
          maxLength: 100_000,
        }),
        (salt, ids) => {
          const counts = new Array<number>(10).fill(0);
          for (const id of ids) {
            const b = bucket(salt, id);
            counts[Math.floor(b / (BUCKET_COUNT / 10))]! += 1;
          }
          // Expected 10 000 per range, standard deviation ≈ 95: ±500 is over 5 sigma.
          for (const count of counts) expect(Math.abs(count - 10_000)).toBeLessThanOrEqual(500);
        },
      ),
      { seed: SEED, numRuns: 3 },
    );
  });

  it('always gives an integer in [0, 100000)', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (salt, value) => {
        const b = bucket(salt, value);
        expect(Number.isInteger(b)).toBe(true);
        expect(b).toBeGreaterThanOrEqual(0);
        expect(b).toBeLessThan(BUCKET_COUNT);
      }),
      { seed: SEED },
    );
  });
});

describe('rollout: bucketing is sticky', () => {
  it('serves a context the same variation across compilations and calls', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.integer({ min: 0, max: BUCKET_COUNT }),
        (id, w) => {
          const first = evaluateFlag(envOf(rolloutFlag('f', w)), 'f', { userId: id });
          const second = evaluateFlag(envOf(rolloutFlag('f', w)), 'f', { userId: id });
          expect(second).toEqual(first);
        },
      ),
      { seed: SEED },
    );
  });
});

describe('rollout: growing a percentage only adds contexts', () => {
  it('keeps everyone in the first N% when the rollout grows to M > N%', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 0, max: BUCKET_COUNT }),
        fc.integer({ min: 0, max: BUCKET_COUNT }),
        (salt, ids, a, b) => {
          const small = envOf(rolloutFlag('f', Math.min(a, b), salt || undefined));
          const large = envOf(rolloutFlag('f', Math.max(a, b), salt || undefined));
          for (const userId of ids) {
            if (evaluateFlag(small, 'f', { userId }).variation === 'in') {
              expect(evaluateFlag(large, 'f', { userId }).variation).toBe('in');
            }
          }
        },
      ),
      { seed: SEED },
    );
  });
});

describe('rollout: flags are independent', () => {
  it('being in one flag’s 50% says nothing about another’s', () => {
    const env = envOf(rolloutFlag('a', 50_000), rolloutFlag('b', 50_000));
    let both = 0;
    for (let i = 0; i < 20_000; i++) {
      const all = evaluateAll(env, { userId: `user-${i}` });
      if (all.a?.variation === 'in' && all.b?.variation === 'in') both += 1;
    }
    // Independent: about a quarter are in both (σ ≈ 61).
    expect(Math.abs(both - 5_000)).toBeLessThan(400);
  });
});

// A configuration exercising every operator, segments, rollouts and prerequisites.
const everything: SdkConfiguration = {
  environment: 'fuzz',
  version: 1,
  segments: [
    {
      key: 'seg',
      version: 1,
      conditionLogic: 'Or',
      conditions: [{ attribute: 'plan', operator: 'In', values: ['gold', '1'] }],
    },
  ],
  flags: [
    {
      ...rolloutFlag('base', 50_000),
      prerequisites: [],
    },
    {
      key: 'all-ops',
      version: 1,
      type: 'String',
      enabled: true,
      variations: [
        { key: 'a', value: 'a' },
        { key: 'b', value: 'b' },
      ],
      rules: CONDITION_OPERATORS.map((operator, i) => ({
        id: `r${i}`,
        priority: i,
        segmentKey: i % 5 === 0 ? 'seg' : undefined,
        conditionGroups: [
          {
            operator: i % 2 === 0 ? 'And' : 'Or',
            conditions: [
              { attribute: 'x', operator, values: ['1', 'a', '2024-01-01', '1.0.0', '^a'] },
              { attribute: 'y', operator, values: ['0'], negate: true },
            ],
          },
        ],
        serve:
          i % 3 === 0
            ? { type: 'Rollout', bucketBy: 'x', variations: [{ key: 'a', weight: 40_000 }] }
            : { type: 'Fixed', variation: 'b' },
      })),
      fallthrough: { type: 'Rollout', variations: [{ key: 'a', weight: 50_000 }] },
      offVariation: 'b',
      prerequisites: [{ prerequisiteFlagKey: 'base', expectedVariationKey: 'in' }],
    },
  ],
};

describe('evaluation: never throws', () => {
  const env = compileEnvironment(everything);
  const value = fc.oneof(
    fc.anything(),
    fc.string(),
    fc.double(),
    fc.array(fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null))),
  );
  const context = fc.oneof(
    fc.anything(),
    fc.record({ userId: value, x: value, y: value, plan: value }, { requiredKeys: [] }),
    fc.record({
      userId: value,
      attributes: fc.oneof(fc.anything(), fc.dictionary(fc.string(), value)),
    }),
  );

  it('for arbitrary contexts and flag keys', () => {
    fc.assert(
      fc.property(context, fc.oneof(fc.constant('all-ops'), fc.string()), (ctx, key) => {
        const result = evaluateFlag(env, key, ctx as EvaluationContext);
        expect(result.key).toBe(key);
        expect(['a', 'b', null]).toContain(result.variation);
        evaluateAll(env, ctx as EvaluationContext);
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });

  it('for arbitrary configuration-shaped input', () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (flags, segments) => {
        const config = { environment: null, version: 1, flags, segments } as SdkConfiguration;
        const compiled = (() => {
          try {
            return compileEnvironment(config);
          } catch {
            return undefined;
          }
        })();
        if (compiled !== undefined) evaluateAll(compiled, {});
      }),
      { seed: SEED, numRuns: 500 },
    );
  });
});
