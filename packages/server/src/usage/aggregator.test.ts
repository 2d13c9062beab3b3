import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { UsageAggregator } from './aggregator.js';

describe('usage aggregation: one bucket per variation and hour', () => {
  const database = openDatabase(':memory:');
  afterAll(() => database.close());

  it('counts across an hour boundary inside one flush interval into two buckets', () => {
    const usage = new UsageAggregator(database.db, () => undefined);
    const hour = Date.UTC(2026, 5, 1, 11);
    usage.recordEvaluation('env', 'flag', 'on', hour - 1000);
    usage.recordEvaluation('env', 'flag', 'on', hour - 500);
    usage.recordEvaluation('env', 'flag', 'on', hour + 1000);
    usage.recordEvaluation('env', 'flag', 'off', hour + 2000);
    usage.recordEvaluation('env', 'flag', 'on', hour + 3000);
    const buckets = usage
      .pendingUsage('env', 'flag')
      .map(({ variationKey, hourMs, count, lastEvaluatedMs }) => ({
        variationKey,
        hourMs,
        count,
        lastEvaluatedMs,
      }))
      .sort((a, b) => a.hourMs - b.hourMs || a.variationKey.localeCompare(b.variationKey));
    expect(buckets).toEqual([
      { variationKey: 'on', hourMs: hour - 3_600_000, count: 2, lastEvaluatedMs: hour - 500 },
      { variationKey: 'off', hourMs: hour, count: 1, lastEvaluatedMs: hour + 2000 },
      { variationKey: 'on', hourMs: hour, count: 2, lastEvaluatedMs: hour + 3000 },
    ]);
  });

  it('recordEvaluations counts each result that served a variation, as recordEvaluation does', () => {
    const batched = new UsageAggregator(database.db, () => undefined);
    const single = new UsageAggregator(database.db, () => undefined);
    const at = Date.UTC(2026, 5, 1, 11, 30);
    const results = [
      { key: 'a', variation: 'on' },
      { key: 'b', variation: null },
      { key: 'a', variation: 'off' },
      { key: 'c', variation: 'on' },
    ];
    batched.recordEvaluations('env', results, at);
    batched.recordEvaluations('env', results, at + 1000);
    for (const atMs of [at, at + 1000]) {
      for (const { key, variation } of results)
        if (variation !== null) single.recordEvaluation('env', key, variation, atMs);
    }
    for (const flag of ['a', 'b', 'c'])
      expect(batched.pendingUsage('env', flag)).toEqual(single.pendingUsage('env', flag));
    expect(batched.pendingUsage('env', 'a').map((bucket) => bucket.count)).toEqual([2, 2]);
    expect(batched.pendingUsage('env', 'b')).toEqual([]);
  });
});
