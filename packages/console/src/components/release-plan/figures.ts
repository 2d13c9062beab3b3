/** The guard's numbers in words (release-plan state and guard panel). */

/** The guard's statistic or threshold to four significant digits ("2,270,000", "20"). */
export function figure(value: number): string {
  return value.toLocaleString(undefined, { maximumSignificantDigits: 4 });
}

/** A rate as a percentage with two decimals, or a dash before any user. */
export function rateWords(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(2)}%`;
}

/**
 * How sure the guard is that the target is worse, from its statistic Λ: the always-valid
 * p-value is min(1, 1/Λ) (design record 046), so 1 − 1/Λ is the confidence a person can read
 * against the guard's own ("99.9% sure", "not at all").
 */
export function sureWords(statistic: number): string {
  const sure = 1 - 1 / statistic;
  if (!(sure > 0)) return 'no sign yet that it is worse';
  if (sure >= 0.9999) return 'more than 99.99% sure it is worse';
  return `${(Math.floor(sure * 10_000) / 100).toLocaleString()}% sure it is worse`;
}

/** Figures of one side, as the guard reports them. */
interface Side {
  exposedUsers: number;
  usersWithMetric: number;
  rate: number | null;
}

/**
 * How much worse (or better) the target does than the rest, in percentage points and as a factor:
 * "55.00 percentage points worse (12 times the rest's rate)".
 */
export function differenceWords(
  target: Side,
  rest: Side,
  direction: 'lower_is_better' | 'higher_is_better',
): string {
  if (target.rate === null || rest.rate === null) return 'not measured yet';
  const points = (target.rate - rest.rate) * 100;
  if (Math.abs(points) < 0.005) return 'the same rate as the rest';
  const worse = direction === 'lower_is_better' ? points > 0 : points < 0;
  const factor = rest.rate > 0 ? ` (${figure(target.rate / rest.rate)} times the rest's rate)` : '';
  return `${Math.abs(points).toFixed(2)} percentage points ${worse ? 'worse' : 'better'}${factor}`;
}

/**
 * The guard's finding in words a person acts on: how much worse the target does, how sure the
 * guard is, and how sure it must be to stop the release; the statistic itself in parentheses.
 */
export function verdictWords(
  reading: { target: Side; rest: Side; statistic: number; threshold: number },
  guard: { direction: 'lower_is_better' | 'higher_is_better'; confidence: number },
  targetName: string,
): string {
  const needed = `${(guard.confidence * 100).toLocaleString()}%`;
  return (
    `${targetName} does ${differenceWords(reading.target, reading.rest, guard.direction)}; ` +
    `the guard is ${sureWords(reading.statistic)} (it stops the release at ${needed}; ` +
    `statistic ${figure(reading.statistic)}, threshold ${figure(reading.threshold)}).`
  );
}
