import type { Flag, FlagEnvironment, Rule, Segment } from '../../api/types';

/**
 * A flag's configuration in one environment in the form flags-as-code documents use (keys, not
 * ids; rules in evaluation order): what a change request's `flag` change carries and what its
 * diff shows before and after (change-requests.md section 2; docs/schemas/vexil-project).
 */
export interface ConfigurationDocument {
  enabled: boolean;
  defaultVariation: string;
  offVariation: string;
  strategy?: FlagEnvironment['strategy'];
  rollout?: { variation: string; weight: number }[];
  prerequisites?: { flag: string; variation: string }[];
  rules?: DocumentRule[];
}

export interface DocumentRule {
  description?: string | null;
  variation: string;
  rolloutWeight?: number | null;
  segment?: string | null;
  conditionGroups?: {
    operator?: 'And' | 'Or';
    conditions: { attribute: string; operator: string; values: string[]; negate?: boolean }[];
  }[];
}

/** The settings of a flag in one environment that targeting edits, as the API reads them. */
export type TargetingSettings = Pick<
  FlagEnvironment,
  'isEnabled' | 'defaultVariationId' | 'offVariationId' | 'strategy' | 'rollout' | 'prerequisites'
>;

/**
 * The configuration as a document: variation and segment ids become keys (an id the console
 * cannot name stays as it is, and the server then refuses it with the path).
 */
export function documentOf(
  settings: TargetingSettings,
  rules: readonly Rule[],
  flag: Pick<Flag, 'variations'>,
  segments: readonly Segment[],
): ConfigurationDocument {
  const variation = (id: string) => flag.variations.find((v) => v.id === id)?.key ?? id;
  const segment = (id: string) => segments.find((s) => s.id === id)?.key ?? id;
  return {
    enabled: settings.isEnabled,
    defaultVariation: variation(settings.defaultVariationId),
    offVariation: variation(settings.offVariationId),
    strategy: settings.strategy,
    rollout:
      settings.strategy === 'PercentageRollout'
        ? settings.rollout.map((w) => ({ variation: variation(w.variationId), weight: w.weight }))
        : [],
    prerequisites: settings.prerequisites.map((p) => ({
      flag: p.prerequisiteFlagKey,
      variation: p.expectedVariationKey,
    })),
    rules: rules.map((rule) => ({
      description: rule.description,
      variation: variation(rule.variationId),
      rolloutWeight: rule.rolloutWeight,
      segment: rule.userSegmentId ? segment(rule.userSegmentId) : null,
      conditionGroups: rule.conditionGroups.map((group) => ({
        operator: group.operator,
        conditions: group.conditions.map(({ attribute, operator, values, negate }) => ({
          attribute,
          operator,
          values,
          negate,
        })),
      })),
    })),
  };
}

/** Reads a change's `configuration` (or a diff side) as a document, or null when it is not one. */
export function asConfiguration(value: unknown): ConfigurationDocument | null {
  if (typeof value !== 'object' || value === null) return null;
  const candidate = value as Partial<ConfigurationDocument>;
  return typeof candidate.enabled === 'boolean' && typeof candidate.defaultVariation === 'string'
    ? (candidate as ConfigurationDocument)
    : null;
}
