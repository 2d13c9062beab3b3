import { describe, expect, it } from 'vitest';
import { parseSemver, toInstant, toInstantMemoised, toNumber } from './value-parsing.js';

describe('operators: numeric values are decimal numbers or numeric strings', () => {
  it.each([
    ['42', 42],
    [' -1.5 ', -1.5],
    ['1e3', 1000],
    ['.5', 0.5],
    [7, 7],
  ])('reads %j', (input, expected) => {
    expect(toNumber(input)).toBe(expected);
  });

  it.each(['', 'abc', '0x10', 'Infinity', '1,5', '--1', true, null, Infinity, NaN, {}])(
    'rejects %j',
    (input) => {
      expect(toNumber(input)).toBeNaN();
    },
  );
});

describe('operators: dates are ISO 8601 or Unix milliseconds', () => {
  it.each([
    ['2024-01-01', Date.UTC(2024, 0, 1)],
    ['2024-01-01T12:30:00Z', Date.UTC(2024, 0, 1, 12, 30)],
    ['2024-01-01T12:30Z', Date.UTC(2024, 0, 1, 12, 30)],
    ['2024-01-01T12:30:00', Date.UTC(2024, 0, 1, 12, 30)],
    ['2024-01-01 12:30:00', Date.UTC(2024, 0, 1, 12, 30)],
    ['2024-01-01T12:30:00.123456Z', Date.UTC(2024, 0, 1, 12, 30, 0, 123)],
    ['2024-01-01T12:30:00+02:00', Date.UTC(2024, 0, 1, 10, 30)],
    ['2024-01-01T12:30:00-0130', Date.UTC(2024, 0, 1, 14, 0)],
    ['2024-02-29', Date.UTC(2024, 1, 29)],
    ['0050-01-01', new Date(0).setUTCFullYear(50, 0, 1)],
    ['1704067200000', 1704067200000],
    [1704067200000, 1704067200000],
  ])('reads %j', (input, expected) => {
    expect(toInstant(input)).toBe(expected);
  });

  it.each([
    'yesterday',
    '2023-02-29',
    '2024-13-01',
    '2024-01-32',
    '2024-01-01T24:00:00Z',
    '2024-01-01Z',
    '01/02/2024',
    'Mon, 01 Jan 2024 00:00:00 GMT',
    true,
    null,
  ])('rejects %j', (input) => {
    expect(toInstant(input)).toBeNaN();
  });
});

describe('operators: semver values are strict SemVer 2.0.0', () => {
  it.each(['1.2.3', 'v1.2.3', '1.0.0-alpha.1', '1.0.0+build.5'])('accepts %s', (v) => {
    expect(parseSemver(v)).not.toBeNull();
  });

  it.each(['1.2', '1', 'latest', '01.2.3', '1.2.3.4', ''])('rejects %j (no coercion)', (v) => {
    expect(parseSemver(v)).toBeNull();
  });
});

describe('operators: memoised instants read the same as unmemoised ones', () => {
  it.each(['2024-02-29', '2023-02-29', '1700000000000', 'soon', 17, null])('reads %j', (input) => {
    const expected = toInstant(input);
    expect(toInstantMemoised(input)).toEqual(expected);
    expect(toInstantMemoised(input)).toEqual(expected);
  });
});
