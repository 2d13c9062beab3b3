/**
 * Compilation: turns an `SdkConfiguration` into lookup tables once, so that evaluation does no
 * parsing, sorting or searching by name.
 */
import { ConditionTable } from './conditions.js';
import type { CompiledCondition } from './conditions.js';
import type {
  FlagMetadata,
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
  /** Position in `CompiledEnvironment.flagKeys`, or -1 when the flag does not exist. */
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
  /** Frozen; one shared empty object for flags without metadata. */
  readonly metadata: FlagMetadata;
}

/**
 * An environment configuration ready for evaluation. Build it with {@link compileEnvironment} (or
 * {@link compileLazily}) whenever the configuration changes and share it between requests. Its
 * segments are compiled up front and each flag when it is first evaluated, so that an
 * environment of thousands of flags costs memory only for the flags actually evaluated. Apart
 * from that and scratch space evaluation uses synchronously it is immutable. Only `environment`,
 * `version`, `flagKeys` and `flagIndex` are meant to be read; the rest is the engine's own layout
 * and may change.
 */
export interface CompiledEnvironment {
  readonly environment: string | null;
  readonly version: number;
  /** Flag keys in configuration order. */
  readonly flagKeys: readonly string[];
  /** Each flag key's position in `flagKeys`. */
  readonly flagIndex: ReadonlyMap<string, number>;
  /** The flags compiled so far, by position in `flagKeys`. */
  readonly flagList: (CompiledFlag | undefined)[];
  /** Reads the configuration of the flag at a position, for its compilation. */
  readonly flagSource: (index: number) => SdkFlag;
  readonly segments: ReadonlyMap<string, CompiledSegment>;
  readonly conditions: ConditionTable;
  readonly shared: SharedParts;
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
  /** Replaced by longer arrays as compiled flags add conditions (see {@link compiledFlag}). */
  stamps: Uint32Array;
  /** 1: matched, 0: did not (valid only where the stamp is the evaluation's generation). */
  results: Uint8Array;
  /** The generation whose context's default bucketing identity `identity` holds. */
  identityGeneration: number;
  /** The default bucketing identity (no `bucketBy`) of the context, if it has one. */
  identity: string | undefined;
}

function isOr(operator: unknown): boolean {
  return typeof operator === 'string' && operator.toLowerCase() === 'or';
}

// The configuration is parsed JSON: a list it declares may be missing or not a list at all.
function asArray<T>(value: readonly T[] | null | undefined): readonly T[] {
  return Array.isArray(value) ? (value as readonly T[]) : [];
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

/**
 * What many flags of an environment have in common (the variations of Boolean flags, Fixed
 * serves, the slices of a 50/50 split, condition groups), compiled once and shared by all of
 * them. Compiled parts are immutable, so sharing cannot change a result; at thousands of flags it
 * saves most of their memory.
 */
export class SharedParts {
  private readonly parts = new Map<string, unknown>();

  /** The part known by `key`, made by `make` the first time it is asked for. */
  get<T>(key: string, make: () => T): T {
    let part = this.parts.get(key) as T | undefined;
    if (part === undefined) {
      part = make();
      this.parts.set(key, part);
    }
    return part;
  }
}

/** What compiling a flag reads besides the flag: the environment's shared tables. */
interface CompileScope {
  readonly segments: ReadonlyMap<string, CompiledSegment>;
  readonly flagIndex: ReadonlyMap<string, number>;
  readonly conditions: ConditionTable;
  readonly shared: SharedParts;
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
const NONE: readonly never[] = [];
const NO_METADATA: FlagMetadata = Object.freeze({});

function compileServe(
  serve: SdkServe | null | undefined,
  variationIndex: ReadonlyMap<string, number>,
  flagKey: string,
  shared: SharedParts,
): CompiledServe {
  // Only rollouts read a salt or a bucketing attribute, so every other serve is shared.
  const malformed = (rollout: boolean): CompiledServe =>
    shared.get(`malformed ${rollout}`, () =>
      makeServe(rollout, true, -1, null, '', NO_BOUNDS, NO_BOUNDS),
    );
  if (typeof serve !== 'object' || serve === null) return malformed(false);
  // Parsed JSON: the type may be neither of those declared.
  const type: string = serve.type;
  if (type === 'Fixed') {
    const index =
      typeof serve.variation === 'string' ? (variationIndex.get(serve.variation) ?? -1) : -1;
    if (index < 0) return malformed(false);
    return shared.get(`fixed ${index}`, () =>
      makeServe(false, false, index, null, '', NO_BOUNDS, NO_BOUNDS),
    );
  }
  if (type !== 'Rollout') return malformed(false);
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
  const salt = typeof serve.salt === 'string' && serve.salt !== '' ? serve.salt : flagKey;
  const bucketBy =
    typeof serve.bucketBy === 'string' && serve.bucketBy !== '' ? serve.bucketBy : null;
  return makeServe(
    true,
    false,
    -1,
    bucketBy,
    salt,
    shared.get(`bounds ${bounds.join()}`, () => bounds),
    shared.get(`bound variations ${boundVariations.join()}`, () => boundVariations),
  );
}

function compileSegment(segment: SdkSegment, conditions: ConditionTable): CompiledSegment {
  return {
    key: segment.key,
    and: !isOr(segment.conditionLogic),
    conditions: asArray(segment.conditions).map((c) => conditions.compile(c)),
  };
}

function compileGroups(
  groups: readonly SdkConditionGroup[],
  scope: CompileScope,
): readonly CompiledGroup[] {
  const compiled = groups.map((group): CompiledGroup => ({
    and: !isOr(group.operator),
    conditions: asArray(group.conditions).map((c) => scope.conditions.compile(c)),
  }));
  const key = compiled
    .map((group) => `${group.and ? 'and' : 'or'}(${group.conditions.map((c) => c.id).join()})`)
    .join();
  return scope.shared.get(`groups ${key}`, () => compiled);
}

function compileRule(
  rule: SdkRule,
  variationIndex: ReadonlyMap<string, number>,
  flagKey: string,
  scope: CompileScope,
): CompiledRule {
  const segmentKey = rule.segmentKey;
  // Parsed JSON: an id may arrive as a number.
  const id: unknown = rule.id;
  return {
    id: String(id),
    groups: compileGroups(asArray(rule.conditionGroups), scope),
    segment:
      typeof segmentKey === 'string' && segmentKey !== ''
        ? (scope.segments.get(segmentKey) ?? null)
        : undefined,
    serve: compileServe(rule.serve, variationIndex, flagKey, scope.shared),
  };
}

function compileVariations(
  variations: readonly SdkVariation[],
  shared: SharedParts,
): readonly SdkVariation[] {
  const key = JSON.stringify(variations.map((v) => [v.key, v.value ?? null]));
  return shared.get(`variations ${key}`, () =>
    variations.map((v) => ({ key: v.key, value: frozenCopy(v.value ?? null) })),
  );
}

/** A frozen copy of the metadata's string, finite number and Boolean values; others are dropped. */
function compileMetadata(metadata: FlagMetadata | null | undefined): FlagMetadata {
  if (typeof metadata !== 'object' || metadata === null) return NO_METADATA;
  const entries = Object.entries(metadata).filter(
    ([, value]) =>
      typeof value === 'string' ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value)),
  );
  return entries.length > 0 ? Object.freeze(Object.fromEntries(entries)) : NO_METADATA;
}

function compileFlag(flag: SdkFlag, key: string, index: number, scope: CompileScope): CompiledFlag {
  const variations = compileVariations(asArray(flag.variations), scope.shared);
  const variationIndex = new Map<string, number>();
  variations.forEach((v, i) => {
    if (!variationIndex.has(v.key)) variationIndex.set(v.key, i);
  });
  // Stable sort: rules with equal priority keep their configuration order.
  const rules = asArray(flag.rules)
    .map((rule, position) => ({ rule, position }))
    .sort((a, b) => a.rule.priority - b.rule.priority || a.position - b.position)
    .map(({ rule }) => compileRule(rule, variationIndex, key, scope));
  const prerequisites = asArray(flag.prerequisites).map((p) => ({
    key: p.prerequisiteFlagKey,
    flagIndex: scope.flagIndex.get(p.prerequisiteFlagKey) ?? -1,
    expectedVariationKey: p.expectedVariationKey,
  }));
  return {
    key,
    index,
    // Parsed JSON: only `true` itself turns a flag on.
    enabled: (flag.enabled as unknown) === true,
    variations,
    offIndex: variationIndex.get(flag.offVariation) ?? -1,
    prerequisites: prerequisites.length > 0 ? prerequisites : NONE,
    rules: rules.length > 0 ? rules : NONE,
    fallthrough: compileServe(flag.fallthrough, variationIndex, key, scope.shared),
    metadata: compileMetadata(flag.metadata),
  };
}

/**
 * An environment configuration whose flags are read one at a time, when first evaluated: for
 * callers that hold flags in a compact form (such as serialized) rather than as objects.
 */
export interface LazyConfiguration {
  readonly environment: string | null;
  readonly version: number;
  /** Flag keys in configuration order, each once. */
  readonly flagKeys: readonly string[];
  readonly segments: readonly SdkSegment[];
  /** The flag whose key is `flagKeys[index]`. Called at most once per flag; must not throw. */
  flag(index: number): SdkFlag;
}

/**
 * Prepares an environment configuration for evaluation: segments indexed by key (the first of
 * duplicate keys wins) and compiled; each flag is compiled when first evaluated (rules sorted by
 * priority, condition values parsed and regexes compiled, variation references resolved). Never
 * throws on odd content: what cannot be served evaluates to an ERROR result, conditions that
 * cannot match never match.
 */
export function compileLazily(config: LazyConfiguration): CompiledEnvironment {
  const conditions = new ConditionTable();
  const segments = new Map<string, CompiledSegment>();
  for (const segment of asArray(config.segments)) {
    if (!segments.has(segment.key)) segments.set(segment.key, compileSegment(segment, conditions));
  }
  const flagKeys = config.flagKeys;
  return {
    environment: config.environment,
    version: config.version,
    flagKeys,
    flagIndex: new Map(flagKeys.map((key, index) => [key, index])),
    flagList: new Array<CompiledFlag | undefined>(flagKeys.length),
    flagSource: (index) => config.flag(index),
    segments,
    conditions,
    shared: new SharedParts(),
    visiting: new Uint8Array(flagKeys.length),
    conditionMemo: {
      generation: 0,
      stamps: new Uint32Array(conditions.size),
      results: new Uint8Array(conditions.size),
      identityGeneration: 0,
      identity: undefined,
    },
  };
}

/**
 * Prepares an environment configuration for evaluation (see {@link compileLazily}); of flags
 * with the same key, the first wins.
 *
 * @param config - the server-SDK environment configuration (`GET /v1/sdk/flags`)
 */
export function compileEnvironment(config: SdkConfiguration): CompiledEnvironment {
  const unique: SdkFlag[] = [];
  const seen = new Set<string>();
  for (const flag of asArray(config.flags)) {
    if (seen.has(flag.key)) continue;
    seen.add(flag.key);
    unique.push(flag);
  }
  return compileLazily({
    environment: config.environment ?? null,
    version: config.version,
    flagKeys: unique.map((flag) => flag.key),
    segments: asArray(config.segments),
    flag: (index) => unique[index] as SdkFlag,
  });
}

/** The flag at a position in `env.flagKeys`, compiled on first use. */
export function compiledFlag(env: CompiledEnvironment, index: number): CompiledFlag {
  const compiled = env.flagList[index];
  if (compiled !== undefined) return compiled;
  const flag = compileFlag(env.flagSource(index), env.flagKeys[index] as string, index, env);
  env.flagList[index] = flag;
  const memo = env.conditionMemo;
  const size = env.conditions.size;
  if (memo.stamps.length < size) {
    // Doubling keeps the copies rare while an environment's flags are compiled one by one.
    const length = Math.max(size, 2 * memo.stamps.length);
    const stamps = new Uint32Array(length);
    stamps.set(memo.stamps);
    const results = new Uint8Array(length);
    results.set(memo.results);
    memo.stamps = stamps;
    memo.results = results;
  }
  return flag;
}
