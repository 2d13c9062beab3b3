/**
 * Evaluation: the hot path. Works only on compiled tables (a flag is compiled on its first
 * evaluation, see `compiledFlag`); no parsing, no closures, and the only allocation is the result
 * object (plus attribute string forms where an operator needs them).
 */
import { bucket } from './bucketing.js';
import { compiledFlag } from './compile.js';
import type {
  CompiledEnvironment,
  CompiledFlag,
  ConditionMemo,
  CompiledGroup,
  CompiledRule,
  CompiledSegment,
  CompiledServe,
} from './compile.js';
import { conditionMatches } from './conditions.js';
import type { CompiledCondition } from './conditions.js';
import { bucketingIdentity } from './context.js';
import { MAX_PREREQUISITE_DEPTH } from './prerequisites.js';
import type {
  EvaluationContext,
  EvaluationErrorCode,
  EvaluationReason,
  EvaluationResult,
  FlagMetadata,
} from './types.js';

const EMPTY_CONTEXT: EvaluationContext = Object.freeze({});

/** Served by a rollout when the context is in none of its slices. */
const NOT_IN_ROLLOUT = -1;

// Results are built by object literals that already hold every property they will have (rather
// than adding `ruleId` or `prerequisiteKey` afterwards), which saves a hidden-class transition and
// an extra property backing store per evaluation. Property order is the same as before:
// key, value, variation, reason, then errorCode, then ruleId or prerequisiteKey.

function errorResult(
  key: string,
  errorCode: EvaluationErrorCode,
  prerequisiteKey?: string,
  ruleId?: string,
): EvaluationResult {
  if (prerequisiteKey !== undefined) {
    return { key, value: null, variation: null, reason: 'ERROR', errorCode, prerequisiteKey };
  }
  if (ruleId !== undefined) {
    return { key, value: null, variation: null, reason: 'ERROR', errorCode, ruleId };
  }
  return { key, value: null, variation: null, reason: 'ERROR', errorCode };
}

/** The result serving a variation; at most one of `ruleId` and `prerequisiteKey` is given. */
function served(
  flag: CompiledFlag,
  variationIndex: number,
  reason: EvaluationReason,
  ruleId?: string,
  prerequisiteKey?: string,
): EvaluationResult {
  const variation = flag.variations[variationIndex];
  if (variation === undefined) {
    return errorResult(flag.key, 'MALFORMED_FLAG', prerequisiteKey, ruleId);
  }
  const key = flag.key;
  const value = variation.value;
  const variationKey = variation.key;
  if (ruleId !== undefined) return { key, value, variation: variationKey, reason, ruleId };
  if (prerequisiteKey !== undefined) {
    return { key, value, variation: variationKey, reason, prerequisiteKey };
  }
  return { key, value, variation: variationKey, reason };
}

/**
 * The generation of an evaluation that memoises nothing: a single flag without prerequisites
 * rarely matches one condition twice, so recording results would cost more than it saves.
 */
const NO_MEMO = 0;

/**
 * Starts an evaluation: the generation that stamps its memoised condition results. The generation
 * is passed down rather than read back from the memo, so that an evaluation can only ever trust
 * results stamped by itself, whatever else started in between.
 */
function nextGeneration(memo: ConditionMemo): number {
  let generation = memo.generation + 1;
  if (generation > 0xffff_ffff) {
    memo.stamps.fill(0);
    generation = 1;
  }
  memo.generation = generation;
  return generation;
}

/**
 * Whether the context satisfies the condition, matching each distinct condition at most once per
 * evaluation: flags and segments of one environment share many conditions, and an evaluateAll of
 * 50 flags would otherwise look up the same attributes and run the same comparisons hundreds of
 * times. A condition's result depends only on the context, so the memo cannot change any result.
 */
function conditionHolds(
  c: CompiledCondition,
  context: EvaluationContext,
  memo: ConditionMemo,
  generation: number,
): boolean {
  if (generation === NO_MEMO) return conditionMatches(c, context);
  const id = c.id;
  if (memo.stamps[id] === generation) return memo.results[id] === 1;
  const matched = conditionMatches(c, context);
  memo.stamps[id] = generation;
  memo.results[id] = matched ? 1 : 0;
  return matched;
}

function conditionsMatch(
  conditions: readonly CompiledCondition[],
  and: boolean,
  context: EvaluationContext,
  memo: ConditionMemo,
  generation: number,
): boolean {
  // And: every condition; Or: any. An empty list matches under And and under Or alike (handled by
  // the callers), so that an empty group is "no constraint" rather than "nobody".
  for (let i = 0; i < conditions.length; i++) {
    const matched = conditionHolds(conditions[i] as CompiledCondition, context, memo, generation);
    if (and ? !matched : matched) return !and;
  }
  return and;
}

function groupsMatch(
  groups: readonly CompiledGroup[],
  context: EvaluationContext,
  memo: ConditionMemo,
  generation: number,
): boolean {
  for (let i = 0; i < groups.length; i++) {
    const group = groups[i] as CompiledGroup;
    if (group.conditions.length === 0) continue;
    if (!conditionsMatch(group.conditions, group.and, context, memo, generation)) return false;
  }
  return true;
}

function inSegment(
  segment: CompiledSegment,
  context: EvaluationContext,
  memo: ConditionMemo,
  generation: number,
): boolean {
  // A segment with no conditions contains nobody: an empty definition must not target everyone.
  if (segment.conditions.length === 0) return false;
  return conditionsMatch(segment.conditions, segment.and, context, memo, generation);
}

function ruleMatches(
  rule: CompiledRule,
  context: EvaluationContext,
  memo: ConditionMemo,
  generation: number,
): boolean {
  if (rule.segment === null) return false;
  if (!groupsMatch(rule.groups, context, memo, generation)) return false;
  return rule.segment === undefined || inSegment(rule.segment, context, memo, generation);
}

/** The variation a rollout serves the context, or NOT_IN_ROLLOUT. */
function rolloutVariation(
  serve: CompiledServe,
  context: EvaluationContext,
  memo: ConditionMemo,
  generation: number,
): number {
  let identity: string | undefined;
  if (serve.bucketBy !== null || generation === NO_MEMO) {
    identity = bucketingIdentity(context, serve.bucketBy);
  } else if (memo.identityGeneration === generation) {
    identity = memo.identity;
  } else {
    // Most rollouts bucket by the default identity: found once per evaluation.
    identity = bucketingIdentity(context, null);
    memo.identity = identity;
    memo.identityGeneration = generation;
  }
  if (identity === undefined) return NOT_IN_ROLLOUT;
  const b = bucket(serve.salt, identity);
  const bounds = serve.bounds;
  for (let i = 0; i < bounds.length; i++) {
    if (b < (bounds[i] as number)) return serve.boundVariations[i] as number;
  }
  return NOT_IN_ROLLOUT;
}

function offResult(
  flag: CompiledFlag,
  reason: EvaluationReason,
  prerequisiteKey?: string,
): EvaluationResult {
  return served(flag, flag.offIndex, reason, undefined, prerequisiteKey);
}

/** Returns the result that ends evaluation when a prerequisite is not met, else `undefined`. */
function checkPrerequisites(
  env: CompiledEnvironment,
  flag: CompiledFlag,
  context: EvaluationContext,
  depth: number,
  generation: number,
): EvaluationResult | undefined {
  if (depth >= MAX_PREREQUISITE_DEPTH) {
    return errorResult(flag.key, 'MALFORMED_FLAG', flag.prerequisites[0]?.key);
  }
  env.visiting[flag.index] = 1;
  try {
    for (const prerequisite of flag.prerequisites) {
      if (prerequisite.flagIndex < 0) {
        return errorResult(flag.key, 'MALFORMED_FLAG', prerequisite.key);
      }
      const required = compiledFlag(env, prerequisite.flagIndex);
      if (env.visiting[required.index] === 1) {
        return errorResult(flag.key, 'PREREQUISITE_CYCLE', prerequisite.key);
      }
      const outcome = evaluateCompiled(env, required, context, depth + 1, generation);
      if (outcome.reason === 'ERROR') {
        return errorResult(flag.key, outcome.errorCode ?? 'MALFORMED_FLAG', prerequisite.key);
      }
      if (!required.enabled || outcome.variation !== prerequisite.expectedVariationKey) {
        return offResult(flag, 'PREREQUISITE_FAILED', prerequisite.key);
      }
    }
    return undefined;
  } finally {
    env.visiting[flag.index] = 0;
  }
}

function evaluateCompiled(
  env: CompiledEnvironment,
  flag: CompiledFlag,
  context: EvaluationContext,
  depth: number,
  generation: number,
): EvaluationResult {
  if (!flag.enabled) return offResult(flag, 'DISABLED');
  if (flag.prerequisites.length > 0) {
    const failed = checkPrerequisites(env, flag, context, depth, generation);
    if (failed !== undefined) return failed;
  }
  const rules = flag.rules;
  const memo = env.conditionMemo;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as CompiledRule;
    if (!ruleMatches(rule, context, memo, generation)) continue;
    const serve = rule.serve;
    let variationIndex = serve.variationIndex;
    if (serve.malformed) return errorResult(flag.key, 'MALFORMED_FLAG', undefined, rule.id);
    if (serve.rollout) {
      variationIndex = rolloutVariation(serve, context, memo, generation);
      // Outside the rollout's slices the rule does not apply: on to the next rule.
      if (variationIndex === NOT_IN_ROLLOUT) continue;
    }
    return served(flag, variationIndex, 'TARGETING_MATCH', rule.id);
  }
  const fallthrough = flag.fallthrough;
  if (fallthrough.malformed) return errorResult(flag.key, 'MALFORMED_FLAG');
  if (!fallthrough.rollout) return served(flag, fallthrough.variationIndex, 'DEFAULT');
  const variationIndex = rolloutVariation(fallthrough, context, memo, generation);
  // A context the fallthrough rollout cannot place (no identity, or a bucket beyond the weights)
  // gets the off variation: "not in the experiment" rather than an arbitrary arm.
  if (variationIndex === NOT_IN_ROLLOUT) return offResult(flag, 'DEFAULT');
  return served(flag, variationIndex, 'SPLIT');
}

function asContext(context: unknown): EvaluationContext {
  return typeof context === 'object' && context !== null && !Array.isArray(context)
    ? (context as EvaluationContext)
    : EMPTY_CONTEXT;
}

/**
 * Evaluates one flag for a context. Never throws: an unknown flag, an unservable configuration,
 * a missing prerequisite or a prerequisite cycle all give a result with reason `ERROR`,
 * `value: null` and `variation: null`. See docs/evaluation.md for the full semantics.
 *
 * @param env - from {@link compileEnvironment}
 * @param flagKey - the flag to evaluate
 * @param context - free-form attributes; `{ userId, attributes: {...} }` is understood as-is
 */
export function evaluateFlag(
  env: CompiledEnvironment,
  flagKey: string,
  context: EvaluationContext,
): EvaluationResult {
  const index = env.flagIndex.get(flagKey);
  if (index === undefined) return errorResult(flagKey, 'FLAG_NOT_FOUND');
  const flag = compiledFlag(env, index);
  const generation = flag.prerequisites.length === 0 ? NO_MEMO : nextGeneration(env.conditionMemo);
  return evaluateCompiled(env, flag, asContext(context), 0, generation);
}

/**
 * Which flags {@link evaluateAll} evaluates: a predicate on the flag key, or a list of flag keys.
 * A list is equivalent to the predicate `(key) => keys.includes(key)`: keys of flags the
 * environment does not have are ignored, duplicates count once, and results still come in
 * configuration order. A list avoids visiting every flag of a large environment when only a few
 * are wanted.
 */
export type FlagSelection = ((flagKey: string) => boolean) | readonly string[];

function store(
  results: Record<string, EvaluationResult>,
  key: string,
  result: EvaluationResult,
): void {
  // A flag keyed "__proto__" would otherwise set the object's prototype.
  if (key === '__proto__') {
    Object.defineProperty(results, key, {
      value: result,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    results[key] = result;
  }
}

function isKeyList(include: FlagSelection | undefined): include is readonly string[] {
  return Array.isArray(include);
}

/**
 * The configuration positions of the selected flags (all of them when `include` is omitted),
 * ascending and without duplicates: what {@link evaluateSelected} takes. Selecting compiles
 * nothing. Resolve a selection once per compiled environment, then evaluate it for many contexts.
 */
export function selectFlags(env: CompiledEnvironment, include?: FlagSelection): number[] {
  const positions: number[] = [];
  if (isKeyList(include)) {
    for (const key of include) {
      const position = env.flagIndex.get(key);
      if (position !== undefined) positions.push(position);
    }
    positions.sort((x, y) => x - y);
    return positions.filter((position, j) => j === 0 || position !== positions[j - 1]);
  }
  const keys = env.flagKeys;
  for (let i = 0; i < keys.length; i++) {
    if (include === undefined || include(keys[i] as string)) positions.push(i);
  }
  return positions;
}

/**
 * Evaluates the flags at `positions` for one context, in that order: the cheapest way to evaluate
 * many flags, as an array rather than an object keyed by flag. Conditions the flags share are
 * matched once per call.
 *
 * @param positions - from {@link selectFlags} on the same `env`
 */
export function evaluateSelected(
  env: CompiledEnvironment,
  context: EvaluationContext,
  positions: readonly number[],
): EvaluationResult[] {
  const ctx = asContext(context);
  const generation = nextGeneration(env.conditionMemo);
  const results = new Array<EvaluationResult>(positions.length);
  for (let i = 0; i < positions.length; i++) {
    const flag = compiledFlag(env, positions[i] as number);
    results[i] = evaluateCompiled(env, flag, ctx, 0, generation);
  }
  return results;
}

/**
 * Evaluates every flag of the environment (in configuration order) for one context.
 *
 * @param include - when given, only the selected flags are evaluated (for example
 *   client-side-visible flags for the client evaluate endpoint): either a predicate on the flag
 *   key, or a list of flag keys (see {@link FlagSelection})
 * @returns a map from flag key to result
 */
export function evaluateAll(
  env: CompiledEnvironment,
  context: EvaluationContext,
  include?: FlagSelection,
): Record<string, EvaluationResult> {
  const results: Record<string, EvaluationResult> = {};
  for (const result of evaluateSelected(env, context, selectFlags(env, include))) {
    store(results, result.key, result);
  }
  return results;
}

/**
 * Whether the flag's fallthrough is a percentage rollout: a `DEFAULT` result of such a flag means
 * the context could not be bucketed (it has no identity to bucket by). False for unknown flags.
 */
export function hasRolloutFallthrough(env: CompiledEnvironment, flagKey: string): boolean {
  const index = env.flagIndex.get(flagKey);
  return index !== undefined && compiledFlag(env, index).fallthrough.rollout;
}

/**
 * Whether the flag serves every context the same variation without reading the context: it is
 * enabled, has no prerequisites and no targeting rules, and its default serves one variation. A
 * `DEFAULT` result of such a flag involved no dynamic evaluation (OpenFeature's reason `STATIC`).
 * False for unknown flags.
 */
export function isStaticFlag(env: CompiledEnvironment, flagKey: string): boolean {
  const index = env.flagIndex.get(flagKey);
  if (index === undefined) return false;
  const flag = compiledFlag(env, index);
  return (
    flag.enabled &&
    flag.prerequisites.length === 0 &&
    flag.rules.length === 0 &&
    !flag.fallthrough.rollout
  );
}

/**
 * The flag's metadata (`SdkFlag.metadata`, frozen; empty when it has none), for callers that
 * return it with an evaluation, as OpenFeature's flag metadata. Undefined for unknown flags.
 */
export function flagMetadata(env: CompiledEnvironment, flagKey: string): FlagMetadata | undefined {
  const index = env.flagIndex.get(flagKey);
  return index === undefined ? undefined : compiledFlag(env, index).metadata;
}
