/**
 * A flag's evaluations per day as a small line (the flag list's column), with the total beside
 * it; a screen reader hears the total and the days' counts, oldest first.
 */
export function Sparkline({ counts }: { counts: number[] }) {
  const total = counts.reduce((sum, n) => sum + n, 0);
  const max = Math.max(1, ...counts);
  const step = counts.length > 1 ? 60 / (counts.length - 1) : 0;
  const points = counts.map(
    (n, i) => `${(i * step).toFixed(1)},${(18 - (n / max) * 16).toFixed(1)}`,
  );
  return (
    <span
      className="sparkline"
      role="img"
      aria-label={`${total.toLocaleString()} evaluations in the last ${counts.length} days, per day: ${counts.join(', ')}`}
    >
      <svg viewBox="0 0 60 20" width="60" height="20" aria-hidden="true">
        <polyline points={points.join(' ')} fill="none" stroke="currentColor" strokeWidth="1.5" />
      </svg>
      <span aria-hidden="true">{total.toLocaleString()}</span>
    </span>
  );
}
