/** The guard's numbers in words (release-plan state and guard panel). */

/** The guard's statistic or threshold to four significant digits ("2,270,000", "20"). */
export function figure(value: number): string {
  return value.toLocaleString(undefined, { maximumSignificantDigits: 4 });
}

/** A rate as a percentage with two decimals, or a dash before any user. */
export function rateWords(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(2)}%`;
}
