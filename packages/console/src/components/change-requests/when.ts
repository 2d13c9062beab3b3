/**
 * Times in the viewer's time zone, with the zone named (change-requests.md section 3): the API
 * stores and returns UTC; people read and type their own wall-clock time.
 */

/** The viewer's IANA time zone, as the browser reports it ("Europe/Berlin"). */
export function viewerZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** An RFC 3339 time as the viewer reads it: "27 Nov 2026, 14:05:09 CET". */
export function formatWhen(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    dateStyle: 'medium',
    timeStyle: 'long',
  });
}

/**
 * A `datetime-local` input's value (the viewer's wall-clock time) as an RFC 3339 UTC time, or
 * null when empty or not a time.
 */
export function utcOfLocal(value: string): string | null {
  if (value.trim() === '') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}
