import type { Kysely, Selectable } from 'kysely';
import type {
  EnvironmentsTable,
  FlagEnvironmentsTable,
  ProjectsTable,
  RulesTable,
  Schema,
  SegmentsTable,
  StoredCondition,
  StoredConditionGroup,
  VariationsTable,
} from '../db/schema.js';
import type { FlagRow } from '../api/path-resources.js';
import type {
  DocumentCondition,
  DocumentEnvironment,
  DocumentFlag,
  DocumentFlagEnvironment,
  DocumentSegment,
} from './document.js';

export type EnvironmentRow = Selectable<EnvironmentsTable>;
export type SegmentRow = Selectable<SegmentsTable>;
export type VariationRow = Selectable<VariationsTable>;
export type ConfigurationRow = Selectable<FlagEnvironmentsTable>;
export type RuleRow = Selectable<RulesTable>;

/** A flag as stored, with everything the document says about it. */
export interface FlagState {
  row: FlagRow;
  /** In display order. */
  variations: VariationRow[];
  /** By environment id. */
  configurations: Map<string, ConfigurationRow>;
  /** By environment id, in priority order. */
  rules: Map<string, RuleRow[]>;
}

/** A project's configuration as stored, in the document's order. */
export interface ProjectState {
  project: Selectable<ProjectsTable>;
  /** By sort order, then key. */
  environments: EnvironmentRow[];
  /** By key. */
  segments: SegmentRow[];
  /** By key, archived flags included. */
  flags: FlagState[];
}

const byKey = <T extends { key: string }>(a: T, b: T) =>
  a.key < b.key ? -1 : a.key > b.key ? 1 : 0;

/** Environments in the document's order: sort order, then key. */
export function environmentOrder(a: EnvironmentRow, b: EnvironmentRow): number {
  return a.sort_order - b.sort_order || byKey(a, b);
}

/**
 * Reads a project's whole configuration with `db` (a transaction inside an apply, so that the
 * plan is computed from what it changes).
 */
export async function readProjectState(
  db: Kysely<Schema>,
  project: Selectable<ProjectsTable>,
): Promise<ProjectState> {
  const [environments, segments, flags, variations, configurations, rules] = await Promise.all([
    db.selectFrom('environments').selectAll().where('project_id', '=', project.id).execute(),
    db.selectFrom('segments').selectAll().where('project_id', '=', project.id).execute(),
    db.selectFrom('flags').selectAll().where('project_id', '=', project.id).execute(),
    db
      .selectFrom('variations')
      .innerJoin('flags', 'flags.id', 'variations.flag_id')
      .selectAll('variations')
      .where('flags.project_id', '=', project.id)
      .orderBy('variations.sort_order')
      .orderBy('variations.key')
      .execute(),
    db
      .selectFrom('flag_environments')
      .innerJoin('flags', 'flags.id', 'flag_environments.flag_id')
      .selectAll('flag_environments')
      .where('flags.project_id', '=', project.id)
      .execute(),
    db
      .selectFrom('rules')
      .innerJoin('flags', 'flags.id', 'rules.flag_id')
      .selectAll('rules')
      .where('flags.project_id', '=', project.id)
      .orderBy('rules.priority')
      .orderBy('rules.id')
      .execute(),
  ]);
  const states = new Map<string, FlagState>(
    flags
      .sort(byKey)
      .map((row) => [row.id, { row, variations: [], configurations: new Map(), rules: new Map() }]),
  );
  for (const variation of variations) states.get(variation.flag_id)?.variations.push(variation);
  for (const configuration of configurations)
    states
      .get(configuration.flag_id)
      ?.configurations.set(configuration.environment_id, configuration);
  for (const rule of rules) {
    const state = states.get(rule.flag_id);
    if (!state) continue;
    const list = state.rules.get(rule.environment_id) ?? [];
    list.push(rule);
    state.rules.set(rule.environment_id, list);
  }
  return {
    project,
    environments: environments.sort(environmentOrder),
    segments: segments.sort(byKey),
    flags: [...states.values()],
  };
}

/** A condition as the document writes it: no id, `negate` always present. */
function documentCondition(condition: StoredCondition): DocumentCondition {
  return {
    attribute: condition.attribute,
    operator: condition.operator,
    values: condition.values,
    negate: condition.negate,
  };
}

export function documentEnvironment(row: EnvironmentRow): DocumentEnvironment {
  return {
    key: row.key,
    name: row.name,
    color: row.color,
    sortOrder: row.sort_order,
    critical: row.critical === 1,
    changeRequests: {
      required: row.change_requests_required === 1,
      approvals: row.change_request_approvals,
      emergencyOff: row.change_request_emergency_off === 1,
    },
  };
}

export function documentSegment(row: SegmentRow): DocumentSegment {
  return {
    key: row.key,
    name: row.name,
    description: row.description,
    conditionLogic: row.condition_logic,
    conditions: (JSON.parse(row.conditions) as StoredCondition[]).map(documentCondition),
  };
}

/**
 * A flag's configuration in one environment as the document writes it: variations, segments and
 * prerequisite flags by key.
 */
export function documentFlagEnvironment(
  configuration: ConfigurationRow,
  rules: readonly RuleRow[],
  variationKeys: ReadonlyMap<string, string>,
  segmentKeys: ReadonlyMap<string, string>,
): DocumentFlagEnvironment {
  const variationKey = (id: string) => variationKeys.get(id) ?? id;
  return {
    enabled: configuration.is_enabled === 1,
    defaultVariation: variationKey(configuration.default_variation_id),
    offVariation: variationKey(configuration.off_variation_id),
    strategy: configuration.strategy,
    rollout: (JSON.parse(configuration.rollout) as { variationId: string; weight: number }[]).map(
      (weight) => ({ variation: variationKey(weight.variationId), weight: weight.weight }),
    ),
    prerequisites: (
      JSON.parse(configuration.prerequisites) as {
        prerequisiteFlagKey: string;
        expectedVariationKey: string;
      }[]
    ).map((p) => ({ flag: p.prerequisiteFlagKey, variation: p.expectedVariationKey })),
    rules: rules.map((rule) => ({
      description: rule.description,
      variation: variationKey(rule.variation_id),
      rolloutWeight: rule.rollout_weight,
      segment: rule.segment_id === null ? null : (segmentKeys.get(rule.segment_id) ?? null),
      conditionGroups: (JSON.parse(rule.condition_groups) as StoredConditionGroup[]).map(
        (group) => ({
          operator: group.operator,
          conditions: group.conditions.map(documentCondition),
        }),
      ),
    })),
  };
}

/**
 * A flag as the document writes it, with its configuration in `environments` (those the flag
 * has a configuration in), every member present so that the same state is always the same text.
 */
export function documentFlag(
  state: FlagState,
  environments: readonly EnvironmentRow[],
  segmentKeys: ReadonlyMap<string, string>,
): DocumentFlag {
  const { row } = state;
  const variationKeys = new Map(state.variations.map((v) => [v.id, v.key]));
  const configured: Record<string, DocumentFlagEnvironment> = {};
  for (const environment of environments) {
    const configuration = state.configurations.get(environment.id);
    if (!configuration) continue;
    configured[environment.key] = documentFlagEnvironment(
      configuration,
      state.rules.get(environment.id) ?? [],
      variationKeys,
      segmentKeys,
    );
  }
  return {
    key: row.key,
    name: row.name,
    description: row.description,
    type: row.type,
    archived: row.is_archived === 1,
    clientSideVisible: row.client_side_visible === 1,
    permanent: row.is_permanent === 1,
    tags: JSON.parse(row.tags) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, string | number | boolean>,
    expiresAtUtc: row.expires_at,
    removalPrUrl: row.removal_pr_url,
    salt: row.salt,
    variations: state.variations.map((v) => ({
      key: v.key,
      name: v.name,
      value: v.value,
      description: v.description,
    })),
    environments: configured,
  };
}
