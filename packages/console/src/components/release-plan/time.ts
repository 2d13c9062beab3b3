import { parse, serialize, type Duration } from 'tinyduration';

/** The units a step's wait is entered in, as ISO 8601 duration parts. */
export const WAIT_UNITS = {
  seconds: 'seconds',
  minutes: 'minutes',
  hours: 'hours',
  days: 'days',
} as const;
export type WaitUnit = keyof typeof WAIT_UNITS;

/** A wait as typed (an amount and a unit) as the ISO 8601 duration the API takes (`PT2S`, `P1D`). */
export function waitToIso(amount: string, unit: WaitUnit): string {
  const value = Number(amount);
  // tinyduration writes a zero duration as "P": the API's own zero is "PT0S".
  if (!Number.isFinite(value) || value === 0) return value === 0 ? 'PT0S' : amount;
  return serialize({ [unit]: value });
}

/** An ISO 8601 duration, or null when the text is not one. */
export function parseDuration(iso: string): Duration | null {
  try {
    return parse(iso);
  } catch {
    return null;
  }
}

/** A duration in words: "2 seconds", "1 day 6 hours", "no wait". */
export function durationWords(iso: string): string {
  const duration = parseDuration(iso);
  if (!duration) return iso;
  const parts = (
    ['years', 'months', 'weeks', 'days', 'hours', 'minutes', 'seconds'] as const
  ).flatMap((unit) => {
    const value = duration[unit];
    return value ? [`${value} ${value === 1 ? unit.slice(0, -1) : unit}`] : [];
  });
  return parts.length === 0 ? 'no wait' : parts.join(' ');
}

/**
 * `start` moved on by an ISO 8601 duration, calendar parts (years, months, days) in the viewer's
 * calendar, as a person counts "1 day later"; null for text that is not a duration.
 */
export function addDuration(start: Date, iso: string): Date | null {
  const duration = parseDuration(iso);
  if (!duration) return null;
  const sign = duration.negative ? -1 : 1;
  const next = new Date(start);
  next.setFullYear(next.getFullYear() + sign * (duration.years ?? 0));
  next.setMonth(next.getMonth() + sign * (duration.months ?? 0));
  next.setDate(next.getDate() + sign * ((duration.weeks ?? 0) * 7 + (duration.days ?? 0)));
  const clockMs =
    ((duration.hours ?? 0) * 3600 + (duration.minutes ?? 0) * 60 + (duration.seconds ?? 0)) * 1000;
  return new Date(next.getTime() + sign * clockMs);
}

/** The viewer's time zone, named as people read it: "Europe/Berlin (CET)". */
export function viewerTimeZone(at: Date = new Date()): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const short = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' })
    .formatToParts(at)
    .find((part) => part.type === 'timeZoneName')?.value;
  return short && short !== zone ? `${zone} (${short})` : zone;
}

/** A time in the viewer's zone, with the zone's short name: "27 Nov 2026, 14:05:09 CET". */
export function formatTime(at: Date | string): string {
  return new Date(at).toLocaleString(undefined, {
    dateStyle: 'medium',
    timeStyle: 'long',
  });
}
