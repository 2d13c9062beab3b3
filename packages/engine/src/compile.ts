/**
 * Compilation: turns an `SdkConfiguration` into lookup tables once, so that evaluation does no
 * parsing, sorting or searching by name.
 */
import { ConditionTable } from './conditions.js';
import type { CompiledCondition } from './conditions.js';
import type {
  SdkConfiguration,
  SdkConditionGroup,
  SdkFlag,
  SdkRule,
  SdkSegment,
  SdkServe,
  SdkVariation,
} from './types.js';

/** A compiled serve object. Variation references are indices into the flag's variations. */
export interface CompiledServe {
  readonly rollout: boolean;
  /** A reference that cannot be served (unknown variation, unknown type): evaluation errors. */
  readonly malformed: boolean;
  /** Fixed: the variation served. */
  readonly variationIndex: number;
  readonly bucketBy: string | null;
  readonly salt: string;
  /** Rollout: exclusive upper bucket bound of each slice, ascending. */
  readonly bounds: readonly number[];
  /** Rollout: the variation each slice serves. */
  readonly boundVariations: readonly number[];
}

export interface CompiledGroup {
  readonly and: boolean;
  readonly conditions: readonly CompiledCondition[];
}

export interface CompiledSegment {
  readonly key: string;
  readonly and: boolean;
  readonly conditions: readonly CompiledCondition[];
}

export interface CompiledRule {
  readonly id: string;
  readonly groups: readonly CompiledGroup[];
  /** `undefined`: no segment; `null`: a segment that does not exist, so the rule never matches. */
  readonly segment: CompiledSegment | null | undefined;
  readonly serve: CompiledServe;
}

export interface CompiledPrerequisite {
  readonly key: string;
  /** Index in `CompiledEnvironment.flagList`, or -1 when the flag does not exist. */
  readonly flagIndex: number;
  readonly expectedVariationKey: string;
}

export interface CompiledFlag {
  readonly key: string;
  readonly index: number;
  readonly enabled: boolean;
  readonly variations: readonly SdkVariation[];
  /** -1 when `offVariation` names no variation. */
  readonly offIndex: number;
  readonly prerequisites: readonly CompiledPrerequisite[];
  /** Sorted by ascending priority. */
  readonly rules: readonly CompiledRule[];
  readonly fallthrough: CompiledServe;
}

/**
 * An environment configuration ready for evaluation. Build it with {@link compileEnvironment}
 * whenever the configuration changes and share it between requests; it is immutable apart from
 * scratch space evaluation uses synchronously. Only `environment`, `version` and `flagKeys` are
 * meant to be read; the rest is the engine's own layout and may change.
 */
export interface CompiledEnvironment {
  readonly environment: string | null;
  readonly version: number;
  /** Flag keys in configuration order. */
  readonly flagKeys: readonly string[];
  readonly flags: ReadonlyMap<string, CompiledFlag>;
  readonly flagList: readonly CompiledFlag[];
  /** Scratch marks for cycle detection: 1 while a flag's prerequisites are being evaluated. */
  readonly visiting: Uint8Array;
  /** Scratch memo of condition results within one evaluation, indexed by condition id. */
  readonly conditionMemo: ConditionMemo;
}

/**
 * Which conditions one evaluation has matched so far, and with what result. A slot is valid for
 * the evaluation whose generation it is stamped with, so a new evaluation starts with an empty
 * memo by taking the next generation rather than by clearing the arrays.
 */
export interface ConditionMemo {
  /**
   * The last generation handed out. 0 is never one (it marks an evaluation without memo), so
   * fresh (zeroed) stamps are invalid.
   */
  generation: number;
  readonly stamps: Uint32Array;
  /** 1: matched, 0: did not (valid only where the stamp is the evaluation's generation). */
  readonly results: Uint8Array;
  /** The generation whose context's default bucketing identity `identity` holds. */
  identityGeneration: number;
  /** The default bucketing identity (no `bucketBy`) of the context, if it has one. */
  identity: string | undefined;
}

function isOr(operator: unknown): boolean {
  return typeof operator === 'string' && operator.toLowerCase() === 'or';
}

function asArray<T>(value: readonly T[] | null | undefined): readonly T[] {
  return Array.isArray(value) ? value : [];
}

// Variation values are handed to callers on every evaluation; freezing a private copy means no
// caller can change what the next request is served.
function frozenCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  return deepFreeze(structuredClone(value));
}

function deepFreeze(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

// Every compiled serve comes from this one object literal so that all share one hidden class and
// the reads on the evaluation path stay monomorphic.
function makeServe(
  rollout: boolean,
  malformed: boolean,
  variationIndex: number,
  bucketBy: string | null,
  salt: string,
  bounds: readonly number[],
  boundVariations: readonly number[],
): CompiledServe {
  return { rollout, malformed, variationIndex, bucketBy, salt, bounds, boundVariations };
}

const NO_BOUNDS: readonly number[] = [];

function compileServe(
  serve: SdkServe | null | undefined,
  variationIndex: ReadonlyMap<string, number>,
  flagKey: string,
): CompiledServe {
  if (typeof serve !== 'object' || serve === null) {
    return makeServe(false, true, -1, null, flagKey, NO_BOUNDS, NO_BOUNDS);
  }
  const salt = typeof serve.salt === 'string' && serve.salt !== '' ? serve.salt : flagKey;
  const bucketBy =
    typeof serve.bucketBy === 'string' && serve.bucketBy !== '' ? serve.bucketBy : null;
  const malformed = (rollout: boolean): CompiledServe =>
    makeServe(rollout, true, -1, null, flagKey, NO_BOUNDS, NO_BOUNDS);
  if (serve.type === 'Fixed') {
    const index =
      typeof serve.variation === 'string' ? (variationIndex.get(serve.variation) ?? -1) : -1;
    if (index < 0) return malformed(false);
    return makeServe(false, false, index, bucketBy, salt, NO_BOUNDS, NO_BOUNDS);
  }
  if (serve.type !== 'Rollout') return malformed(false);
  const bounds: number[] = [];
  const boundVariations: number[] = [];
  let cumulative = 0;
  for (const slice of asArray(serve.variations)) {
    const index = variationIndex.get(slice.key);
    if (index === undefined) return malformed(true);
    const weight = Number.isFinite(slice.weight) ? Math.max(0, Math.floor(slice.weight)) : 0;
    if (weight === 0) continue;
    cumulative += weight;
    bounds.push(cumulative);
    boundVariations.push(index);
  }
  return makeServe(true, false, -1, bucketBy, salt, bounds, boundVariations);
}

function compileSegment(segment: SdkSegment, table: ConditionTable): CompiledSegment {
  return {
    key: segment.key,
    and: !isOr(segment.conditionLogic),
    conditions: asArray(segment.conditions).map((c) => table.compile(c)),
  };
}

function compileGroup(group: SdkConditionGroup, table: ConditionTable): CompiledGroup {
  return {
    and: !isOr(group.operator),
    conditions: asArray(group.conditions).map((c) => table.compile(c)),
  };
}

function compileRule(
  rule: SdkRule,
  segments: ReadonlyMap<string, CompiledSegment>,
  variationIndex: ReadonlyMap<string, number>,
  flagKey: string,
  table: ConditionTable,
): CompiledRule {
  const segmentKey = rule.segmentKey;
  return {
    id: String(rule.id),
    groups: asArray(rule.conditionGroups).map((group) => compileGroup(group, table)),
    segment:
      typeof segmentKey === 'string' && segmentKey !== ''
        ? (segments.get(segmentKey) ?? null)
        : undefined,
    serve: compileServe(rule.serve, variationIndex, flagKey),
  };
}

function compileFlag(
  flag: SdkFlag,
  index: number,
  segments: ReadonlyMap<string, CompiledSegment>,
  flagIndex: ReadonlyMap<string, number>,
  table: ConditionTable,
): CompiledFlag {
  const variations = asArray(flag.variations).map((v) => ({
    key: v.key,
    value: frozenCopy(v.value ?? null),
  }));
  const variationIndex = new Map<string, number>();
  variations.forEach((v, i) => {
    if (!variationIndex.has(v.key)) variationIndex.set(v.key, i);
  });
  // Stable sort: rules with equal priority keep their configuration order.
  const rules = asArray(flag.rules)
    .map((rule, position) => ({ rule, position }))
    .sort((a, b) => a.rule.priority - b.rule.priority || a.position - b.position)
    .map(({ rule }) => compileRule(rule, segments, variationIndex, flag.key, table));
  return {
    key: flag.key,
    index,
    enabled: flag.enabled === true,
    variations,
    offIndex: variationIndex.get(flag.offVariation) ?? -1,
    prerequisites: asArray(flag.prerequisites).map((p) => ({
      key: p.prerequisiteFlagKey,
      flagIndex: flagIndex.get(p.prerequisiteFlagKey) ?? -1,
      expectedVariationKey: p.expectedVariationKey,
    })),
    rules,
    fallthrough: compileServe(flag.fallthrough, variationIndex, flag.key),
  };
}

/**
 * Compiles an environment configuration for evaluation: flags and segments indexed by key
 * (the first of duplicate keys wins), rules sorted by priority, condition values parsed and
 * regexes compiled, variation references resolved. Never throws on odd content: what cannot be
 * served evaluates to an ERROR result, conditions that cannot match never match.
 *
 * @param config - the server-SDK environment configuration (`GET /v1/sdk/flags`)
 */
export function compileEnvironment(config: SdkConfiguration): CompiledEnvironment {
  const table = new ConditionTable();
  const segments = new Map<string, CompiledSegment>();
  for (const segment of asArray(config.segments)) {
    if (!segments.has(segment.key)) segments.set(segment.key, compileSegment(segment, table));
  }
  const unique: SdkFlag[] = [];
  const flagIndex = new Map<string, number>();
  for (const flag of asArray(config.flags)) {
    if (flagIndex.has(flag.key)) continue;
    flagIndex.set(flag.key, unique.length);
    unique.push(flag);
  }
  const flagList = unique.map((flag, i) => compileFlag(flag, i, segments, flagIndex, table));
  return {
    environment: config.environment ?? null,
    version: config.version,
    flagKeys: flagList.map((f) => f.key),
    flags: new Map(flagList.map((f) => [f.key, f])),
    flagList,
    visiting: new Uint8Array(flagList.length),
    conditionMemo: {
      generation: 0,
      stamps: new Uint32Array(table.size),
      results: new Uint8Array(table.size),
      identityGeneration: 0,
      identity: undefined,
    },
  };
}
