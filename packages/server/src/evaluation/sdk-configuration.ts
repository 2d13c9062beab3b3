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
  /** Each flag's {@link flagStamp}, in document order. */
  flagStamps: string[];
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
  /**
   * In a read given a held configuration, in place of a flag whose stamp is the one held: the
   * sink writes the flag as it held it.
   */
  keepFlag(key: string): Promise<void>;
}

/**
 * What a read is given of the environment's configuration held from an earlier read, to read
 * only the flags changed since (design record 061).
 */
export interface HeldConfiguration {
  /** Each held flag's {@link flagStamp}, by key. */
  flagStamps: ReadonlyMap<string, string>;
  /** The held segments' keys. */
  segmentKeys: readonly string[];
}

/**
 * A flag's row and its version in the environment, `id@version`: two reads that find the same
 * stamp find the same flag JSON, since every write to a flag's configuration moves its version
 * there (design record 052) and a flag deleted and created again has another row.
 */
const flagStamp = (flag: { id: string; version: number }) => `${flag.id}@${flag.version}`;

/**
 * At most this many changed flags are read one by one; beyond, the whole environment is read in
 * pages, which costs less per flag.
 */
const MOST_CHANGED_FLAGS = FLAGS_PER_PAGE;

/**
 * Reads an environment's complete server-SDK configuration (spec: Server-SDK environment
 * configuration) in one read transaction, so that it is consistent with its `version`. The
 * environment and its flags (archived ones left out) go to `sink` as they are read; the rest is
 * returned. Returns undefined when the environment no longer exists.
 *
 * Given the configuration `held` from an earlier read, only the flags whose stamps differ are
 * read; the sink keeps the others (design record 061). A change then costs the database one
 * narrow query of the environment's flags instead of every flag's rows. Renamed segments, whose
 * keys the flags' rules carry, and many changed flags make it a whole read.
 */
export async function readEnvironmentConfiguration(
  db: Kysely<Schema>,
  environmentId: string,
  sink: ConfigurationSink,
  held?: HeldConfiguration,
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
      const sameSegments =
        held !== undefined &&
        held.segmentKeys.length === segments.length &&
        segments.every((segment, i) => segment.key === held.segmentKeys[i]);
      const flags =
        (sameSegments && (await readChangedFlags(trx, environmentId, sink, held.flagStamps))) ||
        (await readAllFlags(trx, environmentId, sink));
      return {
        environment: environment.key,
        version: environment.version,
        segments: segments.map((segment): SdkSegment => ({
          key: segment.key,
          version: segment.version,
          conditions: (JSON.parse(segment.conditions) as StoredCondition[]).map(sdkCondition),
          conditionLogic: segment.condition_logic,
        })),
        ...flags,
        projectId: environment.project_id,
        organizationId: environment.organization_id,
      };
    });
}

/** The flags' keys client SDKs may see and the flags' stamps, in document order. */
interface FlagsRead {
  clientSideKeys: string[];
  flagStamps: string[];
}

/** Every flag of the environment, to `sink` a page at a time. */
async function readAllFlags(
  trx: Kysely<Schema>,
  environmentId: string,
  sink: ConfigurationSink,
): Promise<FlagsRead> {
  const read: FlagsRead = { clientSideKeys: [], flagStamps: [] };
  let after: string | null = null;
  for (;;) {
    const flags = await readFlags(trx, environmentId, { after });
    await sink.addFlags(flags.map((flag) => flag.sdkFlag));
    for (const flag of flags) {
      if (flag.clientSideVisible) read.clientSideKeys.push(flag.sdkFlag.key);
      read.flagStamps.push(flag.stamp);
    }
    const last = flags.at(-1);
    if (flags.length < FLAGS_PER_PAGE || !last) return read;
    after = last.sdkFlag.key;
  }
}

/**
 * The flags whose stamps differ from `held`, to `sink`, and the others kept; undefined, with
 * nothing sent to `sink`, when more than {@link MOST_CHANGED_FLAGS} differ.
 */
async function readChangedFlags(
  trx: Kysely<Schema>,
  environmentId: string,
  sink: ConfigurationSink,
  held: ReadonlyMap<string, string>,
): Promise<FlagsRead | undefined> {
  const rows = await environmentFlags(trx, environmentId)
    .select(['flags.id', 'flags.key', 'flag_environments.version', 'flags.client_side_visible'])
    .orderBy('flags.key')
    .execute();
  const changedKeys = rows.filter((row) => held.get(row.key) !== flagStamp(row)).map((r) => r.key);
  if (changedKeys.length > MOST_CHANGED_FLAGS) return undefined;
  const changed = new Map(
    changedKeys.length === 0
      ? []
      : (await readFlags(trx, environmentId, { keys: changedKeys })).map((flag) => [
          flag.sdkFlag.key,
          flag.sdkFlag,
        ]),
  );
  const read: FlagsRead = { clientSideKeys: [], flagStamps: [] };
  for (const row of rows) {
    const flag = changed.get(row.key);
    if (flag) await sink.addFlags([flag]);
    else await sink.keepFlag(row.key);
    if (row.client_side_visible === 1) read.clientSideKeys.push(row.key);
    read.flagStamps.push(flagStamp(row));
  }
  return read;
}

/** The environment's flags that are not archived, joined with their configuration there. */
const environmentFlags = (trx: Kysely<Schema>, environmentId: string) =>
  trx
    .selectFrom('flags')
    .innerJoin('flag_environments', 'flag_environments.flag_id', 'flags.id')
    .where('flag_environments.environment_id', '=', environmentId)
    .where('flags.is_archived', '=', 0);

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

/**
 * The environment's flags named by `page`: up to {@link FLAGS_PER_PAGE} with keys after `after`,
 * or those with the given keys; in key order.
 */
async function readFlags(
  trx: Kysely<Schema>,
  environmentId: string,
  page: { after: string | null } | { keys: readonly string[] },
): Promise<{ sdkFlag: SdkFlag; clientSideVisible: boolean; stamp: string }[]> {
  let query = environmentFlags(trx, environmentId)
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
      'flag_environments.rollout_salt',
      'flag_environments.prerequisites',
    ])
    .orderBy('flags.key');
  if ('keys' in page) query = query.where('flags.key', 'in', page.keys);
  else {
    query = query.limit(FLAGS_PER_PAGE);
    if (page.after !== null) query = query.where('flags.key', '>', page.after);
  }
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
            // A running experiment buckets its split with its own salt (design record 064).
            salt: flag.rollout_salt ?? flag.salt,
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
    return {
      sdkFlag,
      clientSideVisible: flag.client_side_visible === 1,
      stamp: flagStamp(flag),
    };
  });
}
