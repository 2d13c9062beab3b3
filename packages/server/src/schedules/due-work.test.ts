import { describe, expect, it } from 'vitest';
import { DueWorkRunner } from './due-work.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

describe('due work', () => {
  it('runs every kind at the clock time, and one failing kind does not stop the others', async () => {
    const at = new Date('2026-11-27T10:00:00Z');
    const runner = new DueWorkRunner({ now: () => at }, silent);
    const seen: string[] = [];
    runner.register({
      name: 'failing',
      run: () => Promise.reject(new Error('boom')),
    });
    runner.register({
      name: 'counting',
      run: (now) => {
        seen.push(now.toISOString());
        return Promise.resolve(1);
      },
    });
    await runner.runOnce();
    expect(seen).toEqual(['2026-11-27T10:00:00.000Z']);
  });

  it('passes on its own once started, and stops', async () => {
    const runner = new DueWorkRunner({ now: () => new Date() }, silent, 5);
    let passes = 0;
    runner.register({ name: 'counting', run: () => Promise.resolve(++passes) });
    runner.start();
    await expect.poll(() => passes).toBeGreaterThanOrEqual(2);
    await runner.stop();
    const stoppedAt = passes;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(passes).toBe(stoppedAt);
  });
});
