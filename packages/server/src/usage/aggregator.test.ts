import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import {
  createOrg,
  createProjectWithFlag,
  testDialects,
  type TestVexil,
  createTestVexil,
} from '../test-support/harness.js';
import {
  DatabaseUsageStore,
  HOUR_MS,
  ServedTally,
  UsageAggregator,
  type UsageBatch,
  type UsageStore,
} from './aggregator.js';

describe('usage aggregation: one bucket per variation and hour', () => {
  const database = openDatabase(':memory:');
  afterAll(() => database.close());

  it('counts across an hour boundary inside one flush interval into two buckets', () => {
    const usage = new UsageAggregator(new DatabaseUsageStore(database.db), () => undefined);
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
    const batched = new UsageAggregator(new DatabaseUsageStore(database.db), () => undefined);
    const single = new UsageAggregator(new DatabaseUsageStore(database.db), () => undefined);
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

describe('a remembered answer’s servings, tallied (design record 065)', () => {
  const database = openDatabase(':memory:');
  afterAll(() => database.close());

  it('count as recordEvaluations would, split at the hour and kept across reads', () => {
    const tallied = new UsageAggregator(new DatabaseUsageStore(database.db), () => undefined);
    const single = new UsageAggregator(new DatabaseUsageStore(database.db), () => undefined);
    const hour = Date.UTC(2026, 5, 1, 11);
    const results = [
      { key: 'a', variation: 'on' },
      { key: 'b', variation: null },
      { key: 'c', variation: 'off' },
    ];
    const tally = new ServedTally('env', results);
    const times = [hour - 2000, hour - 1000, hour + 1000, hour + 1500, hour + 4000];
    for (const [i, atMs] of times.entries()) {
      tallied.recordTally(tally, atMs, {}, () => results);
      single.recordEvaluations('env', results, atMs);
      // A read between servings sees every serving so far, and counting goes on after it.
      if (i === 3) expect(tallied.pendingUsage('env', 'a')).toHaveLength(2);
    }
    const buckets = (usage: UsageAggregator, flag: string) =>
      usage.pendingUsage('env', flag).sort((x, y) => x.hourMs - y.hourMs);
    for (const flag of ['a', 'b', 'c'])
      expect(buckets(tallied, flag)).toEqual(buckets(single, flag));
    expect(buckets(tallied, 'a')).toEqual([
      { variationKey: 'on', hourMs: hour - HOUR_MS, count: 2, lastEvaluatedMs: hour - 1000 },
      { variationKey: 'on', hourMs: hour, count: 3, lastEvaluatedMs: hour + 4000 },
    ]);
    expect(tallied.pendingLastEvaluated('env').get('c')).toBe(hour + 4000);
  });

  it('are written by the next flush', async () => {
    const written: UsageBatch[] = [];
    const store: UsageStore = {
      write: (batch) => {
        written.push(batch);
        return Promise.resolve();
      },
      prune: () => Promise.resolve(0),
    };
    const usage = new UsageAggregator(store, () => undefined);
    const tally = new ServedTally('env', [{ key: 'a', variation: 'on' }]);
    const at = Date.UTC(2026, 5, 1, 11, 30);
    for (let i = 0; i < 5; i++) usage.recordTally(tally, at + i, {}, () => []);
    await usage.flush();
    expect(written[0]?.evaluations.get('env')?.get('a')?.get('on')).toMatchObject({
      count: 5,
      lastMs: at + 4,
    });
    await usage.flush();
    expect(written).toHaveLength(1);
  });
});

describe.each(testDialects())('usage retention on %s', (dialect) => {
  let vexil: TestVexil;
  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
  });
  afterAll(() => vexil.close());

  it('removes counts before the cutoff, except each flag’s newest per environment', async () => {
    const { db } = vexil.services;
    const org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    await createProjectWithFlag(vexil, org, { project: 'shop', flag: { key: 'quiet' } });
    const flags = await db.selectFrom('flags').select(['id', 'key', 'project_id']).execute();
    const active = flags.find((flag) => flag.key === 'new-checkout')!;
    const quiet = flags.find((flag) => flag.key === 'quiet')!;
    const environmentOf = async (projectId: string) =>
      (
        await db
          .selectFrom('environments')
          .select('id')
          .where('project_id', '=', projectId)
          .where('key', '=', 'production')
          .executeTakeFirstOrThrow()
      ).id;
    const activeEnvironment = await environmentOf(active.project_id);
    const quietEnvironment = await environmentOf(quiet.project_id);

    const cutoff = Date.UTC(2026, 5, 1, 12);
    const iso = (ms: number) => new Date(ms).toISOString();
    const row = (
      flag: string,
      environment: string,
      variation: string,
      hourMs: number,
      last: number,
    ) => ({
      flag_id: flag,
      environment_id: environment,
      variation_key: variation,
      hour: iso(hourMs),
      count: 3,
      last_evaluated_at: iso(last),
    });
    const old = cutoff - 100 * HOUR_MS;
    await db
      .insertInto('flag_usage')
      .values([
        // Evaluated since the cutoff: its old counts go.
        row(active.id, activeEnvironment, 'on', old, old + 60_000),
        row(active.id, activeEnvironment, 'on', cutoff + HOUR_MS, cutoff + HOUR_MS + 1),
        // Last evaluated long before the cutoff: only its newest count stays.
        row(quiet.id, quietEnvironment, 'on', old - HOUR_MS, old - HOUR_MS + 5),
        row(quiet.id, quietEnvironment, 'on', old, old + 10),
        row(quiet.id, quietEnvironment, 'off', old, old + 20),
      ])
      .execute();
    await db
      .insertInto('custom_event_usage')
      .values([
        { environment_id: activeEnvironment, event_key: 'checkout', hour: iso(old), count: 1 },
        { environment_id: activeEnvironment, event_key: 'checkout', hour: iso(cutoff), count: 1 },
      ])
      .execute();

    const usage = new UsageAggregator(new DatabaseUsageStore(db), (error) => {
      throw error;
    });
    expect(await usage.prune(cutoff + 30 * 60_000)).toBe(4);
    const kept = await db
      .selectFrom('flag_usage')
      .select(['flag_id', 'variation_key', 'hour', 'last_evaluated_at'])
      .orderBy('last_evaluated_at')
      .execute();
    expect(
      kept.map((r) => [
        r.flag_id,
        r.variation_key,
        new Date(r.hour).getTime(),
        new Date(r.last_evaluated_at).getTime(),
      ]),
    ).toEqual([
      [quiet.id, 'off', old, old + 20],
      [active.id, 'on', cutoff + HOUR_MS, cutoff + HOUR_MS + 1],
    ]);
    const events = await db.selectFrom('custom_event_usage').select('hour').execute();
    expect(events.map((r) => new Date(r.hour).getTime())).toEqual([cutoff]);
    expect(await usage.prune(cutoff)).toBe(0);
  });
});

describe('usage held back while its store is out (a database outage, a relay upstream away)', () => {
  it('keeps the counts of failed flushes for the next, up to 100,000 evaluation buckets; past them drops and counts', async () => {
    const written: UsageBatch[] = [];
    let storeAnswers = false;
    const store: UsageStore = {
      write: (batch) => {
        if (!storeAnswers) return Promise.reject(new Error('store unavailable'));
        written.push(batch);
        return Promise.resolve();
      },
      prune: () => Promise.resolve(0),
    };
    const usage = new UsageAggregator(store, () => undefined);
    const atMs = Date.UTC(2026, 5, 1, 12);
    // 100,002 distinct flag buckets, one evaluation each, then a failed flush.
    for (let flag = 0; flag < 100_002; flag += 1)
      usage.recordEvaluation('env', `flag-${flag}`, 'on', atMs);
    await usage.flush();
    expect(usage.discardCounts().overflow).toBe(2);
    // Counts added meanwhile join those kept; the next flush that is taken writes them all.
    usage.recordEvaluation('env', 'flag-0', 'on', atMs);
    storeAnswers = true;
    await usage.flush();
    const flags = written[0]?.evaluations.get('env');
    expect(flags?.size).toBe(100_000);
    expect(flags?.get('flag-0')?.get('on')?.count).toBe(2);
  });
});
