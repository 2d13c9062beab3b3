import type {
  DocumentChangeRequestPolicy,
  DocumentCondition,
  DocumentEnvironment,
  DocumentFlagEnvironment,
  DocumentSegment,
} from './document.js';

// The document's items with their defaults filled in, member for member in the export's order,
// so that an item and its stored counterpart compare as text (design record 027).

/** The policy of an environment that has none (design record 042), as a new one starts. */
const NO_CHANGE_REQUESTS: DocumentChangeRequestPolicy = {
  required: false,
  approvals: 1,
  emergencyOff: true,
};

/**
 * An environment as the document declares it, defaults filled in; a policy left out is `kept`
 * (the stored environment's), or none for a new environment.
 */
export function completeEnvironment(
  e: DocumentEnvironment,
  kept: DocumentChangeRequestPolicy = NO_CHANGE_REQUESTS,
): DocumentEnvironment {
  const policy = e.changeRequests ?? kept;
  return {
    key: e.key,
    name: e.name ?? null,
    color: e.color ?? null,
    sortOrder: e.sortOrder ?? 0,
    critical: e.critical ?? false,
    changeRequests: {
      required: policy.required,
      approvals: policy.approvals ?? 1,
      emergencyOff: policy.emergencyOff ?? true,
    },
  };
}

/** A condition, defaults filled in. */
export function completeCondition(c: DocumentCondition): DocumentCondition {
  return {
    attribute: c.attribute,
    operator: c.operator,
    values: c.values,
    negate: c.negate ?? false,
  };
}

/** A segment, defaults filled in. */
export function completeSegment(s: DocumentSegment): DocumentSegment {
  return {
    key: s.key,
    name: s.name ?? null,
    description: s.description ?? null,
    conditionLogic: s.conditionLogic ?? 'And',
    conditions: (s.conditions ?? []).map(completeCondition),
  };
}

/** A flag's configuration in one environment, defaults filled in. */
export function completeFlagEnvironment(c: DocumentFlagEnvironment): DocumentFlagEnvironment {
  return {
    enabled: c.enabled,
    defaultVariation: c.defaultVariation,
    offVariation: c.offVariation,
    strategy: c.strategy ?? 'SingleVariation',
    rollout: c.rollout ?? [],
    prerequisites: c.prerequisites ?? [],
    rules: (c.rules ?? []).map((rule) => ({
      description: rule.description ?? null,
      variation: rule.variation,
      rolloutWeight: rule.rolloutWeight ?? null,
      segment: rule.segment ?? null,
      conditionGroups: (rule.conditionGroups ?? []).map((group) => ({
        operator: group.operator ?? 'And',
        conditions: group.conditions.map(completeCondition),
      })),
    })),
  };
}
