const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['week', 7 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
];

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** How long before `nowMs` the instant `atMs` was, in its largest whole unit ("3 minutes ago"). */
export function timeAgo(atMs: number, nowMs: number): string {
  const elapsed = nowMs - atMs;
  for (const [unit, ms] of UNITS) {
    if (elapsed >= ms) return relative.format(-Math.floor(elapsed / ms), unit);
  }
  return 'just now';
}

/**
 * When a credential was last used or a person last seen (design record 048): "3 minutes ago",
 * the exact local time in its tooltip, or "Never". Uses reach the server in batches, so the
 * time can be up to a usage flush behind.
 */
export function LastUsed({ at }: { at: string | null | undefined }) {
  if (!at) return <>Never</>;
  const date = new Date(at);
  return (
    <time dateTime={at} title={date.toLocaleString()}>
      {timeAgo(date.getTime(), Date.now())}
    </time>
  );
}
