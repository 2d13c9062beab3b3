import type {
  SdkCondition,
  SdkConditionGroup,
  SdkFlag,
  SdkRule,
  SdkSegment,
  SdkServe,
} from '@vexil/engine';
import type { Kysely } from 'kysely';
import { environmentVersion } from '../db/environment-versions.js';
import type { Schema, StoredCondition, StoredConditionGroup } from '../db/schema.js';
import { typedValue } from '../db/variation-values.js';

/** An environment's SDK configuration apart from its flags, plus what only the server needs to know. */
export interface EnvironmentConfiguration {
  environment: string;
  version: number;
  segments: SdkSegment[];
  /** Keys of the flags client SDKs may see, in key order. */
  clientSideKeys: string[];
  projectId: string;
  organizationId: string;
}

/**
 * Flags read per query. An environment of thousands of flags is read in pages so that its rows
 * and flag objects never all exist at once: each page is handed over and dropped, and building a
 * snapshot leaves little behind in the heap or the allocator. On SQLite a query runs without
 * giving the event loop a turn, so a page is also the longest the read holds evaluations up:
 * small enough to stay within milliseconds (design record 060).
 */
const FLAGS_PER_PAGE = 100;

/** Receives an environment's configuration while it is read. */
export interface ConfigurationSink {
  /** First, once: the environment's key and configuration version. */
  begin(environment: string, version: number): void;
  /** Then its flags, a page at a time in key order; the next page is read once this resolves. */
  addFlags(flags: readonly SdkFlag[]): Promise<void>;
}

/**
 * Reads an environment's complete server-SDK configuration (spec: Server-SDK environment
 * configuration) in one read transaction, so that it is consistent with its `version`. The
 * environment and its flags (archived ones left out) go to `sink` as they are read; the rest is
 * returned. Returns undefined when the environment no longer exists.
 */
export async function readEnvironmentConfiguration(
  db: Kysely<Schema>,
  environmentId: string,
  sink: ConfigurationSink,
): Promise<EnvironmentConfiguration | undefined> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const environment = await trx
        .selectFrom('environments')
        .innerJoin('projects', 'projects.id', 'environments.project_id')
        .select([
          'environments.key',
          environmentVersion().as('version'),
          'environments.project_id',
          'projects.organization_id',
        ])
        .where('environments.id', '=', environmentId)
        .executeTakeFirst();
      if (!environment) return undefined;
      sink.begin(environment.key, environment.version);
      const segments = await trx
        .selectFrom('segments')
        .selectAll()
        .where('project_id', '=', environment.project_id)
        .orderBy('key')
        .execute();
      const clientSideKeys: string[] = [];
      let after: string | null = null;
      for (;;) {
        const flags = await readFlagPage(trx, environmentId, after);
        await sink.addFlags(flags.map((flag) => flag.sdkFlag));
        for (const flag of flags) {
          if (flag.clientSideVisible) clientSideKeys.push(flag.sdkFlag.key);
        }
        const last = flags.at(-1);
        if (flags.length < FLAGS_PER_PAGE || !last) break;
        after = last.sdkFlag.key;
      }
      return {
        environment: environment.key,
        version: environment.version,
        segments: segments.map((segment): SdkSegment => ({
          key: segment.key,
          version: segment.version,
          conditions: (JSON.parse(segment.conditions) as StoredCondition[]).map(sdkCondition),
          conditionLogic: segment.condition_logic,
        })),
        clientSideKeys,
        projectId: environment.project_id,
        organizationId: environment.organization_id,
      };
    });
}

// Parsed JSON, read defensively: a condition stored without `negate` is not negated.
const sdkCondition = ({
  attribute,
  operator,
  values,
  negate,
}: Omit<StoredCondition, 'negate'> & { negate?: boolean }): SdkCondition => ({
  attribute,
  operator,
  values,
  negate: negate ?? false,
});

/** Up to {@link FLAGS_PER_PAGE} flags of the environment with keys after `after`, in key order. */
async function readFlagPage(
  trx: Kysely<Schema>,
  environmentId: string,
  after: string | null,
): Promise<{ sdkFlag: SdkFlag; clientSideVisible: boolean }[]> {
  let query = trx
    .selectFrom('flags')
    .innerJoin('flag_environments', 'flag_environments.flag_id', 'flags.id')
    .select([
      'flags.id',
      'flags.key',
      'flags.type',
      'flag_environments.version',
      'flags.salt',
      'flags.client_side_visible',
      'flags.metadata',
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
    .limit(FLAGS_PER_PAGE);
  if (after !== null) query = query.where('flags.key', '>', after);
  const flags = await query.execute();
  if (flags.length === 0) return [];
  const flagIds = flags.map((flag) => flag.id);
  const [variations, rules] = await Promise.all([
    trx
      .selectFrom('variations')
      .select(['id', 'flag_id', 'key', 'value'])
      .where('flag_id', 'in', flagIds)
      .orderBy('flag_id')
      .orderBy('sort_order')
      .execute(),
    trx
      .selectFrom('rules')
      .leftJoin('segments', 'segments.id', 'rules.segment_id')
      .select([
        'rules.id',
        'rules.flag_id',
        'rules.priority',
        'rules.variation_id',
        'rules.rollout_weight',
        'rules.condition_groups',
        'segments.key as segment_key',
      ])
      .where('rules.environment_id', '=', environmentId)
      .where('rules.flag_id', 'in', flagIds)
      .orderBy('rules.priority')
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

  return flags.map((flag) => {
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
        conditions: group.conditions.map(sdkCondition),
      }));
      const serve: SdkServe =
        rule.rollout_weight === null
          ? fixed(rule.variation_id)
          : {
              type: 'Rollout',
              salt: flag.salt,
              variations: [
                {
                  key: variationKey.get(rule.variation_id) ?? '',
                  weight: rule.rollout_weight,
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
    const sdkFlag: SdkFlag = {
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
      // Left out when empty: flags without metadata serialize as they did before it existed.
      ...(flag.metadata !== '{}'
        ? { metadata: JSON.parse(flag.metadata) as SdkFlag['metadata'] }
        : {}),
    };
    return { sdkFlag, clientSideVisible: flag.client_side_visible === 1 };
  });
}
