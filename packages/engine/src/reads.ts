/**
 * What an evaluation reads from its context. A flag's result is a function of the attributes it
 * reads, so two contexts that agree on those attributes get the same results: what lets a server
 * remember a bulk answer by the few attributes it depends on rather than by the whole context.
 */
import { compiledFlag } from './compile.js';
import type { CompiledEnvironment, CompiledFlag, CompiledServe } from './compile.js';
import { DEFAULT_IDENTITY_ATTRIBUTES, lookupAttribute } from './context.js';
import type { EvaluationContext } from './types.js';

function addServeReads(serve: CompiledServe, names: Set<string>): void {
  if (!serve.rollout) return;
  if (serve.bucketBy !== null) names.add(serve.bucketBy);
  else for (const name of DEFAULT_IDENTITY_ATTRIBUTES) names.add(name);
}

function addFlagReads(
  env: CompiledEnvironment,
  flag: CompiledFlag,
  names: Set<string>,
  visited: Set<number>,
): void {
  if (visited.has(flag.index)) return;
  visited.add(flag.index);
  // A disabled flag serves its off variation without reading anything.
  if (!flag.enabled) return;
  for (const prerequisite of flag.prerequisites) {
    if (prerequisite.flagIndex >= 0)
      addFlagReads(env, compiledFlag(env, prerequisite.flagIndex), names, visited);
  }
  for (const rule of flag.rules) {
    for (const group of rule.groups) for (const c of group.conditions) names.add(c.attribute);
    for (const c of rule.segment?.conditions ?? []) names.add(c.attribute);
    addServeReads(rule.serve, names);
  }
  addServeReads(flag.fallthrough, names);
}

/**
 * The names of every attribute that evaluating the flags at `positions` can read (through
 * conditions, segments, prerequisites and rollouts' identities), sorted: evaluations of those
 * flags for two contexts that give every name the same {@link lookupAttribute} value have equal
 * results. Compiles the flags it visits.
 *
 * @param positions - from `selectFlags` on the same `env`
 */
export function attributesRead(
  env: CompiledEnvironment,
  positions: readonly number[],
): readonly string[] {
  const names = new Set<string>();
  const visited = new Set<number>();
  for (const position of positions) addFlagReads(env, compiledFlag(env, position), names, visited);
  return [...names].sort();
}

/**
 * A string equal for two contexts exactly when they read the same values of `names` (from
 * {@link attributesRead}): the JSON of those values, an absent attribute as `null` (a read never
 * gives `null`). For contexts parsed from JSON, which hold nothing JSON cannot say.
 */
export function readsKey(context: EvaluationContext, names: readonly string[]): string {
  const values = new Array<unknown>(names.length);
  for (let i = 0; i < names.length; i++) values[i] = lookupAttribute(context, names[i] as string);
  return JSON.stringify(values);
}
