import type {
  SdkConditionGroup,
  SdkConfiguration,
  SdkFlag,
  SdkRule,
  SdkSegment,
  SdkServe,
} from '@vexil/engine';
import type { Kysely } from 'kysely';
import type { Schema, StoredCondition, StoredConditionGroup } from '../db/schema.js';
import { typedValue } from '../management/flags/configuration.js';

/** An environment's SDK configuration plus what only the server needs to know. */
export interface EnvironmentConfiguration {
  configuration: SdkConfiguration;
  /** Keys of the flags client SDKs may see. */
  clientSideKeys: string[];
  projectId: string;
  organizationId: string;
}

/**
 * Reads an environment's complete server-SDK configuration (spec: Server-SDK environment
 * configuration) in a handful of queries. Archived flags are left out. Returns undefined when
 * the environment no longer exists.
 */
export async function readEnvironmentConfiguration(
  db: Kysely<Schema>,
  environmentId: string,
): Promise<EnvironmentConfiguration | undefined> {
  const environment = await db
    .selectFrom('environments')
    .innerJoin('projects', 'projects.id', 'environments.project_id')
    .select([
      'environments.key',
      'environments.version',
      'environments.project_id',
      'projects.organization_id',
    ])
    .where('environments.id', '=', environmentId)
    .executeTakeFirst();
  if (!environment) return undefined;
  const [flags, variations, rules, segments] = await Promise.all([
    db
      .selectFrom('flags')
      .innerJoin('flag_environments', 'flag_environments.flag_id', 'flags.id')
      .select([
        'flags.id',
        'flags.key',
        'flags.type',
        'flags.version',
        'flags.salt',
        'flags.client_side_visible',
        'flag_environments.is_enabled',
        'flag_environments.default_variation_id',
        'flag_environments.off_variation_id',
        'flag_environments.strategy',
        'flag_environments.rollout',
        'flag_environments.prerequisites',
      ])
      .where('flag_environments.environment_id', '=', environmentId)
      .where('flags.is_archived', '=', 0)
      .orderBy('flags.key')
      .execute(),
    db
      .selectFrom('variations')
      .innerJoin('flags', 'flags.id', 'variations.flag_id')
      .select(['variations.id', 'variations.flag_id', 'variations.key', 'variations.value'])
      .where('flags.project_id', '=', environment.project_id)
      .orderBy('variations.flag_id')
      .orderBy('variations.sort_order')
      .execute(),
    db
      .selectFrom('rules')
      .leftJoin('segments', 'segments.id', 'rules.segment_id')
      .select([
        'rules.id',
        'rules.flag_id',
        'rules.priority',
        'rules.variation_id',
        'rules.rollout_percentage',
        'rules.condition_groups',
        'segments.key as segment_key',
      ])
      .where('rules.environment_id', '=', environmentId)
      .orderBy('rules.priority')
      .execute(),
    db
      .selectFrom('segments')
      .selectAll()
      .where('project_id', '=', environment.project_id)
      .orderBy('key')
      .execute(),
  ]);

  const variationKey = new Map(variations.map((v) => [v.id, v.key]));
  const variationsByFlag = new Map<string, typeof variations>();
  for (const variation of variations) {
    const list = variationsByFlag.get(variation.flag_id) ?? [];
    list.push(variation);
    variationsByFlag.set(variation.flag_id, list);
  }
  const rulesByFlag = new Map<string, typeof rules>();
  for (const rule of rules) {
    const list = rulesByFlag.get(rule.flag_id) ?? [];
    list.push(rule);
    rulesByFlag.set(rule.flag_id, list);
  }

  const sdkFlags: SdkFlag[] = flags.map((flag) => {
    const fixed = (variationId: string): SdkServe => ({
      type: 'Fixed',
      variation: variationKey.get(variationId) ?? '',
    });
    const rollout = JSON.parse(flag.rollout) as { variationId: string; weight: number }[];
    const fallthrough: SdkServe =
      flag.strategy === 'PercentageRollout'
        ? {
            type: 'Rollout',
            salt: flag.salt,
            variations: rollout.map((w) => ({
              key: variationKey.get(w.variationId) ?? '',
              weight: w.weight,
            })),
          }
        : fixed(flag.default_variation_id);
    const sdkRules: SdkRule[] = (rulesByFlag.get(flag.id) ?? []).map((rule) => {
      const groups = JSON.parse(rule.condition_groups) as StoredConditionGroup[];
      const conditionGroups: SdkConditionGroup[] = groups.map((group) => ({
        operator: group.operator,
        conditions: group.conditions.map(({ attribute, operator, values, negate }) => ({
          attribute,
          operator,
          values,
          negate: negate ?? false,
        })),
      }));
      const serve: SdkServe =
        rule.rollout_percentage === null
          ? fixed(rule.variation_id)
          : {
              type: 'Rollout',
              salt: flag.salt,
              variations: [
                {
                  key: variationKey.get(rule.variation_id) ?? '',
                  weight: rule.rollout_percentage * 1000,
                },
              ],
            };
      return {
        id: rule.id,
        priority: rule.priority,
        conditionGroups,
        serve,
        ...(rule.segment_key ? { segmentKey: rule.segment_key } : {}),
      };
    });
    return {
      key: flag.key,
      version: flag.version,
      type: flag.type,
      enabled: flag.is_enabled === 1,
      variations: (variationsByFlag.get(flag.id) ?? []).map((v) => ({
        key: v.key,
        value: typedValue(flag.type, v.value),
      })),
      rules: sdkRules,
      fallthrough,
      offVariation: variationKey.get(flag.off_variation_id) ?? '',
      prerequisites: JSON.parse(flag.prerequisites) as SdkFlag['prerequisites'],
    };
  });

  const sdkSegments: SdkSegment[] = segments.map((segment) => ({
    key: segment.key,
    version: segment.version,
    conditions: (JSON.parse(segment.conditions) as StoredCondition[]).map(
      ({ attribute, operator, values, negate }) => ({
        attribute,
        operator,
        values,
        negate: negate ?? false,
      }),
    ),
    conditionLogic: segment.condition_logic,
  }));

  return {
    configuration: {
      environment: environment.key,
      version: environment.version,
      flags: sdkFlags,
      segments: sdkSegments,
    },
    clientSideKeys: flags.filter((flag) => flag.client_side_visible === 1).map((flag) => flag.key),
    projectId: environment.project_id,
    organizationId: environment.organization_id,
  };
}
