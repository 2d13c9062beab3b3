// Differential test over the shared test vectors (issue 9): every vector configuration the
// management API can express is built, through that API, in a real `vexil serve` process
// (SQLite; DIFF_DATABASE=postgres for PostgreSQL; the process runs the built CLI, so build
// first, as `npm test` does). Then 10 000 random contexts (fast-check, fixed seed) are evaluated
// by @vexil/node locally, from the configuration it downloaded, and by POST /v1/sdk/evaluate
// remotely, and the answers must be identical. The server assigns its own salts and rule ids, so
// answers are compared with each other, never with the vectors' `expected` (the engine's vectors
// test does that). Shapes the API cannot express are skipped and counted in the output.
//
// Each context is evaluated on a rotating slice of the ~180 flags, sized so that every flag sees
// 300 contexts (DIFF_EVALUATIONS_PER_FLAG): about 54 000 requests, ~20 s on a loaded 2-core
// machine (keep-alive, 32 in flight; the server in its own process), so the suite stays a few
// minutes. DIFF_EVALUATIONS_PER_FLAG=1000 (~55 s) and beyond for a deeper run; every flag for
// every context would be 1.8 million requests.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import {
  findPrerequisiteProblem,
  normalizeOperator,
  validateCondition,
  type EvaluationContext,
  type EvaluationReason,
  type FlagType,
  type LogicalOperator,
  type SdkCondition,
  type SdkConfiguration,
  type SdkFlag,
  type SdkServe,
} from '@vexil/engine';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../../server/src/test-support/harness.js';
import { bootstrapWithCli, ServeProcess } from '../../server/src/test-support/processes.js';
import { createClient, type VexilClient } from './index.js';

interface Vectors {
  cases: { name: string; configuration: SdkConfiguration; context: EvaluationContext }[];
}

const vectors = JSON.parse(
  readFileSync(new URL('../../engine/test-vectors/cases.json', import.meta.url), 'utf8'),
) as Vectors;

const CONTEXTS = Number(process.env.DIFF_CONTEXTS ?? 10_000);
/** Every covered flag is evaluated for at least this many of the contexts. */
const EVALUATIONS_PER_FLAG = Number(process.env.DIFF_EVALUATIONS_PER_FLAG ?? 300);
const CONCURRENCY = 32;
const SEED = 20260602;
const base = '/api/v1/orgs/acme/projects/web';

/** The management API's key pattern (server `api/fields.ts` `KeySchema`). */
const API_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

// ---------------------------------------------------------------------------------------------
// Translation: vector configuration → what the management API is asked to create
// ---------------------------------------------------------------------------------------------

interface ConditionGroupPlan {
  operator: LogicalOperator;
  conditions: SdkCondition[];
}

/** A rule as `POST …/rules` takes it, with variation and segment by key (ids come later). */
interface RulePlan {
  variation: string;
  rolloutPercentage: number | null;
  segmentKey: string | null;
  conditionGroups: ConditionGroupPlan[];
}

interface FlagPlan {
  key: string;
  type: FlagType;
  variations: { key: string; value: string }[];
  enabled: boolean;
  offVariation: string;
  /** A variation key (`SingleVariation`) or rollout weights in thousandths of a percent. */
  fallthrough: string | { variation: string; weight: number }[];
  rules: RulePlan[];
  prerequisites: { prerequisiteFlagKey: string; expectedVariationKey: string }[];
  /** The vector's flag, renamed: what `GET /v1/sdk/flags` should give back, up to {@link shape}. */
  source: SdkFlag;
}

interface SegmentPlan {
  key: string;
  conditions: SdkCondition[];
  conditionLogic: LogicalOperator;
}

/** Why a shape cannot be built through the management API. */
class Inexpressible extends Error {}

/** @throws Inexpressible with `reason` unless `condition` holds. */
function expressible(condition: boolean, reason: string): asserts condition {
  if (!condition) throw new Inexpressible(reason);
}

/** The string the API stores for a typed variation value (spec: Variation `value`). */
function storedValue(type: FlagType, value: unknown): string {
  switch (type) {
    case 'Boolean':
      expressible(typeof value === 'boolean', 'variation value does not fit the flag type');
      return String(value);
    case 'Number':
      expressible(
        typeof value === 'number' && Number.isFinite(value),
        'variation value does not fit the flag type',
      );
      return String(value);
    case 'String':
      expressible(typeof value === 'string', 'variation value does not fit the flag type');
      return value;
    case 'Json':
      return JSON.stringify(value);
  }
}

function translateConditions(conditions: readonly SdkCondition[]): SdkCondition[] {
  for (const condition of conditions) {
    const problems = validateCondition(condition);
    expressible(problems.length === 0, `condition refused: ${problems[0]?.split(/[;:]/)[0]}`);
  }
  // The API matches operator names case-insensitively and stores them canonically.
  return conditions.map(({ attribute, operator, values, negate }) => ({
    attribute,
    operator,
    values,
    negate: negate === true,
  }));
}

/** Where a served variation must exist. */
function requireVariation(flag: SdkFlag, key: string | undefined, what: string): string {
  expressible(
    key !== undefined && flag.variations.some((v) => v.key === key),
    `${what} serves an unknown variation`,
  );
  return key;
}

function translateFallthrough(flag: SdkFlag): FlagPlan['fallthrough'] {
  const serve = flag.fallthrough;
  if (serve.type === 'Fixed') return requireVariation(flag, serve.variation, 'fallthrough');
  expressible(serve.bucketBy === undefined, 'custom bucketBy');
  const weights = serve.variations ?? [];
  expressible(weights.length > 0, 'fallthrough rollout without variations');
  expressible(
    new Set(weights.map((w) => w.key)).size === weights.length,
    'rollout lists a variation twice',
  );
  expressible(
    weights.reduce((sum, w) => sum + w.weight, 0) === 100_000,
    'fallthrough rollout weights do not sum to 100%',
  );
  return weights.map((w) => ({
    variation: requireVariation(flag, w.key, 'fallthrough rollout'),
    weight: w.weight,
  }));
}

function translateRuleServe(
  flag: SdkFlag,
  serve: SdkServe,
): Pick<RulePlan, 'variation' | 'rolloutPercentage'> {
  if (serve.type === 'Fixed')
    return {
      variation: requireVariation(flag, serve.variation, 'a rule'),
      rolloutPercentage: null,
    };
  expressible(serve.bucketBy === undefined, 'custom bucketBy');
  const weights = serve.variations ?? [];
  expressible(weights.length === 1, 'rule rollout over several variations');
  const [only] = weights as [{ key: string; weight: number }];
  expressible(only.weight % 1000 === 0, 'rule rollout weight is not a whole percentage');
  return {
    variation: requireVariation(flag, only.key, 'a rule rollout'),
    rolloutPercentage: only.weight / 1000,
  };
}

function translateFlag(
  flag: SdkFlag,
  configuration: SdkConfiguration,
  rename: (key: string) => string,
): FlagPlan {
  const key = rename(flag.key);
  expressible(API_KEY.test(key), 'flag key refused by the API');
  expressible(flag.variations.length > 0 && flag.variations.length <= 100, 'variation count');
  expressible(
    new Set(flag.variations.map((v) => v.key)).size === flag.variations.length,
    'duplicate variation keys',
  );
  expressible(
    flag.variations.every((v) => API_KEY.test(v.key)),
    'variation key refused by the API',
  );
  const variations = flag.variations.map((v) => ({
    key: v.key,
    value: storedValue(flag.type, v.value),
  }));
  expressible(
    flag.variations.some((v) => v.key === flag.offVariation),
    'unknown off variation',
  );
  const problem = findPrerequisiteProblem(configuration.flags, flag.key);
  const prerequisites = flag.prerequisites.map((p) => ({
    prerequisiteFlagKey: rename(p.prerequisiteFlagKey),
    expectedVariationKey: p.expectedVariationKey,
  }));
  expressible(problem === undefined, `prerequisite graph: ${problem?.kind}`);
  const segmentKeys = new Set(configuration.segments.map((s) => s.key));
  const rules = [...flag.rules]
    .sort((a, b) => a.priority - b.priority)
    .map((rule): RulePlan => {
      expressible(
        rule.segmentKey === undefined || segmentKeys.has(rule.segmentKey),
        'a rule names an unknown segment',
      );
      return {
        ...translateRuleServe(flag, rule.serve),
        segmentKey: rule.segmentKey === undefined ? null : rename(rule.segmentKey),
        conditionGroups: rule.conditionGroups.map((group) => ({
          operator: group.operator,
          conditions: translateConditions(group.conditions),
        })),
      };
    });
  return {
    key,
    type: flag.type,
    variations,
    enabled: flag.enabled,
    offVariation: flag.offVariation,
    fallthrough: translateFallthrough(flag),
    rules,
    prerequisites,
    source: {
      ...flag,
      key,
      rules: flag.rules.map(({ segmentKey, ...rule }) =>
        segmentKey === undefined ? rule : { ...rule, segmentKey: rename(segmentKey) },
      ),
      prerequisites,
    },
  };
}

/**
 * A flag as far as the management API keeps it: without salts, rule ids, priorities (only their
 * order) and versions, with canonical operator names.
 */
function shape(flag: SdkFlag) {
  const serve = (s: SdkServe) =>
    s.type === 'Fixed' ? { variation: s.variation } : { rollout: s.variations };
  return {
    key: flag.key,
    type: flag.type,
    enabled: flag.enabled,
    variations: flag.variations,
    offVariation: flag.offVariation,
    fallthrough: serve(flag.fallthrough),
    rules: [...flag.rules]
      .sort((a, b) => a.priority - b.priority)
      .map((rule) => ({
        serve: serve(rule.serve),
        segmentKey: rule.segmentKey ?? null,
        conditionGroups: rule.conditionGroups.map((group) => ({
          operator: group.operator,
          conditions: group.conditions.map((c) => ({
            attribute: c.attribute,
            operator: normalizeOperator(c.operator),
            values: c.values,
            negate: c.negate === true,
          })),
        })),
      })),
    prerequisites: flag.prerequisites,
  };
}

/** What the vectors translate to, and what they do not, with the reasons. */
interface Translation {
  flags: FlagPlan[];
  segments: SegmentPlan[];
  configurations: { total: number; full: number; partial: number; skipped: number };
  skippedFlags: Map<string, number>;
  /** Operator names in other casings (in the kept flags' rules), which the API normalises. */
  normalisedOperators: number;
}

function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/**
 * Translates each distinct vector configuration, its flags and segments renamed `v{n}-{key}`
 * so that all of them live in one project. A flag is kept when it, its segments and every flag
 * it requires (transitively) are expressible.
 */
function translate(configurations: readonly SdkConfiguration[]): Translation {
  const translation: Translation = {
    flags: [],
    segments: [],
    configurations: { total: configurations.length, full: 0, partial: 0, skipped: 0 },
    skippedFlags: new Map(),
    normalisedOperators: 0,
  };
  configurations.forEach((configuration, index) => {
    const rename = (key: string) => `v${index}-${key}`;
    const segments = new Map<string, SegmentPlan | Inexpressible>();
    for (const segment of configuration.segments) {
      try {
        expressible(API_KEY.test(rename(segment.key)), 'segment key refused by the API');
        segments.set(segment.key, {
          key: rename(segment.key),
          conditions: translateConditions(segment.conditions),
          conditionLogic: segment.conditionLogic,
        });
      } catch (error) {
        if (!(error instanceof Inexpressible)) throw error;
        segments.set(segment.key, new Inexpressible(`segment: ${error.message}`));
      }
    }
    const plans = new Map<string, FlagPlan | Inexpressible>();
    for (const flag of configuration.flags) {
      try {
        plans.set(flag.key, translateFlag(flag, configuration, rename));
        for (const rule of flag.rules) {
          const segment = rule.segmentKey === undefined ? undefined : segments.get(rule.segmentKey);
          if (segment instanceof Inexpressible) throw segment;
        }
      } catch (error) {
        if (!(error instanceof Inexpressible)) throw error;
        plans.set(flag.key, error);
      }
    }
    // A flag whose prerequisite cannot be built cannot be built either (the graph is acyclic here).
    const buildable = (key: string): FlagPlan | Inexpressible => {
      const plan = plans.get(key) ?? new Inexpressible('unknown prerequisite');
      if (plan instanceof Inexpressible) return plan;
      for (const prerequisite of configuration.flags.find((f) => f.key === key)!.prerequisites) {
        if (buildable(prerequisite.prerequisiteFlagKey) instanceof Inexpressible)
          return new Inexpressible('a prerequisite flag is inexpressible');
      }
      return plan;
    };
    let kept = 0;
    for (const flag of configuration.flags) {
      const plan = buildable(flag.key);
      if (plan instanceof Inexpressible) {
        count(translation.skippedFlags, plan.message);
        continue;
      }
      kept++;
      translation.flags.push(plan);
      for (const rule of flag.rules)
        for (const group of rule.conditionGroups)
          for (const condition of group.conditions)
            if (normalizeOperator(condition.operator) !== condition.operator)
              translation.normalisedOperators++;
    }
    const used = new Set(
      translation.flags.flatMap((f) =>
        f.rules.flatMap((r) => (r.segmentKey ? [r.segmentKey] : [])),
      ),
    );
    for (const segment of segments.values())
      if (!(segment instanceof Inexpressible) && used.has(segment.key))
        translation.segments.push(segment);
    const outcome = kept === configuration.flags.length ? 'full' : kept > 0 ? 'partial' : 'skipped';
    translation.configurations[outcome]++;
  });
  return translation;
}

// ---------------------------------------------------------------------------------------------
// Building the translation in a real Vexil, through the management API
// ---------------------------------------------------------------------------------------------

/** A management API call that answers the response body, or throws on an error status. */
type Manage = (
  method: 'POST' | 'PATCH',
  path: string,
  body: unknown,
) => Promise<Record<string, unknown>>;

/**
 * Creates the translated segments and flags in project `web` (environment `production`):
 * segments, flags with their variations, then each flag's fallthrough, off variation and rules,
 * and last the prerequisites (once every flag they name exists) and the toggles.
 */
async function build(manage: Manage, translation: Translation): Promise<void> {
  const segmentIds = new Map<string, string>();
  for (const segment of translation.segments) {
    const created = await manage('POST', `${base}/segments`, segment);
    segmentIds.set(segment.key, created.id as string);
  }
  const variationIds = new Map<string, Map<string, string>>();
  await eachInParallel(translation.flags, async (flag) => {
    const created = await manage('POST', `${base}/flags`, {
      key: flag.key,
      type: flag.type,
      variations: flag.variations,
      offVariationKey: flag.offVariation,
    });
    const variations = created.variations as { key: string; id: string }[];
    variationIds.set(flag.key, new Map(variations.map((v) => [v.key, v.id])));
  });
  await eachInParallel(translation.flags, async (flag) => {
    const id = (variation: string) => variationIds.get(flag.key)!.get(variation)!;
    const environment = `${base}/flags/${flag.key}/environments/production`;
    await manage(
      'PATCH',
      environment,
      typeof flag.fallthrough === 'string'
        ? {
            offVariationId: id(flag.offVariation),
            strategy: 'SingleVariation',
            defaultVariationId: id(flag.fallthrough),
          }
        : {
            offVariationId: id(flag.offVariation),
            strategy: 'PercentageRollout',
            rollout: flag.fallthrough.map((w) => ({
              variationId: id(w.variation),
              weight: w.weight,
            })),
          },
    );
    // In order: each new rule gets the next priority.
    for (const rule of flag.rules) {
      await manage('POST', `${environment}/rules`, {
        variationId: id(rule.variation),
        rolloutPercentage: rule.rolloutPercentage,
        userSegmentId: rule.segmentKey === null ? null : segmentIds.get(rule.segmentKey)!,
        conditionGroups: rule.conditionGroups,
      });
    }
  });
  await eachInParallel(translation.flags, async (flag) => {
    const environment = `${base}/flags/${flag.key}/environments/production`;
    if (flag.prerequisites.length > 0)
      await manage('PATCH', environment, { prerequisites: flag.prerequisites });
    if (flag.enabled) await manage('POST', `${environment}/toggle`, { enabled: true });
  });
}

/** Runs `task` on every item, a few at a time (requests overlap; the database serialises writes). */
async function eachInParallel<T>(items: readonly T[], task: (item: T) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

// ---------------------------------------------------------------------------------------------
// Random contexts, biased towards what the configurations test
// ---------------------------------------------------------------------------------------------

const DAY_MS = 86_400_000;

/** Values near a condition value: equal, off by one, other casing, other forms of the same instant. */
function neighbours(value: string): unknown[] {
  const near: unknown[] = [
    value,
    value.toUpperCase(),
    value.toLowerCase(),
    `x${value}`,
    `${value}x`,
  ];
  const number = Number(value);
  if (value.trim() !== '' && Number.isFinite(number))
    near.push(number, number - 1, number + 1, number + 0.5, String(number + 1));
  // ISO 8601 dates and Unix milliseconds (Date.parse alone would read "2.25" as a date).
  const instant = /^\d{4}-\d{2}-\d{2}/.test(value)
    ? Date.parse(value)
    : /^\d{12,}$/.test(value)
      ? Number(value)
      : NaN;
  if (Number.isFinite(instant)) {
    for (const ms of [instant - DAY_MS, instant - 1, instant, instant + 1, instant + DAY_MS])
      near.push(ms, new Date(ms).toISOString());
    near.push(new Date(instant + DAY_MS).toISOString().slice(0, 10));
  }
  const semver = /^v?(\d+)\.(\d+)\.(\d+)(.*)$/.exec(value);
  if (semver) {
    const [major, minor, patch] = semver.slice(1, 4).map(Number) as [number, number, number];
    near.push(
      `${major}.${minor}.${patch}`,
      `${major}.${minor}.${patch + 1}`,
      `${major}.${minor + 1}.0`,
      `${major + 1}.0.0`,
      `${major}.${minor}.${patch}-beta.1`,
      `v${major}.${minor}.${patch}`,
      `${major}.${minor}`,
    );
    if (patch > 0) near.push(`${major}.${minor}.${patch - 1}`);
    if (major > 0) near.push(`${major - 1}.9.9`);
  }
  return near;
}

/** Any JSON value of a kind attributes sometimes have: wrong types, empty, nested. */
const strayValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.boolean(),
  fc.integer({ min: -100, max: 100 }),
  fc
    .double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true })
    .filter((n) => !Object.is(n, -0)),
  fc.string({ maxLength: 8 }),
  fc.constantFrom('', 'true', 'null', '1e3', '2024-13-45', '1.2.3.4'),
  fc.constant(null),
  fc.constant({ nested: 'object' }),
);

/**
 * Contexts in the server-SDK shape `{ userId, attributes }`, and sometimes flat, with identities
 * under `userId`, `key` or `targetingKey` (or none), and attribute values drawn mostly from the
 * configurations' condition values and the vectors' contexts (and their neighbours), singly or in
 * arrays, sometimes missing or of a stray type.
 */
function contextArbitrary(
  translation: Translation,
  vectorContexts: readonly EvaluationContext[],
): fc.Arbitrary<Record<string, unknown>> {
  const pools = new Map<string, unknown[]>();
  const add = (attribute: string, values: unknown[]) =>
    pools.set(attribute, [...(pools.get(attribute) ?? []), ...values]);
  const conditions = [
    ...translation.flags.flatMap((f) =>
      f.rules.flatMap((r) => r.conditionGroups.flatMap((g) => g.conditions)),
    ),
    ...translation.segments.flatMap((s) => s.conditions),
  ];
  for (const condition of conditions)
    add(condition.attribute, condition.values.flatMap(neighbours));
  for (const context of vectorContexts) {
    const nested = context.attributes;
    const attributes = typeof nested === 'object' && nested !== null ? nested : {};
    for (const [name, value] of Object.entries({ ...context, ...attributes }))
      if (name !== 'attributes' && value !== undefined) add(name, [value]);
  }
  const userIds = (pools.get('userId') ?? []).filter((v): v is string => typeof v === 'string');
  pools.delete('userId');
  for (const name of ['key', 'targetingKey']) pools.delete(name);

  const valueOf = (pool: unknown[]) => {
    const known = fc.constantFrom(...new Map(pool.map((v) => [JSON.stringify(v), v])).values());
    return fc.oneof(
      { weight: 8, arbitrary: known },
      { weight: 2, arbitrary: fc.array(known, { maxLength: 3 }) },
      { weight: 1, arbitrary: strayValue },
    );
  };
  const attributes = fc.record(
    Object.fromEntries([...pools].map(([name, pool]) => [name, valueOf(pool)])),
    { requiredKeys: [] },
  );
  const identity = fc.oneof(
    fc.integer({ min: 0, max: 10_000_000 }).map((n) => `user-${n}`),
    fc.constantFrom('', ...userIds),
  );
  const identities = fc.oneof(
    { weight: 6, arbitrary: identity.map((userId) => ({ userId })) },
    { weight: 1, arbitrary: fc.oneof(identity, fc.integer()).map((key) => ({ key })) },
    { weight: 1, arbitrary: identity.map((targetingKey) => ({ targetingKey })) },
    {
      weight: 1,
      arbitrary: fc.tuple(identity, identity).map(([userId, key]) => ({ userId, key })),
    },
    { weight: 1, arbitrary: fc.constant({}) },
  );
  return fc.oneof(
    // The server-SDK shape, now and then with top-level attributes that shadow nested ones.
    {
      weight: 8,
      arbitrary: fc
        .tuple(
          identities,
          attributes,
          fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, attributes),
        )
        .map(([id, nested, top]) => ({ ...top, ...id, attributes: nested })),
    },
    // Flat, OpenFeature-like.
    {
      weight: 1,
      arbitrary: fc.tuple(identities, attributes).map(([id, flat]) => ({ ...flat, ...id })),
    },
    { weight: 1, arbitrary: identities },
  );
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

/** The reasons the built flags can give, judged from their shape. */
function producibleReasons(flags: readonly FlagPlan[]): Set<EvaluationReason> {
  const reasons = new Set<EvaluationReason>();
  for (const flag of flags) {
    if (!flag.enabled) {
      reasons.add('DISABLED');
      continue;
    }
    // A fixed fallthrough, or a rollout fallthrough for a context without identity.
    reasons.add('DEFAULT');
    if (flag.rules.some((rule) => rule.rolloutPercentage !== 0)) reasons.add('TARGETING_MATCH');
    if (typeof flag.fallthrough !== 'string') reasons.add('SPLIT');
    if (flag.prerequisites.length > 0) reasons.add('PREREQUISITE_FAILED');
  }
  return reasons;
}

function distinctConfigurations(): SdkConfiguration[] {
  const seen = new Map<string, SdkConfiguration>();
  for (const vector of vectors.cases)
    seen.set(JSON.stringify(vector.configuration), vector.configuration);
  return [...seen.values()];
}

describe('differential over the test vectors: @vexil/node agrees with /v1/sdk/evaluate', () => {
  const translation = translate(distinctConfigurations());
  const flagKeys = translation.flags.map((f) => f.key);
  let server: ServeProcess | undefined;
  let directory: string;
  let postgres: Awaited<ReturnType<typeof createPostgresDatabase>> | undefined;
  let client: VexilClient | undefined;
  let sdkKey: string;
  let baseUrl: string;
  // node:http with a keep-alive pool: several times cheaper per request than fetch here.
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

  beforeAll(async () => {
    const started = Date.now();
    directory = mkdtempSync(join(tmpdir(), 'vexil-vectors-'));
    if (process.env.DIFF_DATABASE === 'postgres') postgres = await createPostgresDatabase();
    // Building takes about a thousand management calls: above the default rate limit.
    const env = {
      VEXIL_DATABASE_URL: postgres?.url ?? join(directory, 'vexil.sqlite'),
      VEXIL_RATE_LIMIT: '1000000',
    };
    const { token } = await bootstrapWithCli(env);
    const serve = await ServeProcess.start(env);
    server = serve;
    baseUrl = serve.baseUrl;
    const manage: Manage = async (method, path, body) => {
      const response = await serve.request(method, path, { token, body });
      if (response.status >= 300)
        throw new Error(`${method} ${path}: ${JSON.stringify(response.body)}`);
      return (response.body ?? {}) as Record<string, unknown>;
    };
    await manage('POST', '/api/v1/orgs/acme/projects', { key: 'web', name: 'Web' });
    sdkKey = (
      await manage('POST', `${base}/environments/production/sdk-keys`, {
        name: 'differential',
        type: 'ServerSide',
      })
    ).key as string;
    await build(manage, translation);
    client = createClient({ baseUrl, sdkKey, streaming: false });
    await client.waitForReady();
    console.info(`vectors differential: built in ${Date.now() - started} ms`);
    // A thousand management calls through a spawned server: minutes on a machine running both
    // CI suites at once (design record 059).
  }, 180_000);
  afterAll(async () => {
    agent.destroy();
    await client?.close();
    await server?.stop();
    await postgres?.drop();
    rmSync(directory, { recursive: true, force: true });
  });

  const evaluateRemotely = (flagKey: string, context: unknown) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const body = JSON.stringify({ flagKey, context });
      const outgoing = request(
        `${baseUrl}/v1/sdk/evaluate`,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: sdkKey,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-service-reports-evaluations': '1',
          },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => {
            if (response.statusCode !== 200)
              reject(new Error(`evaluate ${flagKey} ${body}: ${response.statusCode} ${text}`));
            else resolve(JSON.parse(text) as Record<string, unknown>);
          });
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });

  it('covers most of the vector configurations', () => {
    const { configurations } = translation;
    const skipped = [...translation.skippedFlags]
      .sort((a, b) => b[1] - a[1])
      .map(([reason, n]) => `${n} × ${reason}`)
      .join('; ');
    console.info(
      `vectors differential: ${configurations.total} distinct configurations: ` +
        `${configurations.full} built whole, ${configurations.partial} in part, ` +
        `${configurations.skipped} skipped; ${translation.flags.length} of ` +
        `${translation.flags.length + [...translation.skippedFlags.values()].reduce((a, b) => a + b, 0)} flags and ` +
        `${translation.segments.length} segments built (${translation.normalisedOperators} ` +
        `non-canonical operator names normalised by the API); flags skipped: ${skipped}`,
    );
    expect(configurations.full + configurations.partial).toBeGreaterThanOrEqual(
      0.7 * configurations.total,
    );
    // The SDK holds exactly what was built.
    expect(Object.keys(client!.allFlags({})).sort()).toEqual([...flagKeys].sort());
  });

  it('builds each covered flag as its vector describes it (salts and rule ids aside)', async () => {
    const response = await fetch(`${baseUrl}/v1/sdk/flags`, { headers: { authorization: sdkKey } });
    const downloaded = (await response.json()) as SdkConfiguration;
    const byKey = new Map(downloaded.flags.map((flag) => [flag.key, flag]));
    for (const plan of translation.flags) {
      const built = byKey.get(plan.key);
      expect(built && shape(built), plan.key).toEqual(shape(plan.source));
    }
    const canonical = (conditions: readonly SdkCondition[]) =>
      conditions.map((c) => ({ ...c, operator: normalizeOperator(c.operator) }));
    expect(downloaded.segments.map((s) => ({ ...s, version: undefined }))).toEqual(
      translation.segments
        .map((s) => ({ ...s, conditions: canonical(s.conditions), version: undefined }))
        .sort((a, b) => a.key.localeCompare(b.key)),
    );
  });

  it(`${CONTEXTS} random contexts × the built flags: identical value, variation, reason and prerequisiteKey`, async () => {
    const vectorContexts = vectors.cases.map((c) => c.context);
    const contexts = fc.sample(contextArbitrary(translation, vectorContexts), {
      numRuns: CONTEXTS,
      seed: SEED,
    });
    // Each context on a rotating slice of the flags, so every flag sees EVALUATIONS_PER_FLAG
    // contexts or more (all of them when the slice is the whole list).
    const slice = Math.min(
      flagKeys.length,
      Math.max(1, Math.ceil((EVALUATIONS_PER_FLAG * flagKeys.length) / CONTEXTS)),
    );
    const cases = contexts.flatMap((context, index) =>
      Array.from({ length: slice }, (_, j) => ({
        flagKey: flagKeys[(index * slice + j) % flagKeys.length]!,
        context,
      })),
    );
    const perFlag = new Map<string, number>();
    for (const { flagKey } of cases) count(perFlag, flagKey);

    const started = Date.now();
    const mismatches: unknown[] = [];
    let mismatchCount = 0;
    const reasons = new Map<string, number>();
    const outcomes = new Map<string, Set<string>>();
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const { flagKey, context } = cases[next++]!;
        const remote = await evaluateRemotely(flagKey, context);
        const local = client!.jsonVariationDetail(flagKey, context, null);
        count(reasons, local.reason);
        if (!outcomes.has(flagKey)) outcomes.set(flagKey, new Set());
        outcomes.get(flagKey)!.add(`${local.variation} ${local.reason}`);
        const same =
          remote.variation === local.variation &&
          remote.reason === local.reason &&
          JSON.stringify(remote.value) === JSON.stringify(local.value) &&
          remote.prerequisiteKey === local.prerequisiteKey;
        if (!same && mismatchCount++ < 5) mismatches.push({ flagKey, context, remote, local });
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    // How many rules ever matched, and how many flags gave more than one answer.
    const ruled = translation.flags.filter((f) => f.enabled && f.rules.length > 0);
    const matched = ruled.filter((f) =>
      [...outcomes.get(f.key)!].some((o) => o.endsWith('TARGETING_MATCH')),
    );
    const neverMatched = ruled.filter((f) => !matched.includes(f)).map((f) => f.key);
    const varied = [...outcomes.values()].filter((o) => o.size > 1);
    // Reported, not asserted: the throughput that sizes the slice.
    console.info(
      `vectors differential: ${cases.length} remote evaluations (${contexts.length} contexts × ` +
        `${slice} of ${flagKeys.length} flags; each flag ${Math.min(...perFlag.values())}–` +
        `${Math.max(...perFlag.values())} times) in ${Date.now() - started} ms; reasons: ` +
        `${JSON.stringify(Object.fromEntries(reasons))}; enabled flags with rules that matched: ` +
        `${matched.length} of ${ruled.length} (never: ` +
        `${neverMatched.join()}); flags with more than one outcome: ` +
        `${varied.length} of ${flagKeys.length}`,
    );
    expect({ mismatchCount, mismatches }).toEqual({ mismatchCount: 0, mismatches: [] });
    expect(perFlag.size).toBe(flagKeys.length);
    expect(Math.min(...perFlag.values())).toBeGreaterThanOrEqual(
      Math.min(EVALUATIONS_PER_FLAG, CONTEXTS),
    );
    expect(new Set(reasons.keys())).toEqual(producibleReasons(translation.flags));
  }, 120_000);
});
