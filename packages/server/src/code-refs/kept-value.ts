import type { FlagValue } from './cleanup/constants.js';

/**
 * A variation's value as SDKs receive it: values are strings on the wire (interface spec,
 * Variation). As the server's `db/variation-values.ts`; the CLI talks to the server over HTTP only.
 */
function typedValue(type: FlagDescription['type'], value: string): FlagValue {
  if (type === 'Boolean') return value === 'true';
  if (type === 'Number') return Number(value);
  if (type === 'Json') return JSON.parse(value) as FlagValue;
  return value;
}

/** The flag as the management API describes it (`GET …/flags/{flag}`), what the choice needs. */
export interface FlagDescription {
  key: string;
  type: 'Boolean' | 'String' | 'Number' | 'Json';
  variations: { id: string; key: string | null; value: string | null }[];
}

/** One environment's configuration (`GET …/flags/{flag}/environments`) and its rule count. */
export interface EnvironmentServing {
  environmentKey: string | null;
  isEnabled: boolean;
  defaultVariationId: string;
  offVariationId: string;
  strategy: string;
  rollout: { variationId: string; weight: number }[];
  prerequisites: unknown[];
  rules: number;
}

/**
 * The value to keep, the variation it is and the environments that decided it; or why none can
 * be chosen (the CLI exits 1 with it, the MCP plan says it), naming the environments.
 */
export type KeptValue =
  { value: FlagValue; variation: string; environments: string[] } | { refused: string };

/**
 * The variation an environment serves everyone when on: none while it has rules, prerequisites,
 * or a rollout over more than one variation (the removal candidates' rule, design record 008).
 */
function servedWhenOn(environment: EnvironmentServing): string | null {
  if (!environment.isEnabled || environment.rules > 0 || environment.prerequisites.length > 0)
    return null;
  if (environment.strategy === 'PercentageRollout') {
    const weighted = environment.rollout.filter((entry) => entry.weight > 0);
    return weighted.length === 1 ? (weighted[0]?.variationId ?? null) : null;
  }
  return environment.defaultVariationId;
}

/**
 * The value a flag's reads become (flag-cleanup contract, section 3): with `on`, the variation
 * the flag serves everyone in the environments where it is on and serves one variation; with
 * `off`, its off variation in every environment. Refused when environments disagree (naming
 * them) or when no environment serves one variation to everyone. The one rule for `vexil cleanup`
 * and the MCP tool `flag_cleanup_plan`, so the plan and the command agree.
 */
export function keptValue(
  flag: FlagDescription,
  environments: readonly EnvironmentServing[],
  treatment: 'on' | 'off',
): KeptValue {
  const chosen = environments
    .map((environment) => ({
      environment: environment.environmentKey ?? '?',
      variationId: treatment === 'off' ? environment.offVariationId : servedWhenOn(environment),
    }))
    .filter(
      (entry): entry is { environment: string; variationId: string } => entry.variationId !== null,
    );
  if (chosen.length === 0)
    return {
      refused: `${flag.key} serves no single variation to everyone in any environment; pass --value`,
    };
  const variations = new Map(flag.variations.map((variation) => [variation.id, variation]));
  const distinct = new Set(chosen.map((entry) => entry.variationId));
  if (distinct.size > 1)
    return {
      refused: `${flag.key} keeps different values in different environments (${chosen
        .map((entry) => `${entry.environment}: ${variations.get(entry.variationId)?.key ?? '?'}`)
        .join(', ')}); pass --value`,
    };
  const variation = variations.get(chosen[0]?.variationId ?? '');
  if (!variation || variation.value === null)
    return { refused: `${flag.key}: the variation it serves has no value` };
  return {
    value: typedValue(flag.type, variation.value),
    variation: variation.key ?? variation.id,
    environments: chosen.map((entry) => entry.environment),
  };
}
