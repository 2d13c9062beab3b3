import { describe, expect, it } from 'vitest';
import { compileEnvironment } from './compile.js';
import { evaluateFlag } from './evaluate.js';
import { findPrerequisiteProblem, MAX_PREREQUISITE_DEPTH } from './prerequisites.js';
import type { PrerequisiteGraphFlag } from './prerequisites.js';
import type { SdkFlag } from './types.js';

const node = (key: string, ...requires: string[]): PrerequisiteGraphFlag => ({
  key,
  prerequisites: requires.map((k) => ({ prerequisiteFlagKey: k, expectedVariationKey: 'on' })),
});

const chain = (length: number): PrerequisiteGraphFlag[] =>
  Array.from({ length }, (_, i) => (i + 1 < length ? node(`f${i}`, `f${i + 1}`) : node(`f${i}`)));

const sdkFlag = (key: string, ...requires: string[]): SdkFlag => ({
  key,
  version: 1,
  type: 'Boolean',
  enabled: true,
  variations: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
  rules: [],
  fallthrough: { type: 'Fixed', variation: 'on' },
  offVariation: 'off',
  prerequisites: requires.map((k) => ({ prerequisiteFlagKey: k, expectedVariationKey: 'on' })),
});

const envOf = (flags: SdkFlag[]) =>
  compileEnvironment({ environment: 'e', version: 1, flags, segments: [] });

describe('prerequisites: write-time check', () => {
  it('accepts a sound graph, shared prerequisites included', () => {
    expect(findPrerequisiteProblem([node('a', 'b', 'c'), node('b', 'c'), node('c')])).toBe(
      undefined,
    );
  });

  it('reports a missing prerequisite flag', () => {
    expect(findPrerequisiteProblem([node('a', 'b'), node('b', 'ghost')])).toMatchObject({
      kind: 'missing',
      flagKey: 'b',
      prerequisiteKey: 'ghost',
      path: ['a', 'b', 'ghost'],
    });
  });

  it('reports a flag requiring itself as a cycle', () => {
    expect(findPrerequisiteProblem([node('a', 'a')])).toMatchObject({
      kind: 'cycle',
      path: ['a', 'a'],
      message: 'prerequisites form a cycle: a → a',
    });
  });

  it('reports the cycle itself, not the way in', () => {
    const problem = findPrerequisiteProblem([node('x', 'a'), node('a', 'b'), node('b', 'a')]);
    expect(problem).toMatchObject({ kind: 'cycle', flagKey: 'b', prerequisiteKey: 'a' });
    expect(problem?.path).toEqual(['a', 'b', 'a']);
  });

  it('reports an expected variation the prerequisite does not have', () => {
    const flags = [
      { key: 'a', prerequisites: [{ prerequisiteFlagKey: 'b', expectedVariationKey: 'maybe' }] },
      { key: 'b', variations: [{ key: 'on' }], prerequisites: [] },
    ];
    expect(findPrerequisiteProblem(flags)).toMatchObject({ kind: 'unknown-variation' });
  });

  it(`allows chains of ${MAX_PREREQUISITE_DEPTH} edges and rejects longer ones`, () => {
    expect(findPrerequisiteProblem(chain(MAX_PREREQUISITE_DEPTH + 1))).toBe(undefined);
    expect(findPrerequisiteProblem(chain(MAX_PREREQUISITE_DEPTH + 2))).toMatchObject({
      kind: 'too-deep',
    });
  });

  it('detects depth whichever flag is explored first', () => {
    const flags = chain(MAX_PREREQUISITE_DEPTH + 2).reverse();
    expect(findPrerequisiteProblem(flags)).toMatchObject({ kind: 'too-deep' });
  });

  it('handles a 100 000-flag cycle without overflowing the stack', () => {
    const n = 100_000;
    const flags = Array.from({ length: n }, (_, i) => node(`f${i}`, `f${(i + 1) % n}`));
    expect(findPrerequisiteProblem(flags)?.kind).toBe('too-deep');
  });

  it('with a start flag, ignores problems it cannot reach', () => {
    const flags = [node('a', 'b'), node('b'), node('broken', 'ghost')];
    expect(findPrerequisiteProblem(flags, 'a')).toBe(undefined);
    expect(findPrerequisiteProblem(flags)).toMatchObject({ kind: 'missing', flagKey: 'broken' });
  });
});

describe('prerequisites: evaluation never recurses without bound', () => {
  it('a chain deeper than the limit is an error, not a stack overflow', () => {
    const n = 5_000;
    const flags = Array.from({ length: n }, (_, i) =>
      i + 1 < n ? sdkFlag(`f${i}`, `f${i + 1}`) : sdkFlag(`f${i}`),
    );
    const result = evaluateFlag(envOf(flags), 'f0', {});
    expect(result).toMatchObject({ reason: 'ERROR', errorCode: 'MALFORMED_FLAG', value: null });
  });

  it(`a chain of exactly ${MAX_PREREQUISITE_DEPTH} edges evaluates`, () => {
    const n = MAX_PREREQUISITE_DEPTH + 1;
    const flags = Array.from({ length: n }, (_, i) =>
      i + 1 < n ? sdkFlag(`f${i}`, `f${i + 1}`) : sdkFlag(`f${i}`),
    );
    expect(evaluateFlag(envOf(flags), 'f0', {})).toMatchObject({ reason: 'DEFAULT', value: true });
  });

  it('a long cycle is an error', () => {
    const flags = Array.from({ length: 10 }, (_, i) => sdkFlag(`f${i}`, `f${(i + 1) % 10}`));
    expect(evaluateFlag(envOf(flags), 'f3', {})).toMatchObject({
      reason: 'ERROR',
      errorCode: 'PREREQUISITE_CYCLE',
      prerequisiteKey: 'f4',
    });
  });

  it('leaves no state behind: a cycle error does not affect the next evaluation', () => {
    const env = envOf([sdkFlag('a', 'b'), sdkFlag('b', 'a'), sdkFlag('c', 'd'), sdkFlag('d')]);
    expect(evaluateFlag(env, 'a', {}).reason).toBe('ERROR');
    expect(evaluateFlag(env, 'c', {}).reason).toBe('DEFAULT');
    expect(env.visiting.every((mark) => mark === 0)).toBe(true);
  });
});
