import { compileEnvironment, selectFlags, type SdkFlag } from '@vexil/engine';
import { describe, expect, it } from 'vitest';
import { AnswerMemo } from './answer-memo.js';

const rollout: SdkFlag = {
  key: 'rollout',
  version: 1,
  type: 'Boolean',
  enabled: true,
  variations: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
  rules: [],
  fallthrough: {
    type: 'Rollout',
    variations: [
      { key: 'on', weight: 50_000 },
      { key: 'off', weight: 50_000 },
    ],
  },
  offVariation: 'off',
  prerequisites: [],
};
const env = compileEnvironment({
  environment: 'production',
  version: 1,
  flags: [rollout],
  segments: [],
});
const positions = selectFlags(env);

describe('an answer memo', () => {
  it('turns itself off when fewer than a quarter of its lookups hit', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    for (let i = 0; i < 1024; i++) {
      const key = memo.key({ userId: `user-${i}` });
      expect(key).toBeDefined();
      expect(memo.get(key as string)).toBeUndefined();
      memo.set(key as string, { size: 100 });
    }
    expect(memo.key({ userId: 'user-1' })).toBeUndefined();
  });

  it('stays on while answers repeat', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    for (let i = 0; i < 5000; i++) {
      const key = memo.key({ userId: `user-${i % 100}` }) as string;
      if (memo.get(key) === undefined) memo.set(key, { size: 100 });
    }
    expect(memo.key({ userId: 'user-1' })).toBeDefined();
  });

  it('starts again empty when its answers would pass 4 MiB', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    const first = memo.key({ userId: 'first' }) as string;
    memo.set(first, { size: 3 * 1024 * 1024 });
    expect(memo.get(first)).toBeDefined();
    memo.set(memo.key({ userId: 'second' }) as string, { size: 2 * 1024 * 1024 });
    expect(memo.get(first)).toBeUndefined();
  });

  it('does not remember contexts whose key would be longer than 1,024 characters', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    expect(memo.key({ userId: 'x'.repeat(2000) })).toBeUndefined();
  });
});
