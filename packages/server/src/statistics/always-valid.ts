import chisquareCdf from '@stdlib/stats-base-dists-chisquare-cdf';

/**
 * The statistics of experiments (contract `experiments.md` section 3, design record 063):
 * estimates of a metric per variation, always-valid comparisons of a treatment against the
 * control, and the sample ratio mismatch test. Pure: the results route and the simulation
 * benchmark (`npm run bench:experiments`) call the same functions.
 *
 * The comparison is a two-sided mixture sequential probability ratio test, equivalently a
 * normal-mixture confidence sequence, on the relative difference of the two means: Johari,
 * Pekelis and Walsh, "Always valid inference: continuous monitoring of A/B tests" (Operations
 * Research 2022), and Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric,
 * nonasymptotic confidence sequences" (Annals of Statistics 2021) for the boundary. The variance
 * of a ratio metric comes from the delta method (Deng, Knoblich and Lu, "Applying the Delta
 * Method in Metric Analytics", KDD 2018).
 */

/**
 * Standard deviation τ of the mixing distribution over the true relative difference
 * (treatment/control − 1): 0.1, a 10% lift. Fixed in advance, never estimated from the data,
 * which keeps Λ a test martingale under equal means; τ only decides for which effect sizes the
 * interval is tightest (product changes move metrics by a few to a few tens of percent), never
 * the error bound. Design record 063 derives it and the benchmark measures it.
 */
export const RELATIVE_MIXING_SD = 0.1;

/**
 * Per-variation moments of per-user values: X = the user's metric value (for conversion 0/1,
 * for count the event count, for sum the summed property), Y = the user's denominator (1 for
 * per-user metrics; for `mean` metrics the user's count of events with a value). Users without
 * any event are included with X = 0, Y = (1 or 0). All sums are plain sums over the
 * variation's exposed users, so they can be kept incrementally (spec section 3, "Scale").
 */
export interface Moments {
  /** Exposed users in the variation. */
  users: number;
  /** ΣX over those users. */
  sumX: number;
  /** ΣX². */
  sumX2: number;
  /** ΣY. */
  sumY: number;
  /** ΣY². */
  sumY2: number;
  /** ΣXY. */
  sumXY: number;
}

/** Which way a metric should move (the metric's `direction`, spec section 1). */
export type Direction = 'higher_is_better' | 'lower_is_better';

/**
 * A comparison's verdict (spec section 3): the treatment is `better` or `worse` than the control
 * with the experiment's confidence, or nothing can be said yet.
 */
export type Verdict = 'better' | 'worse' | 'inconclusive';

/** A variation's estimate of a metric (the `value` and `standardError` of the results). */
export interface Estimate {
  /** ΣX/ΣY in the metric's unit (a rate for conversion, per user for count and sum, per event for mean); 0 when ΣY = 0. */
  value: number;
  /** The standard error of `value` by the delta method, in the same unit; 0 with fewer than two users or ΣY = 0. */
  standardError: number;
}

/** A treatment against the control at one look (the treatment's figures in the results). */
export interface Comparison {
  /** Treatment's value minus the control's, in the metric's unit. */
  absoluteDifference: number;
  /** Treatment's value / control's value − 1 (0.15 = 15% more); 0 when the control's value is 0. */
  relativeDifference: number;
  /**
   * Always-valid confidence interval of the RELATIVE difference (treatment/control − 1), at
   * `confidence` with Bonferroni's correction for `comparisons`. Always finite: when no interval
   * can be computed (see {@link compare}) it is the point `[relativeDifference, relativeDifference]`
   * and `pValue` is 1.
   */
  confidenceInterval: [number, number];
  /**
   * Always-valid two-sided p-value, min(1, 1/Λ), multiplied by `comparisons` (Bonferroni; the
   * same as min(1, 1/Λ) for one treatment), so that `pValue` < 1 − `confidence` exactly when the
   * interval excludes 0. Finite, in [0, 1].
   */
  pValue: number;
  /** `better`/`worse` when the interval lies wholly on one side of 0, `inconclusive` otherwise. */
  verdict: Verdict;
}

/** Options of {@link compare}. */
export interface CompareOptions {
  /** The experiment's `confidence`, 0.8–0.999 (spec section 2): α = 1 − confidence. */
  confidence: number;
  /** The metric's direction: which side of 0 is `better`. */
  direction: Direction;
  /** Treatment variations compared against the control for this metric (Bonferroni: α / comparisons); default 1. */
  comparisons?: number;
  /** A guardrail metric: the verdict is only ever `worse` or `inconclusive`. */
  guardrail?: boolean;
  /** False while some variation has fewer than `minimumUsers` (the caller checks): verdict `inconclusive`, figures still computed. Default true. */
  enoughUsers?: boolean;
  /** The mixing standard deviation τ on the relative scale; {@link RELATIVE_MIXING_SD} unless a test says otherwise. */
  tau?: number;
}

/** The value ΣX/ΣY and the delta-method variance of it (unit², 0 when it cannot be computed). */
function ratioAndVariance(m: Moments): { value: number; variance: number } {
  const { users: n, sumX, sumY } = m;
  if (sumY === 0 || n === 0) return { value: 0, variance: 0 };
  const value = sumX / sumY;
  if (n < 2) return { value, variance: 0 };
  // Sample (co)variances of the per-user X and Y.
  const varX = (m.sumX2 - (sumX * sumX) / n) / (n - 1);
  const varY = (m.sumY2 - (sumY * sumY) / n) / (n - 1);
  const covXY = (m.sumXY - (sumX * sumY) / n) / (n - 1);
  const meanY = sumY / n;
  // Rounding may leave a tiny negative for a variable that is constant.
  const spread = Math.max(0, varX - 2 * value * covXY + value * value * varY);
  const variance = spread / (meanY * meanY * n);
  return { value, variance: Number.isFinite(variance) ? variance : 0 };
}

/**
 * A variation's estimate of a metric: ΣX/ΣY and its standard error by the delta method for a
 * ratio, √((s_x² − 2R·s_xy + R²·s_y²) / (ȳ²·n)) with R = ΣX/ΣY, ȳ = ΣY/n and the sample
 * (co)variances s of the per-user values; for per-user metrics (Y = 1) that is s_x/√n.
 * Spec section 3 (`value`, `standardError`).
 */
export function estimate(m: Moments): Estimate {
  const { value, variance } = ratioAndVariance(m);
  return { value, standardError: Math.sqrt(variance) };
}

/**
 * The mixture boundary on a scale where the estimate `estimate` has variance `variance`: the
 * half-width of the always-valid interval at level `alpha`, and log Λ against 0.
 */
function mixtureBoundary(estimate: number, variance: number, alpha: number, tau: number) {
  const tau2 = tau * tau;
  const spread = variance + tau2;
  return {
    halfWidth: Math.sqrt(
      ((variance * spread) / tau2) * (Math.log(spread / variance) + 2 * Math.log(1 / alpha)),
    ),
    logLambda:
      0.5 * Math.log(variance / spread) + (estimate * estimate * tau2) / (2 * variance * spread),
  };
}

/**
 * The always-valid interval of the relative difference m_t/m_c − 1, and log Λ. Where both means
 * are positive it is computed on the log of the ratio, log m_t − log m_c, whose delta-method
 * variance Var(m_t)/m_t² + Var(m_c)/m_c² stays small where the ratio's explodes (a small control
 * mean), and mapped back with exp(·) − 1 (so it is not symmetric). Otherwise (a mean at or below
 * 0, e.g. a sum with refunds) on the ratio itself, with V = Var(m_t)/m_c² + m_t²·Var(m_c)/m_c⁴.
 * Undefined when the variance is 0 or not finite.
 */
function alwaysValidInterval(
  c: { value: number; variance: number },
  t: { value: number; variance: number },
  alpha: number,
  tau: number,
): { relative: [number, number]; logLambda: number } | undefined {
  if (c.value > 0 && t.value > 0) {
    const logRatio = Math.log(t.value) - Math.log(c.value);
    const variance = t.variance / (t.value * t.value) + c.variance / (c.value * c.value);
    if (!(variance > 0) || !Number.isFinite(variance)) return undefined;
    const { halfWidth, logLambda } = mixtureBoundary(logRatio, variance, alpha, tau);
    const relative: [number, number] = [
      Math.expm1(logRatio - halfWidth),
      Math.expm1(logRatio + halfWidth),
    ];
    return relative.every(Number.isFinite) ? { relative, logLambda } : undefined;
  }
  const c2 = c.value * c.value;
  const variance = t.variance / c2 + (t.value * t.value * c.variance) / (c2 * c2);
  if (!(variance > 0) || !Number.isFinite(variance)) return undefined;
  const ratio = t.value / c.value - 1;
  const { halfWidth, logLambda } = mixtureBoundary(ratio, variance, alpha, tau);
  const relative: [number, number] = [ratio - halfWidth, ratio + halfWidth];
  return relative.every(Number.isFinite) ? { relative, logLambda } : undefined;
}

/**
 * Compares a treatment against the control at one look; any number of looks keeps
 * P(wrong better/worse) ≤ 1 − confidence (spec section 3).
 *
 * With means m_c, m_t and their delta-method variances, the log of the ratio
 * ℓ̂ = log m_t − log m_c has the variance V = Var(m_t)/m_t² + Var(m_c)/m_c² (where a mean is not
 * positive, the ratio itself is used: see {@link alwaysValidInterval}). Mixing the normal
 * likelihood ratio of ℓ over ℓ ~ N(0, τ²) gives
 *
 *   Λ = √(V/(V+τ²)) · exp(ℓ̂²τ² / (2V(V+τ²)))
 *
 * and, by Ville's inequality, the always-valid interval of the values ℓ that Λ does not reject
 * at level α = (1 − confidence)/comparisons:
 *
 *   ℓ̂ ± √( V(V+τ²)/τ² · (log((V+τ²)/V) + 2·log(1/α)) ),
 *
 * reported for the relative difference as exp(·) − 1. It excludes 0 exactly when Λ ≥ 1/α. The verdict is `better` when the interval lies wholly on
 * the good side of 0 for `direction`, `worse` when wholly on the bad side (a guardrail says only
 * `worse`), `inconclusive` otherwise or when `enoughUsers` is false.
 *
 * Degenerate inputs give no NaN: when a side has fewer than two users or ΣY = 0, the control's
 * value is 0, or V is 0 or not finite, the result is `inconclusive` with p-value 1 and the
 * zero-width interval [r̂, r̂] (r̂ = 0 when the control's value is 0), which a reader tells from
 * a real interval by its p-value of 1 and zero width. Computed in logs, so Λ never overflows.
 */
export function compare(control: Moments, treatment: Moments, options: CompareOptions): Comparison {
  const { confidence, direction, guardrail = false, enoughUsers = true } = options;
  const comparisons = Math.max(1, options.comparisons ?? 1);
  const tau = options.tau ?? RELATIVE_MIXING_SD;
  const c = ratioAndVariance(control);
  const t = ratioAndVariance(treatment);
  const absoluteDifference = t.value - c.value;
  const relativeDifference = c.value === 0 ? 0 : t.value / c.value - 1;
  const undecided: Comparison = {
    absoluteDifference,
    relativeDifference,
    confidenceInterval: [relativeDifference, relativeDifference],
    pValue: 1,
    verdict: 'inconclusive',
  };
  if (control.users < 2 || treatment.users < 2 || control.sumY === 0 || treatment.sumY === 0)
    return undecided;
  if (c.value === 0 || !Number.isFinite(relativeDifference)) return undecided;
  const interval = alwaysValidInterval(c, t, (1 - confidence) / comparisons, tau);
  if (interval === undefined) return undecided;
  const [low, high] = interval.relative;
  const pValue = Math.min(1, comparisons * Math.exp(-interval.logLambda));

  let verdict: Verdict = 'inconclusive';
  if (enoughUsers) {
    const above = low > 0;
    const below = high < 0;
    const good = direction === 'higher_is_better' ? above : below;
    const bad = direction === 'higher_is_better' ? below : above;
    if (bad) verdict = 'worse';
    else if (good && !guardrail) verdict = 'better';
  }
  return {
    absoluteDifference,
    relativeDifference,
    confidenceInterval: [low, high],
    pValue,
    verdict,
  };
}

/** The p-value below which {@link sampleRatioMismatch} reports a mismatch (spec section 3). */
export const SRM_THRESHOLD = 0.001;

/**
 * Sample ratio mismatch (spec section 3; Fabijan et al., "Diagnosing Sample Ratio Mismatch in
 * Online Controlled Experiments", KDD 2019): Pearson's chi-square goodness-of-fit test of the
 * exposed users per variation against the weights, with k − 1 degrees of freedom for the k
 * variations of positive weight. `detected` when p < {@link SRM_THRESHOLD}.
 *
 * @param observed - exposed users by variation key (a key missing counts as 0 users)
 * @param weights - weights by variation key, in any unit (basis points in the spec); only their
 *   ratios matter. Users in a variation of weight 0 are a mismatch (p-value 0).
 * @returns p-value in [0, 1]; 1 and not detected without users or with fewer than two variations
 */
export function sampleRatioMismatch(
  observed: Record<string, number>,
  weights: Record<string, number>,
): { pValue: number; detected: boolean } {
  const keys = Object.keys(weights);
  const totalWeight = keys.reduce((sum, key) => sum + Math.max(0, weights[key] ?? 0), 0);
  const totalUsers = keys.reduce((sum, key) => sum + (observed[key] ?? 0), 0);
  const weighted = keys.filter((key) => (weights[key] ?? 0) > 0);
  if (totalUsers <= 0 || totalWeight <= 0 || weighted.length < 2)
    return { pValue: 1, detected: false };
  if (keys.some((key) => (weights[key] ?? 0) <= 0 && (observed[key] ?? 0) > 0))
    return { pValue: 0, detected: true };
  let statistic = 0;
  for (const key of weighted) {
    const expected = (totalUsers * (weights[key] ?? 0)) / totalWeight;
    const difference = (observed[key] ?? 0) - expected;
    statistic += (difference * difference) / expected;
  }
  const pValue = Math.min(1, Math.max(0, 1 - chisquareCdf(statistic, weighted.length - 1)));
  return { pValue, detected: pValue < SRM_THRESHOLD };
}
