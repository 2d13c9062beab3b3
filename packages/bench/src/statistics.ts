/** The `p`-th percentile (0–100) of `values` by the nearest-rank method; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** The median of `values` (nearest rank); NaN when empty. */
export const median = (values: readonly number[]): number => percentile(values, 50);

/** Wall-clock time in epoch milliseconds with sub-millisecond precision, comparable across processes. */
export const preciseNow = (): number => performance.timeOrigin + performance.now();
