import { describe, expect, it } from 'vitest';
import {
  compare,
  estimate,
  RELATIVE_MIXING_SD,
  sampleRatioMismatch,
  type Moments,
} from './always-valid.js';

/** Moments of a per-user metric (Y = 1) from the users and the sums of X and X². */
function perUser(users: number, sumX: number, sumX2 = sumX): Moments {
  return { users, sumX, sumX2, sumY: users, sumY2: users, sumXY: sumX };
}

/** Moments of a conversion metric: `converted` of `users` (X ∈ {0, 1}). */
const conversion = (users: number, converted: number) => perUser(users, converted);

const EMPTY: Moments = { users: 0, sumX: 0, sumX2: 0, sumY: 0, sumY2: 0, sumXY: 0 };

describe('estimate', () => {
  it('a conversion rate and its standard error √(s²/n)', () => {
    const { value, standardError } = estimate(conversion(10_000, 1000));
    expect(value).toBe(0.1);
    // s² = (1000 − 1000²/10000)/9999, the sample variance of 0/1 values.
    expect(standardError).toBeCloseTo(0.0030001500112509377, 12);
  });

  it('a ratio metric by the delta method (users (x, y): (3,1) (0,0) (10,2) (4,2) (0,1))', () => {
    const { value, standardError } = estimate({
      users: 5,
      sumX: 17,
      sumX2: 125,
      sumY: 6,
      sumY2: 10,
      sumXY: 31,
    });
    expect(value).toBeCloseTo(17 / 6, 12);
    // Computed independently from the five users' sample (co)variances.
    expect(standardError).toBeCloseTo(1.0139840138024434, 10);
  });

  it('no users, no denominator or one user: value 0 or the ratio, standard error 0, never NaN', () => {
    expect(estimate(EMPTY)).toEqual({ value: 0, standardError: 0 });
    expect(estimate({ ...perUser(3, 0), sumY: 0, sumY2: 0, sumXY: 0 })).toEqual({
      value: 0,
      standardError: 0,
    });
    expect(estimate(perUser(1, 7, 49))).toEqual({ value: 7, standardError: 0 });
    expect(estimate(perUser(1000, 5000, 25_000))).toEqual({ value: 5, standardError: 0 });
  });
});

describe('compare (always-valid, relative difference)', () => {
  const options = { confidence: 0.95, direction: 'higher_is_better' } as const;

  it('known values: 10% → 11.5% on 10,000 users each', () => {
    const result = compare(conversion(10_000, 1000), conversion(10_000, 1150), options);
    expect(result.absoluteDifference).toBeCloseTo(0.015, 12);
    expect(result.relativeDifference).toBeCloseTo(0.15, 12);
    // On the log of the ratio: V = 0.0016697321…, τ = 0.1, α = 0.05 (computed independently).
    expect(result.confidenceInterval[0]).toBeCloseTo(0.015530325386816571, 10);
    expect(result.confidenceInterval[1]).toBeCloseTo(0.30227524175238935, 10);
    expect(result.pValue).toBeCloseTo(0.01759451490846744, 10);
    expect(result.verdict).toBe('better');
    expect(RELATIVE_MIXING_SD).toBe(0.1);
  });

  it('is wider than the fixed-horizon interval with the same variance', () => {
    const result = compare(conversion(10_000, 1000), conversion(10_000, 1150), options);
    const fixedHalfWidth = 1.959963984540054 * Math.sqrt(0.0016697321906103651);
    const [low, high] = result.confidenceInterval;
    expect((Math.log1p(high) - Math.log1p(low)) / 2).toBeGreaterThan(fixedHalfWidth);
  });

  it('symmetry: swapping the sides mirrors the verdict, equal sides say nothing', () => {
    const a = conversion(10_000, 1000);
    const b = conversion(10_000, 1150);
    expect(compare(a, b, options).verdict).toBe('better');
    expect(compare(b, a, options).verdict).toBe('worse');
    expect(compare(b, a, options).pValue).toBeCloseTo(compare(a, b, options).pValue, 1);
    const same = compare(a, a, options);
    expect(same.relativeDifference).toBe(0);
    expect(same.verdict).toBe('inconclusive');
    expect(same.pValue).toBe(1);
    // Symmetric on the log of the ratio.
    expect((1 + same.confidenceInterval[0]) * (1 + same.confidenceInterval[1])).toBeCloseTo(1, 12);
  });

  it('direction: more is worse when lower is better', () => {
    const a = conversion(10_000, 1000);
    const b = conversion(10_000, 1150);
    expect(compare(a, b, { ...options, direction: 'lower_is_better' }).verdict).toBe('worse');
    expect(compare(b, a, { ...options, direction: 'lower_is_better' }).verdict).toBe('better');
  });

  it('a guardrail says worse, never better', () => {
    const a = conversion(10_000, 1000);
    const b = conversion(10_000, 1150);
    expect(compare(a, b, { ...options, guardrail: true }).verdict).toBe('inconclusive');
    expect(compare(b, a, { ...options, guardrail: true }).verdict).toBe('worse');
    expect(compare(b, a, { ...options, guardrail: true }).pValue).toBe(
      compare(b, a, options).pValue,
    );
  });

  it('Bonferroni: two treatments need more evidence, and the p-value says so', () => {
    const a = conversion(10_000, 1000);
    const b = conversion(10_000, 1140);
    const one = compare(a, b, options);
    const two = compare(a, b, { ...options, comparisons: 2 });
    expect(one.verdict).toBe('better');
    expect(two.verdict).toBe('inconclusive');
    expect(two.pValue).toBeCloseTo(2 * one.pValue, 12);
    // α = 0.025 (computed independently).
    expect(two.confidenceInterval[0]).toBeCloseTo(-0.004062219557423829, 10);
    expect(two.confidenceInterval[1]).toBeCloseTo(0.3049007935239503, 10);
  });

  it('confidence: more confidence needs more evidence; the figures do not depend on it otherwise', () => {
    const a = conversion(10_000, 1000);
    const b = conversion(10_000, 1150);
    const loose = compare(a, b, { ...options, confidence: 0.8 });
    const strict = compare(a, b, { ...options, confidence: 0.999 });
    expect(loose.verdict).toBe('better');
    expect(strict.verdict).toBe('inconclusive');
    expect(loose.pValue).toBe(strict.pValue);
    expect(strict.confidenceInterval[0]).toBeLessThan(loose.confidenceInterval[0]);
  });

  it('too few users: inconclusive, but the interval and p-value are still reported', () => {
    const result = compare(conversion(10_000, 1000), conversion(10_000, 1150), {
      ...options,
      enoughUsers: false,
    });
    expect(result.verdict).toBe('inconclusive');
    expect(result.pValue).toBeLessThan(0.05);
    expect(result.confidenceInterval[0]).toBeGreaterThan(0);
  });

  it('a wider mixture (τ) is looser for small effects', () => {
    const a = conversion(10_000, 1000);
    const b = conversion(10_000, 1150);
    const narrow = compare(a, b, options);
    const wide = compare(a, b, { ...options, tau: 1 });
    expect(wide.confidenceInterval[1] - wide.confidenceInterval[0]).toBeGreaterThan(
      narrow.confidenceInterval[1] - narrow.confidenceInterval[0],
    );
  });

  it('degenerate inputs: inconclusive, p-value 1, a finite zero-width interval, never NaN', () => {
    const cases: [Moments, Moments][] = [
      [EMPTY, EMPTY],
      [EMPTY, conversion(1000, 100)],
      [conversion(1000, 100), EMPTY],
      [conversion(1, 1), conversion(1, 0)],
      // The control's value is 0: no relative difference.
      [conversion(1000, 0), conversion(1000, 50)],
      [conversion(1000, 0), conversion(1000, 0)],
      // No variance on either side.
      [perUser(1000, 5000, 25_000), perUser(1000, 6000, 36_000)],
      [conversion(1000, 1000), conversion(1000, 1000)],
      // A mean metric where one side has no event with a value.
      [{ ...perUser(1000, 0), sumY: 0, sumY2: 0, sumXY: 0 }, perUser(1000, 10, 30)],
    ];
    for (const [control, treatment] of cases) {
      const result = compare(control, treatment, options);
      expect(result.verdict).toBe('inconclusive');
      expect(result.pValue).toBe(1);
      const [low, high] = result.confidenceInterval;
      expect(low).toBe(high);
      expect(low).toBe(result.relativeDifference);
      expect(JSON.parse(JSON.stringify(result))).toEqual(result);
      for (const value of [result.absoluteDifference, result.relativeDifference, low, high])
        expect(Number.isFinite(value)).toBe(true);
    }
  });

  it('overwhelming evidence stays finite', () => {
    const result = compare(
      conversion(10_000_000, 100_000),
      conversion(10_000_000, 900_000),
      options,
    );
    expect(result.verdict).toBe('better');
    expect(result.pValue).toBe(0);
    expect(result.confidenceInterval.every(Number.isFinite)).toBe(true);
  });

  it('a ratio (mean) metric compares its delta-method means', () => {
    // Control: 1000 users, 800 events with a value averaging 10; treatment averages 12.
    const control: Moments = {
      users: 1000,
      sumX: 8000,
      sumX2: 160_000,
      sumY: 800,
      sumY2: 1200,
      sumXY: 14_000,
    };
    const treatment: Moments = { ...control, sumX: 9600, sumX2: 230_400, sumXY: 16_800 };
    const result = compare(control, treatment, options);
    expect(result.relativeDifference).toBeCloseTo(0.2, 12);
    expect(result.absoluteDifference).toBeCloseTo(2, 12);
    expect(Number.isFinite(result.pValue)).toBe(true);
  });
});

describe('sampleRatioMismatch (chi-square, p < 0.001)', () => {
  it('a split close to its weights is no mismatch', () => {
    const result = sampleRatioMismatch({ a: 5100, b: 4900 }, { a: 5000, b: 5000 });
    // χ² = 4 on one degree of freedom: p = 2(1 − Φ(2)).
    expect(result.pValue).toBeCloseTo(0.04550026389635857, 8);
    expect(result.detected).toBe(false);
  });

  it('a split far from its weights is detected', () => {
    const result = sampleRatioMismatch({ a: 5300, b: 4700 }, { a: 5000, b: 5000 });
    expect(result.pValue).toBeLessThan(1e-6);
    expect(result.detected).toBe(true);
  });

  it('uneven weights and three variations: k − 1 degrees of freedom', () => {
    // Exactly the weights: χ² = 0.
    expect(
      sampleRatioMismatch({ a: 2000, b: 4000, c: 4000 }, { a: 2000, b: 4000, c: 4000 }),
    ).toEqual({ pValue: 1, detected: false });
    // χ² = 120²/2000 + 120²/4000 + 0 = 10.8 on two degrees of freedom: p = e^(−10.8/2).
    const skewed = sampleRatioMismatch(
      { a: 2120, b: 3880, c: 4000 },
      { a: 2000, b: 4000, c: 4000 },
    );
    expect(skewed.pValue).toBeCloseTo(Math.exp(-10.8 / 2), 8);
    expect(skewed.detected).toBe(false);
    expect(
      sampleRatioMismatch({ a: 2200, b: 3800, c: 4000 }, { a: 2000, b: 4000, c: 4000 }).detected,
    ).toBe(true);
  });

  it('no users, one variation, or users where no weight is', () => {
    expect(sampleRatioMismatch({}, { a: 5000, b: 5000 })).toEqual({ pValue: 1, detected: false });
    expect(sampleRatioMismatch({ a: 10 }, { a: 10_000 })).toEqual({ pValue: 1, detected: false });
    expect(sampleRatioMismatch({ a: 10, b: 10, c: 1 }, { a: 5000, b: 5000, c: 0 })).toEqual({
      pValue: 0,
      detected: true,
    });
  });
});

/** mulberry32: a small seeded generator, so the simulation gives the same figures every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('A/A simulation: reading after every 100 users keeps wrong verdicts ≤ α', () => {
  it('200 seeded runs at 10% conversion, 5,000 users each side, confidence 0.95', () => {
    const random = seeded(63);
    const runs = 200;
    let wrong = 0;
    let wrongIfPeekingFixedHorizon = 0;
    for (let run = 0; run < runs; run++) {
      const control = conversion(0, 0);
      const treatment = conversion(0, 0);
      let failed = false;
      let failedFixed = false;
      for (let users = 100; users <= 5000; users += 100) {
        for (let i = 0; i < 100; i++) {
          for (const side of [control, treatment]) {
            const x = random() < 0.1 ? 1 : 0;
            side.users += 1;
            side.sumX += x;
            side.sumX2 += x;
            side.sumY += 1;
            side.sumY2 += 1;
            side.sumXY += x;
          }
        }
        const result = compare(control, treatment, {
          confidence: 0.95,
          direction: 'higher_is_better',
          enoughUsers: users >= 500,
        });
        if (result.verdict !== 'inconclusive') failed = true;
        // What a fixed-horizon 95% interval read at every look would say (the check has teeth).
        if (users >= 500) {
          const c = estimate(control);
          const t = estimate(treatment);
          const z = (t.value - c.value) / Math.hypot(c.standardError, t.standardError);
          if (Math.abs(z) > 1.959963984540054) failedFixed = true;
        }
      }
      if (failed) wrong += 1;
      if (failedFixed) wrongIfPeekingFixedHorizon += 1;
    }
    expect(wrong / runs).toBeLessThanOrEqual(0.05);
    expect(wrongIfPeekingFixedHorizon / runs).toBeGreaterThan(0.1);
  });
});
