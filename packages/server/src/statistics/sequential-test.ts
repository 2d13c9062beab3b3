import normalCdf from '@stdlib/stats-base-dists-normal-cdf';

/**
 * The guard's sequential test (design record 046): a one-sided mixture sequential probability
 * ratio test (mSPRT) for the difference of two proportions, after Johari, Pekelis and Walsh,
 * "Always valid inference: continuous monitoring of A/B tests" (2017; Operations Research 2022),
 * sections 3–4, with a half-normal mixing distribution so that only a regression of the target
 * counts as evidence. Pure: the guard and the simulation benchmark call the same function.
 */

/**
 * Standard deviation τ of the mixing distribution over the true difference of rates: one
 * percentage point. Fixed in advance (not estimated from the data), which keeps the statistic a
 * test martingale under equal rates; section 3.3 of the paper shows that τ only trades power
 * between small and large effects, never the error bound.
 */
export const MIXING_SD = 0.01;

/** One side's figures: exposed users, and how many of them sent the metric after exposure. */
export interface SideCounts {
  users: number;
  converted: number;
}

export type Direction = 'lower_is_better' | 'higher_is_better';

/** The test's state at one look. */
export interface SequentialTestResult {
  /** The mixture likelihood ratio Λ: evidence of a regression, 1 meaning none either way (finite). */
  statistic: number;
  /** Λ at which the test stops: 1 / (1 − confidence). */
  threshold: number;
  /** The always-valid p-value min(1, 1/Λ). */
  pValue: number;
  /** Whether Λ reached the threshold: the target's rate is worse than the rest's. */
  regression: boolean;
}

function rate({ users, converted }: SideCounts): number {
  return users === 0 ? 0 : converted / users;
}

/**
 * Tests for a regression of `target` against `rest` at one look (any number of looks keeps the
 * error bound: Ville's inequality bounds the chance that Λ ever reaches 1/α under equal rates by
 * α = 1 − `confidence`).
 *
 * With Δ̂ the observed regression (target's rate minus the rest's when lower is better, the other
 * way round otherwise) and s² = p̃ₜ(1−p̃ₜ)/nₜ + p̃ᵣ(1−p̃ᵣ)/nᵣ its variance (p̃ = (x+1)/(n+2), so
 * that a side without events still has a variance), mixing the normal likelihood ratio
 * exp((θΔ̂ − θ²/2)/s²) over θ ~ half-normal(τ) gives
 *
 *   Λ = 2 · √(s²/(s²+τ²)) · exp(Δ̂²τ² / (2s²(s²+τ²))) · Φ(Δ̂τ / (s√(s²+τ²)))
 *
 * (the paper's two-sided Λ times 2Φ(·); derivation in design record 046). Computed in logs.
 *
 * @param confidence - 0.8–0.999 (spec section 5)
 * @param tau - the mixing standard deviation, {@link MIXING_SD} unless a test says otherwise
 */
export function regressionTest(
  target: SideCounts,
  rest: SideCounts,
  confidence: number,
  direction: Direction,
  tau = MIXING_SD,
): SequentialTestResult {
  const threshold = 1 / (1 - confidence);
  if (target.users === 0 || rest.users === 0)
    return { statistic: 1, threshold, pValue: 1, regression: false };
  const smoothed = ({ users, converted }: SideCounts) => (converted + 1) / (users + 2);
  const pt = smoothed(target);
  const pr = smoothed(rest);
  const variance = (pt * (1 - pt)) / target.users + (pr * (1 - pr)) / rest.users;
  const observed = rate(target) - rate(rest);
  const delta = direction === 'lower_is_better' ? observed : -observed;
  const tau2 = tau * tau;
  const spread = variance + tau2;
  const logStatistic =
    Math.log(2) +
    0.5 * Math.log(variance / spread) +
    (delta * delta * tau2) / (2 * variance * spread) +
    Math.log(normalCdf((delta * tau) / Math.sqrt(variance * spread), 0, 1));
  // Overwhelming evidence overflows exp(); the largest finite number still says it (and fits JSON).
  const statistic = Math.min(Math.exp(logStatistic), Number.MAX_VALUE);
  return {
    statistic,
    threshold,
    pValue: Math.min(1, 1 / statistic),
    regression: logStatistic >= Math.log(threshold),
  };
}
