import {
  compileEnvironment,
  selectFlags,
  type EvaluationContext,
  type SdkFlag,
} from '@vexil/engine';
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

/** Asks `memo` for `context`'s answer, remembering one of `size` bytes on a miss; says whether it missed. */
function ask(memo: AnswerMemo<{ size: number }>, context: EvaluationContext, size = 100): boolean {
  const key = memo.key(context);
  if (key !== undefined && memo.get(key) !== undefined) return false;
  if (key !== undefined) memo.set(key, { size });
  return true;
}

describe('an answer memo', () => {
  it('remembers an answer for the contexts that read the same values', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    expect(ask(memo, { userId: 'a', plan: 'pro' })).toBe(true);
    expect(ask(memo, { userId: 'a', plan: 'free' })).toBe(false);
    expect(ask(memo, { attributes: { userId: 'a' } })).toBe(false);
    expect(ask(memo, { userId: 'b' })).toBe(true);
  });

  it('turns itself off when fewer than a quarter of its lookups hit', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    for (let i = 0; i < 1024; i++) expect(ask(memo, { userId: `user-${i}` })).toBe(true);
    // Off: the answer just written is not remembered.
    expect(ask(memo, { userId: 'again' })).toBe(true);
    expect(ask(memo, { userId: 'again' })).toBe(true);
  });

  it('stays on while answers repeat', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    for (let i = 0; i < 5000; i++) ask(memo, { userId: `user-${i % 100}` });
    expect(ask(memo, { userId: 'user-1' })).toBe(false);
  });

  it('keeps what it holds once another answer would pass 4 MiB', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    ask(memo, { userId: 'first' }, 3 * 1024 * 1024);
    ask(memo, { userId: 'second' }, 2 * 1024 * 1024);
    expect(ask(memo, { userId: 'first' })).toBe(false);
    expect(ask(memo, { userId: 'second' })).toBe(true);
  });

  it('does not remember contexts whose key would be longer than 1,024 characters', () => {
    const memo = new AnswerMemo<{ size: number }>(env, positions);
    const long = { userId: 'x'.repeat(2000) };
    ask(memo, long);
    expect(ask(memo, long)).toBe(true);
  });
});
