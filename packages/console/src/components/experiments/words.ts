import type { Flag, MetricKind } from '../../api/types';

/** A variation's name as people read it ("On"), by its key or id; the key when unknown. */
export function variationName(flag: Flag, key: string): string {
  const variation = flag.variations.find((v) => v.key === key || v.id === key);
  return variation?.name ?? variation?.key ?? key;
}

/** Basis points as a percentage: 5000 → "50%", 3333 → "33.33%". */
export function percentOfBasisPoints(weight: number): string {
  return `${(weight / 100).toLocaleString(undefined, { maximumFractionDigits: 2 })}%`;
}

/** A share as a percentage with up to two decimals: 0.1234 → "12.34%". */
export function percent(share: number, signed = false): string {
  const text = `${(share * 100).toLocaleString(undefined, {
    minimumFractionDigits: 1,
    maximumFractionDigits: 2,
  })}%`;
  return signed && share > 0 ? `+${text}` : text.replace('-', '−');
}

/** A number to four significant digits, with a sign when asked. */
export function figure(value: number, signed = false): string {
  const text = value.toLocaleString(undefined, { maximumSignificantDigits: 4 });
  return signed && value > 0 ? `+${text}` : text.replace('-', '−');
}

/** A metric's value in the words of its kind: "11.50%" of users, "1.2 per user", "3.4". */
export function valueWords(kind: MetricKind, value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (kind === 'conversion') return percent(value);
  if (kind === 'count' || kind === 'sum') return `${figure(value)} per user`;
  return figure(value);
}

/** An absolute difference in the words of its kind: "+1.5 percentage points", "+0.2 per user". */
export function absoluteWords(kind: MetricKind, value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (kind === 'conversion')
    return `${figure(Math.round(value * 10_000) / 100, true)} percentage points`;
  if (kind === 'count' || kind === 'sum') return `${figure(value, true)} per user`;
  return figure(value, true);
}
