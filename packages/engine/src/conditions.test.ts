import { describe, expect, it } from 'vitest';
import { compileCondition, conditionMatches, validateCondition } from './conditions.js';
import { normalizeOperator } from './operators.js';
import type { SdkCondition } from './types.js';

const matches = (condition: SdkCondition, context: Record<string, unknown>): boolean =>
  conditionMatches(compileCondition(condition), context);

describe('operators: names are matched case-insensitively and normalised', () => {
  it.each([
    ['equals', 'Equals'],
    ['NOTIN', 'NotIn'],
    ['semvergreaterthanorequal', 'SemverGreaterThanOrEqual'],
    ['MatchesRegex', 'MatchesRegex'],
  ])('%s → %s', (input, canonical) => {
    expect(normalizeOperator(input)).toBe(canonical);
  });

  it.each(['Resembles', '', ' Equals', 'Equal'])('%j is unknown', (input) => {
    expect(normalizeOperator(input)).toBeUndefined();
  });
});

describe('operators: negate inverts the final result, missing attributes included', () => {
  const condition: SdkCondition = { attribute: 'plan', operator: 'NotIn', values: ['free'] };

  it('a missing attribute satisfies no operator, not even a negative one', () => {
    expect(matches(condition, {})).toBe(false);
  });

  it('negated, a missing attribute matches', () => {
    expect(matches({ ...condition, negate: true }, {})).toBe(true);
  });

  it('an object attribute counts as missing', () => {
    expect(matches(condition, { plan: { name: 'gold' } })).toBe(false);
    expect(matches({ ...condition, negate: true }, { plan: { name: 'gold' } })).toBe(true);
  });
});

describe('operators: an unknown operator never matches, negated or not', () => {
  it('does not match', () => {
    const bogus = { attribute: 'a', operator: 'Bogus', values: ['x'] } as unknown as SdkCondition;
    expect(matches(bogus, { a: 'x' })).toBe(false);
    expect(matches({ ...bogus, negate: true }, { a: 'x' })).toBe(false);
  });
});

describe('context: attributes are own properties only', () => {
  it('does not find Object.prototype members', () => {
    const c: SdkCondition = { attribute: 'constructor', operator: 'Contains', values: ['Object'] };
    expect(matches(c, {})).toBe(false);
    expect(matches(c, { attributes: {} })).toBe(false);
  });

  it('looks inside attributes when the top level lacks the attribute', () => {
    const c: SdkCondition = { attribute: 'plan', operator: 'Equals', values: ['gold'] };
    expect(matches(c, { attributes: { plan: 'gold' } })).toBe(true);
    expect(matches(c, { plan: null, attributes: { plan: 'gold' } })).toBe(true);
  });

  it('ignores an attributes field that is not an object', () => {
    const c: SdkCondition = { attribute: '0', operator: 'Equals', values: ['g'] };
    expect(matches(c, { attributes: 'gold' })).toBe(false);
    expect(matches(c, { attributes: ['g'] })).toBe(false);
  });
});

describe('validation: a valid condition has no problems', () => {
  it.each([
    { attribute: 'plan', operator: 'Equals', values: ['gold'] },
    { attribute: 'plan', operator: 'in', values: ['gold', 'silver'], negate: true },
    { attribute: 'email', operator: 'MatchesRegex', values: ['^[^@]+@acme\\.com$'] },
    { attribute: 'v', operator: 'SemverLessThan', values: ['2.0.0-beta.1'] },
    { attribute: 'd', operator: 'After', values: ['2024-01-01', '1704067200000'] },
    { attribute: 'n', operator: 'GreaterThanOrEqual', values: ['-1.5e3'] },
  ])('$operator', (condition) => {
    expect(validateCondition(condition)).toEqual([]);
  });
});

describe('validation: problems are reported in words', () => {
  it('rejects an empty attribute', () => {
    expect(validateCondition({ attribute: ' ', operator: 'Equals', values: ['x'] })).toEqual([
      'attribute must not be empty',
    ]);
  });

  it('rejects an unknown operator and lists the known ones', () => {
    const [problem] = validateCondition({ attribute: 'a', operator: 'Resembles', values: ['x'] });
    expect(problem).toMatch(
      /^operator "Resembles" is not a known operator; expected one of Equals/,
    );
  });

  it('requires an operator', () => {
    expect(validateCondition({ attribute: 'a', operator: null, values: ['x'] })).toEqual([
      'operator is required',
    ]);
  });

  it('requires at least one value', () => {
    expect(validateCondition({ attribute: 'a', operator: 'Equals', values: [] })).toEqual([
      'values must contain at least one value',
    ]);
  });

  it('explains that RE2 has no lookaround or backreferences', () => {
    const problems = validateCondition({
      attribute: 'a',
      operator: 'MatchesRegex',
      values: ['ok', '(?=x)y', '(a)\\1', '(?<!a)b'],
    });
    expect(problems).toHaveLength(3);
    for (const problem of problems) {
      expect(problem).toMatch(/^values\[\d\] ".*" is not a valid RE2 regular expression/);
      expect(problem).toContain('RE2 does not support lookahead, lookbehind or backreferences');
    }
  });

  it('reports a plain syntax error without the lookaround hint', () => {
    const [problem] = validateCondition({
      attribute: 'a',
      operator: 'MatchesRegex',
      values: ['['],
    });
    expect(problem).toContain('missing closing ]');
    expect(problem).not.toContain('lookahead');
  });

  it('rejects invalid semantic versions', () => {
    expect(
      validateCondition({ attribute: 'v', operator: 'SemverEquals', values: ['1.2'] }),
    ).toEqual([
      'values[0] "1.2" is not a semantic version: use MAJOR.MINOR.PATCH (e.g. 1.4.0 or 2.0.0-beta.1)',
    ]);
  });

  it('rejects invalid dates', () => {
    const [problem] = validateCondition({ attribute: 'd', operator: 'Before', values: ['soon'] });
    expect(problem).toMatch(/^values\[0\] "soon" is not a date: use ISO 8601/);
  });

  it('rejects non-numeric values for numeric operators', () => {
    expect(
      validateCondition({ attribute: 'n', operator: 'LessThan', values: ['10', 'ten'] }),
    ).toEqual(['values[1] "ten" is not a number']);
  });

  it('rejects non-string values', () => {
    expect(validateCondition({ attribute: 'n', operator: 'Equals', values: [5] })).toEqual([
      'values[0] must be a string',
    ]);
  });

  it('reports every problem at once', () => {
    expect(validateCondition({ attribute: '', operator: 'Nope', values: null })).toHaveLength(3);
  });
});
