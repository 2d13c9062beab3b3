import { readFileSync } from 'node:fs';
import {
  evaluateSelected,
  selectFlags,
  type EvaluationContext,
  type SdkConfiguration,
  type SdkFlag,
} from '@vexil/engine';
import { describe, expect, it } from 'vitest';
import { clientFlagsBody, evaluateClientFlags } from './client-flags.js';
import { ofrepBulkAnswer, toOfrep } from './ofrep.js';
import { snapshotFromCopy, type Snapshot } from './snapshots.js';

/**
 * Design record 062: the bulk answers written from cached per-outcome fragments are, byte for
 * byte, the engine's results serialized afresh, over the engine's test vectors and over seeded
 * random configurations and contexts.
 */

const vectors = (
  JSON.parse(
    readFileSync(new URL('../../../engine/test-vectors/cases.json', import.meta.url), 'utf8'),
  ) as { cases: { configuration: SdkConfiguration; context: EvaluationContext }[] }
).cases;

/** A small seeded generator (mulberry32), so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COUNTRIES = ['NL', 'DE', 'FR', 'US', 'JP'];
const PLANS = ['free', 'pro', 'enterprise'];
const VERSIONS = ['1.0.0', '2.1.0', '2.10.3', '3.0.0-beta.1'];

/** A configuration of `count` flags with rules, rollouts, prerequisites and metadata. */
function randomConfiguration(next: () => number, count: number): SdkConfiguration {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const flags: SdkFlag[] = [];
  for (let i = 0; i < count; i++) {
    const type = pick(['Boolean', 'String', 'Number', 'Json'] as const);
    const values: unknown[] =
      type === 'Boolean'
        ? [true, false]
        : type === 'String'
          ? ['a', 'b', 'ünïcode ✓', '"quoted"']
          : type === 'Number'
            ? [0, 1.5, -3, 1e21]
            : [{ a: 1 }, [1, 'two'], null, { nested: { x: '</script>' } }];
    const variations = values.map((value, v) => ({ key: `v${v}`, value }));
    const conditions = () =>
      Array.from({ length: 1 + Math.floor(next() * 2) }, () =>
        pick([
          { attribute: 'country', operator: 'In', values: [pick(COUNTRIES), pick(COUNTRIES)] },
          { attribute: 'plan', operator: 'Equals', values: [pick(PLANS)] },
          { attribute: 'version', operator: 'SemverGreaterThan', values: [pick(VERSIONS)] },
          { attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] },
        ]),
      ).map((condition) => ({ ...condition, negate: next() < 0.2 }));
    const rollout = () => ({
      type: 'Rollout' as const,
      variations: [
        { key: 'v0', weight: 30_000 },
        { key: 'v1', weight: 70_000 },
      ],
    });
    flags.push({
      key: next() < 0.05 ? `${i}` : `flag-${i}`,
      version: 1,
      type,
      enabled: next() < 0.85,
      variations,
      rules: Array.from({ length: Math.floor(next() * 3) }, (_, r) => ({
        id: `rule-${i}-${r}`,
        priority: r,
        conditionGroups: [{ operator: pick(['And', 'Or'] as const), conditions: conditions() }],
        serve: next() < 0.7 ? { type: 'Fixed', variation: pick(variations).key } : rollout(),
      })),
      fallthrough: next() < 0.6 ? { type: 'Fixed', variation: pick(variations).key } : rollout(),
      offVariation: pick(variations).key,
      // One or two flags before it: a failed result then names one prerequisite or the other.
      prerequisites:
        i > 1 && next() < 0.3
          ? flags
              .slice(i - (next() < 0.5 ? 1 : 2), i)
              .map((flag) => ({ prerequisiteFlagKey: flag.key, expectedVariationKey: 'v0' }))
          : [],
      ...(next() < 0.2 ? { metadata: { team: pick(['web', 'core']), tier: 2 } } : {}),
    } as SdkFlag);
  }
  return { environment: 'production', version: 1, flags, segments: [] };
}

function randomContext(next: () => number, index: number): EvaluationContext {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  return {
    ...(next() < 0.9 ? { userId: `user-${index}`, targetingKey: `user-${index}` } : {}),
    country: pick(COUNTRIES),
    plan: pick(PLANS),
    version: pick(VERSIONS),
    email: next() < 0.5 ? `u${index}@acme.test` : `u${index}@example.org`,
  };
}

async function snapshotOf(configuration: SdkConfiguration, clientSide: string[]) {
  return snapshotFromCopy({
    environmentId: 'env',
    organizationId: 'org',
    projectId: 'project',
    clientSideKeys: clientSide,
    configuration: { ...configuration, environment: configuration.environment ?? 'production' },
  });
}

const STREAMS = JSON.stringify([{ type: 'sse', url: 'https://flags.example/ofrep/v1/events' }]);

/** Checks both fast paths against the engine for `context`; returns the OFREP answer's ETag. */
function expectSameAnswers(snapshot: Snapshot, context: EvaluationContext): string {
  // In configuration order: JSON.stringify of the object would put integer-like keys first.
  const { body, results } = evaluateClientFlags(snapshot, context);
  const entries = results.map(
    ({ key }) => `${JSON.stringify(key)}:${JSON.stringify(body.flags[key])}`,
  );
  expect(clientFlagsBody(snapshot, context, null).toString()).toBe(
    `{"flags":{${entries.join(',')}}}`,
  );
  let etag = '';
  for (const positions of [snapshot.clientFlags, selectFlags(snapshot.compiled)]) {
    const answer = ofrepBulkAnswer(snapshot, positions, context, STREAMS);
    const flags = evaluateSelected(snapshot.compiled, context, positions).map((result) =>
      toOfrep(snapshot, result),
    );
    expect(answer.body.toString()).toBe(
      JSON.stringify({ flags, eventStreams: JSON.parse(STREAMS) as unknown }),
    );
    etag = answer.etag;
  }
  return etag;
}

describe('answers written from fragments', () => {
  it('are the engine’s results serialized afresh, over the engine’s test vectors', async () => {
    const contexts = vectors.map((vector) => vector.context);
    for (const vector of vectors) {
      const keys = vector.configuration.flags.map((flag) => flag.key);
      const snapshot = await snapshotOf(
        vector.configuration,
        keys.slice(0, Math.ceil(keys.length / 2)),
      );
      // Twice over: once filling the fragment cache, once served from it.
      for (let round = 0; round < 2; round++)
        for (const context of contexts.slice(0, 40)) expectSameAnswers(snapshot, context);
    }
  });

  it('are the engine’s results serialized afresh, over seeded configurations and contexts', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const next = random(seed);
      const configuration = randomConfiguration(next, 40);
      const keys = configuration.flags.map((flag) => flag.key).filter(() => next() < 0.6);
      const snapshot = await snapshotOf(configuration, keys);
      const etags = new Map<string, string>();
      for (let index = 0; index < 200; index++) {
        const context = randomContext(next, index % 60);
        const etag = expectSameAnswers(snapshot, context);
        // One ETag, one answer: the same bytes always give the same tag, others another.
        const body = ofrepBulkAnswer(
          snapshot,
          selectFlags(snapshot.compiled),
          context,
          STREAMS,
        ).body.toString();
        const known = etags.get(etag);
        if (known !== undefined) expect(known, `seed ${seed}`).toBe(body);
        etags.set(etag, body);
      }
      expect(new Set(etags.values()).size, `seed ${seed}`).toBe(etags.size);
    }
  });
});

describe('answers remembered by what they read (design record 065)', () => {
  it('are the engine’s answers for every context, shared by contexts that read the same values', async () => {
    for (let seed = 21; seed <= 30; seed++) {
      const next = random(seed);
      const configuration = randomConfiguration(next, 30);
      const snapshot = await snapshotOf(
        configuration,
        configuration.flags.map((flag) => flag.key),
      );
      for (let index = 0; index < 300; index++) {
        const context = randomContext(next, index);
        // The same reads, nested as the server SDKs send them, and with an attribute no flag reads.
        const { userId, targetingKey, ...attributes } = context;
        const nested = {
          ...(userId === undefined ? {} : { userId, targetingKey }),
          attributes: { ...attributes, unread: index },
        };
        for (const each of [context, nested]) expectSameAnswers(snapshot, each);
        expect(clientFlagsBody(snapshot, nested, null), `seed ${seed}`).toBe(
          clientFlagsBody(snapshot, context, null),
        );
      }
    }
  });

  it('serve users who differ only in attributes no flag reads one answer', async () => {
    const { flags } = randomConfiguration(random(31), 20);
    // Without rollouts and prerequisites nothing reads the user's identity.
    const targeted = flags.map((flag) => ({
      ...flag,
      prerequisites: [],
      fallthrough: { type: 'Fixed' as const, variation: flag.variations[0]?.key ?? '' },
      rules: flag.rules.filter((rule) => rule.serve.type === 'Fixed'),
    }));
    const snapshot = await snapshotOf(
      { environment: 'production', version: 1, flags: targeted, segments: [] },
      targeted.map((flag) => flag.key),
    );
    const first = clientFlagsBody(snapshot, { userId: 'a', country: 'NL', plan: 'pro' }, null);
    expect(clientFlagsBody(snapshot, { userId: 'b', country: 'NL', plan: 'pro' }, null)).toBe(
      first,
    );
    const bulk = (userId: string) =>
      ofrepBulkAnswer(
        snapshot,
        snapshot.clientFlags,
        { targetingKey: userId, country: 'DE' },
        STREAMS,
      );
    // The same buffer: the second answer is the first one, remembered.
    expect(bulk('b').body).toBe(bulk('a').body);
    expect(
      ofrepBulkAnswer(snapshot, snapshot.clientFlags, { country: 'DE' }, '[]').body.toString(),
    ).not.toBe(bulk('a').body.toString());
  });
});
