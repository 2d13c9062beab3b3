/**
 * Parsing of the typed operands that conditions compare: numbers, instants and semantic versions.
 * Condition values are parsed once at compile time; context attributes are parsed per evaluation,
 * so these functions are written to allocate as little as possible.
 */
import semver from 'semver';
import type { SemVer } from 'semver';

// Decimal numbers only: hex, binary, "Infinity" and the empty string are what `Number()` would
// also accept, and other SDK languages would not.
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * Reads a number from a context attribute or condition value: a finite JS number, or a string
 * holding a decimal number (surrounding whitespace allowed). Anything else yields `NaN`.
 */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : NaN;
  if (typeof value !== 'string') return NaN;
  const trimmed = value.trim();
  if (!DECIMAL.test(trimmed)) return NaN;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : NaN;
}

// ISO 8601 calendar date, optionally with a time and a UTC offset. The offset is only allowed
// after a time, as in RFC 3339; a date-time without an offset is read as UTC (not local time,
// which is what `Date.parse` would do, and which would make results depend on the host).
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?)?$/;

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function parseIso8601(text: string): number {
  const m = ISO_8601.exec(text);
  if (m === null) return NaN;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  // Only milliseconds are kept: Unix milliseconds are the engine's time unit.
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12) return NaN;
  const maxDay = month === 2 && !isLeapYear(year) ? 28 : (DAYS_IN_MONTH[month - 1] ?? 31);
  if (day < 1 || day > maxDay || hour > 23 || minute > 59 || second > 59) return NaN;
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const offHours = Number(m[10]);
    const offMinutes = Number(m[11]);
    if (offHours > 23 || offMinutes > 59) return NaN;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offHours * 60 + offMinutes);
  }
  let utc = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  // Date.UTC maps years 0–99 to 1900–1999; correct for the (rare) literal years.
  if (year < 100) utc = new Date(utc).setUTCFullYear(year);
  return utc - offsetMinutes * 60_000;
}

/**
 * Reads an instant as Unix milliseconds: a finite number or a decimal string is taken as Unix
 * milliseconds, any other string must be an ISO 8601 date or date-time (UTC when no offset is
 * given). Anything else yields `NaN`.
 */
export function toInstant(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : NaN;
  if (typeof value !== 'string') return NaN;
  const asNumber = toNumber(value);
  if (!Number.isNaN(asNumber)) return asNumber;
  return parseIso8601(value.trim());
}

// Date attributes (signup dates, trial ends) repeat across the flags of one request and across
// requests, and parsing one runs a regex and builds a Date, so parsed string instants are memoised
// the same bounded way as versions below.
const INSTANT_MEMO_LIMIT = 4096;
const instantMemo = new Map<string, number>();

/** {@link toInstant} with a bounded memo for strings, for context attributes on the hot path. */
export function toInstantMemoised(value: unknown): number {
  if (typeof value !== 'string') return toInstant(value);
  const known = instantMemo.get(value);
  if (known !== undefined) return known;
  const parsed = toInstant(value);
  if (instantMemo.size >= INSTANT_MEMO_LIMIT) instantMemo.clear();
  instantMemo.set(value, parsed);
  return parsed;
}

/**
 * Parses a semantic version strictly (SemVer 2.0.0: MAJOR.MINOR.PATCH with optional pre-release
 * and build metadata; a leading `v` and surrounding whitespace are accepted, as the `semver`
 * package does). Partial versions such as `1.2` are not coerced. Returns `null` when invalid.
 */
export function parseSemver(value: string): SemVer | null {
  return semver.parse(value);
}

// App and SDK versions are few per environment and repeat on every request, so parsed attribute
// versions are memoised. The bound keeps a flood of distinct strings from growing memory.
const SEMVER_MEMO_LIMIT = 4096;
const semverMemo = new Map<string, SemVer | null>();

/** {@link parseSemver} with a bounded memo, for context attributes on the hot path. */
export function parseSemverMemoised(value: string): SemVer | null {
  const known = semverMemo.get(value);
  if (known !== undefined) return known;
  const parsed = semver.parse(value);
  if (semverMemo.size >= SEMVER_MEMO_LIMIT) semverMemo.clear();
  semverMemo.set(value, parsed);
  return parsed;
}

/** Compares two parsed versions by SemVer precedence (build metadata ignored): -1, 0 or 1. */
export function compareSemver(a: SemVer, b: SemVer): number {
  return a.compare(b);
}
