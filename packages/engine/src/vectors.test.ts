// Runs the shared, language-neutral test vectors: every SDK runs the same file, so all of them
// match and bucket identically.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bucket, compileEnvironment, evaluateFlag } from './index.js';
import type { EvaluationContext, EvaluationResult, SdkConfiguration } from './index.js';

interface VectorCase {
  name: string;
  configuration: SdkConfiguration;
  flagKey: string;
  context: EvaluationContext;
  expected: Omit<EvaluationResult, 'key'>;
}

interface Vectors {
  cases: VectorCase[];
  buckets: { salt: string; value: string; bucket: number }[];
}

const vectors = JSON.parse(
  readFileSync(new URL('../test-vectors/cases.json', import.meta.url), 'utf8'),
) as Vectors;

describe('shared test vectors: evaluation', () => {
  it('has a hundred or more cases with unique names', () => {
    expect(vectors.cases.length).toBeGreaterThanOrEqual(100);
    expect(new Set(vectors.cases.map((c) => c.name)).size).toBe(vectors.cases.length);
  });

  it.each(vectors.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const result = evaluateFlag(compileEnvironment(c.configuration), c.flagKey, c.context);
    const { expected } = c;
    expect(result.key).toBe(c.flagKey);
    expect(result.value).toEqual(expected.value);
    expect(result.variation).toBe(expected.variation);
    expect(result.reason).toBe(expected.reason);
    expect(result.prerequisiteKey).toBe(expected.prerequisiteKey);
    expect(result.errorCode).toBe(expected.errorCode);
    if (expected.ruleId !== undefined) expect(result.ruleId).toBe(expected.ruleId);
  });
});

describe('shared test vectors: buckets', () => {
  it.each(vectors.buckets.map((b) => [`${b.salt}.${b.value}`, b] as const))(
    'bucket of "%s"',
    (_name, b) => {
      expect(bucket(b.salt, b.value)).toBe(b.bucket);
    },
  );
});
