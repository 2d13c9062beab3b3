import { randomBytes } from 'node:crypto';
import type { FlagMetadata } from '@vexil/engine';
import type { Selectable } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Mutation, WriteKind } from '../../db/mutate.js';
import type { FlagEnvironmentsTable, FlagsTable, Role, VariationsTable } from '../../db/schema.js';
import { conflictOn } from '../../db/unique.js';
import {
  diffProperties,
  type KeyedRef,
  type NewEvent,
  type PropertyChange,
} from '../../events/types.js';
import type { Services } from '../../services.js';
import { invalidField } from '../../errors.js';
import type { FlagRow } from '../../api/path-resources.js';
import { actionsFor } from '../../api/actions.js';
import { initialConfiguration } from './configuration.js';
import { changesFallthroughOrState, pauseActivePlan } from '../release-plans/queries.js';
import { refuseWhileExperimentRuns } from '../experiments/queries.js';

/** A flag's configuration in one environment (every flag has one in every environment). */
export function readFlagEnvironment(
  services: Services,
  flagId: string,
  environmentId: string,
): Promise<Selectable<FlagEnvironmentsTable>> {
  return services.db
    .selectFrom('flag_environments')
    .selectAll()
    .where('flag_id', '=', flagId)
    .where('environment_id', '=', environmentId)
    .executeTakeFirstOrThrow();
}

/**
 * Flag metadata as stored: checked for what the request schema (`FlagMetadataSchema`) cannot
 * express, finite numbers (JSON such as `1e999` parses to Infinity), and written with its keys
 * sorted, so that the same metadata is always the same text (events diff it, SDKs receive it).
 * @throws ApiError 400 `validation_failed` naming `metadata.<key>`
 */
export function storedMetadata(metadata: FlagMetadata): string {
  const sorted = Object.entries(metadata).sort(([a], [b]) => (a < b ? -1 : 1));
  for (const [key, value] of sorted)
    if (typeof value === 'number' && !Number.isFinite(value))
      throw invalidField(`metadata.${key}`, 'must be a finite number');
  // fromEntries defines own members: a key `__proto__` (a YAML document can hold one) stays a key.
  return JSON.stringify(Object.fromEntries(sorted));
}

/** The flag's stored metadata (`{}` when it has none). */
export function flagMetadata(row: Pick<FlagRow, 'metadata'>): FlagMetadata {
  return JSON.parse(row.metadata) as FlagMetadata;
}

export function variationItem(row: Selectable<VariationsTable>) {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    value: row.value,
    description: row.description,
  };
}

/**
 * The instant against which expiry is judged, or null when the flag-expiration feature is off
 * (`VEXIL_FLAG_EXPIRATION_ENABLED=false`). Expiry only surfaces to users; it never changes
 * evaluation.
 */
export function expiryReference(services: Services): Date | null {
  return services.config.flagExpirationEnabled ? services.clock.now() : null;
}

/** Whether the flag's `expiresAtUtc` has passed at `reference` (never, when reference is null). */
function isExpired(row: FlagRow, reference: Date | null): boolean {
  return reference !== null && row.expires_at !== null && new Date(row.expires_at) <= reference;
}

/** The flag list item; `expiryAt` comes from {@link expiryReference}. */
export function flagListItem(row: FlagRow, expiryAt: Date | null) {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    type: row.type,
    isArchived: row.is_archived === 1,
    clientSideVisible: row.client_side_visible === 1,
    tags: JSON.parse(row.tags) as string[],
    isPermanent: row.is_permanent === 1,
    expiresAtUtc: row.expires_at,
    isExpired: isExpired(row, expiryAt),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function flagActions(role: Role, flag: FlagRow) {
  const archived = flag.is_archived === 1;
  return actionsFor(role, {
    update: { role: 'Member' },
    delete: { role: 'Admin' },
    archive: { role: 'Member', blockedBy: archived ? 'the flag is already archived' : null },
    restore: { role: 'Member', blockedBy: archived ? null : 'the flag is not archived' },
    toggle: { role: 'Member', blockedBy: archived ? 'the flag is archived' : null },
    createVariation: { role: 'Member' },
    removeExpiry: { role: 'Member', blockedBy: flag.expires_at ? null : 'the flag has no expiry' },
  });
}

/** The flag detail response (spec: `PublicFlagResponse`), read fresh from the database. */
export async function flagDetail(services: Services, role: Role, flag: FlagRow) {
  const [variations, owner] = await Promise.all([
    services.db
      .selectFrom('variations')
      .selectAll()
      .where('flag_id', '=', flag.id)
      .orderBy('sort_order')
      .execute(),
    flag.owner_user_id
      ? services.db
          .selectFrom('users')
          .select(['id', 'email', 'name'])
          .where('id', '=', flag.owner_user_id)
          .executeTakeFirst()
      : undefined,
  ]);
  const {
    id,
    key,
    name,
    type,
    isArchived,
    clientSideVisible,
    tags,
    isPermanent,
    expiresAtUtc,
    isExpired,
    createdAt,
    updatedAt,
  } = flagListItem(flag, expiryReference(services));
  return {
    id,
    key,
    name,
    description: flag.description,
    type,
    isArchived,
    clientSideVisible,
    tags,
    metadata: flagMetadata(flag),
    variations: variations.map(variationItem),
    variationsRevision: flag.variations_revision,
    createdAt,
    updatedAt,
    expiresAtUtc,
    isExpired,
    owner: owner ? { id: owner.id, email: owner.email, name: owner.name } : null,
    removalPrUrl: flag.removal_pr_url,
    isPermanent,
    _actions: flagActions(role, flag),
  };
}

/**
 * The flag a write to its variations or configuration names in its events and touches; the
 * writer is also given the flag's project, whose key the events carry (design record 026).
 */
type FlagRef = Pick<FlagRow, 'id' | 'key'>;

/** A variation as a create or an update writes it. */
export interface VariationInput {
  key: string;
  name: string | null;
  value: string;
  description: string | null;
  sortOrder: number;
}

function variationRow(flagId: string, input: VariationInput, now: string): VariationsTable {
  return {
    id: uuid(),
    flag_id: flagId,
    key: input.key,
    name: input.name,
    value: input.value,
    description: input.description,
    sort_order: input.sortOrder,
    created_at: now,
  };
}

/**
 * What every write to a flag ends with: the flag touched (in `event.environment` only, when the
 * event names one) and `event` emitted about it, with its project and the flag as its entity.
 */
async function flagChanged(
  m: Mutation,
  project: KeyedRef,
  flag: FlagRef,
  event: Omit<NewEvent, 'project' | 'entity'>,
  write: WriteKind = 'serves',
): Promise<void> {
  const { bypassedChangeRequest } = await m.touchFlag(
    { id: flag.id, project_id: project.id },
    event.environment ? [event.environment.id] : undefined,
    write,
  );
  await m.emit({
    ...event,
    project,
    entity: { type: 'flag', id: flag.id, key: flag.key },
    ...(bypassedChangeRequest ? { bypassedChangeRequest } : {}),
  });
}

/**
 * Inserts a variation of the flag, touches the flag and emits `flag.variation.created`.
 * @throws ApiError 409 `EXPERIMENT_RUNNING` while an experiment runs on the flag
 */
export async function insertVariation(
  m: Mutation,
  project: KeyedRef,
  flag: FlagRef,
  input: VariationInput,
): Promise<VariationsTable> {
  await refuseWhileExperimentRuns(m.trx, flag, null, 'its variations');
  const row = variationRow(flag.id, input, m.now);
  await m.trx
    .insertInto('variations')
    .values(row)
    .execute()
    .catch(conflictOn('key', input.key, 'variation'));
  await flagChanged(m, project, flag, {
    type: 'flag.variation.created',
    child: { type: 'variation', id: row.id },
    description: `Variation "${input.key}" added to flag "${flag.key}"`,
  });
  return row;
}

/**
 * Updates the members of a variation named in `values`, touches the flag and emits
 * `flag.variation.updated` with `changes` (the caller's description of the change). Returns the
 * variation as stored.
 * @throws ApiError 409 `EXPERIMENT_RUNNING` for a new value while an experiment runs on the flag
 */
export async function updateVariation(
  m: Mutation,
  project: KeyedRef,
  flag: FlagRef,
  variation: Pick<VariationsTable, 'id' | 'key'>,
  values: Partial<Pick<VariationsTable, 'name' | 'value' | 'description' | 'sort_order'>>,
  changes: PropertyChange[],
): Promise<Selectable<VariationsTable>> {
  // Names, descriptions and order describe a variation; only its value changes what is served.
  const write = changes.some((change) => change.property === 'Value') ? 'serves' : 'describes';
  if (write === 'serves') await refuseWhileExperimentRuns(m.trx, flag, null, 'its variations');
  const updated = await m.trx
    .updateTable('variations')
    .set(values)
    .where('id', '=', variation.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await flagChanged(
    m,
    project,
    flag,
    {
      type: 'flag.variation.updated',
      child: { type: 'variation', id: variation.id },
      changes,
      description: `Variation "${variation.key}" of flag "${flag.key}" updated`,
    },
    write,
  );
  return updated;
}

/**
 * Deletes a variation, touches the flag and emits `flag.variation.deleted`.
 * @throws ApiError 409 `EXPERIMENT_RUNNING` while an experiment runs on the flag
 */
export async function deleteVariation(
  m: Mutation,
  project: KeyedRef,
  flag: FlagRef,
  variation: Pick<VariationsTable, 'id' | 'key'>,
): Promise<void> {
  await refuseWhileExperimentRuns(m.trx, flag, null, 'its variations');
  await m.trx.deleteFrom('variations').where('id', '=', variation.id).execute();
  await flagChanged(m, project, flag, {
    type: 'flag.variation.deleted',
    child: { type: 'variation', id: variation.id },
    description: `Variation "${variation.key}" removed from flag "${flag.key}"`,
  });
}

/**
 * A new flag's own columns: its project is the one {@link insertFlag} is given, its id, version
 * and timestamps are the insert's, its salt random unless given.
 */
export type NewFlag = Omit<
  FlagsTable,
  'id' | 'project_id' | 'salt' | 'version' | 'variations_revision' | 'created_at' | 'updated_at'
> & {
  salt?: string | undefined;
};

/**
 * Inserts a flag with its variations (in the order given) and its initial configuration in every
 * environment of its project, serving the first variation when on and `offVariationKey` when
 * off; touches those environments and emits `flag.created`.
 * @throws ApiError 409 `conflict` on `key` when the project has a flag of that key.
 */
export async function insertFlag(
  m: Mutation,
  project: KeyedRef,
  flag: NewFlag,
  variations: readonly Omit<VariationInput, 'sortOrder'>[],
  offVariationKey: string,
): Promise<{
  row: FlagsTable;
  variations: VariationsTable[];
  configurations: FlagEnvironmentsTable[];
}> {
  const row: FlagsTable = {
    ...flag,
    id: uuid(),
    project_id: project.id,
    salt: flag.salt ?? randomBytes(8).toString('hex'),
    version: 1,
    variations_revision: 1,
    created_at: m.now,
    updated_at: m.now,
  };
  // A flag created meanwhile by another request is a 409, not a 500.
  await m.trx
    .insertInto('flags')
    .values(row)
    .execute()
    .catch(conflictOn('key', row.key, 'flag'));
  const variationRows = variations.map((variation, sortOrder) =>
    variationRow(row.id, { ...variation, sortOrder }, m.now),
  );
  await m.trx.insertInto('variations').values(variationRows).execute();
  const environments = await m.trx
    .selectFrom('environments')
    .select('id')
    .where('project_id', '=', project.id)
    .execute();
  const [defaultVariation] = variationRows;
  const offVariation = variationRows.find((variation) => variation.key === offVariationKey);
  // Callers check both first: there is at least one variation, and the off variation's key is one
  // of them.
  if (!defaultVariation || !offVariation) throw new Error('flag create: variations unchecked');
  const configurations = environments.map((environment) =>
    initialConfiguration(row.id, environment.id, defaultVariation.id, offVariation.id, m.now),
  );
  if (configurations.length > 0)
    await m.trx.insertInto('flag_environments').values(configurations).execute();
  await m.touchEnvironments(
    environments.map((environment) => environment.id),
    'describes',
  );
  await m.emit({
    type: 'flag.created',
    project,
    entity: { type: 'flag', id: row.id, key: row.key },
    description: `Flag "${row.key}" created`,
    children: variationRows.map((variation) => ({ type: 'variation', id: variation.id })),
  });
  return { row, variations: variationRows, configurations };
}

/**
 * Updates the flag's members named in `values` and returns the flag as stored. The caller emits
 * `flag.updated` with its description of the change, and touches the flag when the change
 * reaches SDKs.
 */
export function updateFlag(
  m: Mutation,
  flagId: string,
  values: Partial<
    Omit<FlagsTable, 'id' | 'project_id' | 'key' | 'type' | 'version' | 'created_at' | 'updated_at'>
  >,
): Promise<FlagRow> {
  return m.trx
    .updateTable('flags')
    .set({ ...values, updated_at: m.now })
    .where('id', '=', flagId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Archives or restores a flag: archived flags leave every environment's SDK configuration and
 * client evaluations (their keys stay reserved). Touches the flag and emits `flag.archived` or
 * `flag.restored`, its description ending with `note`.
 */
export async function setFlagArchived(
  m: Mutation,
  project: KeyedRef,
  flag: FlagRef,
  archived: boolean,
  note = '',
): Promise<void> {
  await m.trx
    .updateTable('flags')
    .set({ is_archived: archived ? 1 : 0, updated_at: m.now })
    .where('id', '=', flag.id)
    .execute();
  await flagChanged(
    m,
    project,
    flag,
    {
      type: archived ? 'flag.archived' : 'flag.restored',
      changes: [{ property: 'IsArchived', from: String(!archived), to: String(archived) }],
      description: `Flag "${flag.key}" ${archived ? 'archived' : 'restored'}${note}`,
    },
    'describes',
  );
}

/**
 * Who writes a flag's configuration: a person (directly or through a tool), a release plan, or
 * an experiment starting or stopping.
 */
export type ConfigurationWriter = 'person' | 'releasePlan' | 'experiment';

/**
 * Updates the members of the flag's configuration in the environment named in `values` and
 * returns the configuration as stored. The caller touches the flag in the environment and emits
 * the event with its description of the change. A person's change to the fallthrough or on/off
 * pauses the active release plan there (spec: change requests, section 4); a plan's own steps
 * pass `by: 'releasePlan'`. A person's change to the fallthrough is refused while an experiment
 * runs there (contract `experiments.md`, section 2); its start and stop pass `by: 'experiment'`.
 * @throws ApiError 409 `EXPERIMENT_RUNNING`
 */
export async function updateFlagConfiguration(
  m: Mutation,
  flagId: string,
  environmentId: string,
  values: Partial<Omit<FlagEnvironmentsTable, 'flag_id' | 'environment_id' | 'updated_at'>>,
  by: ConfigurationWriter = 'person',
): Promise<Selectable<FlagEnvironmentsTable>> {
  const before =
    by === 'person'
      ? await m.trx
          .selectFrom('flag_environments')
          .select(['strategy', 'default_variation_id', 'rollout', 'is_enabled'])
          .where('flag_id', '=', flagId)
          .where('environment_id', '=', environmentId)
          .executeTakeFirst()
      : undefined;
  const row = await m.trx
    .updateTable('flag_environments')
    .set({ ...values, updated_at: m.now })
    .where('flag_id', '=', flagId)
    .where('environment_id', '=', environmentId)
    .returningAll()
    .executeTakeFirstOrThrow();
  if (before && changesFallthrough(before, row)) {
    const flag = await m.trx
      .selectFrom('flags')
      .select(['id', 'key'])
      .where('id', '=', flagId)
      .executeTakeFirstOrThrow();
    await refuseWhileExperimentRuns(m.trx, flag, environmentId, 'its fallthrough');
  }
  if (before && changesFallthroughOrState(before, row))
    await pauseActivePlan(
      m,
      flagId,
      environmentId,
      before.is_enabled !== row.is_enabled
        ? `the flag was turned ${row.is_enabled ? 'on' : 'off'} directly`
        : 'the fallthrough was changed directly',
    );
  return row;
}

/** A flag's configuration in one environment in the API's names (spec: Flag environment configuration). */
export function configurationFields(
  row: Selectable<FlagEnvironmentsTable>,
  environmentKey: string,
) {
  return {
    environmentId: row.environment_id,
    environmentKey,
    isEnabled: row.is_enabled === 1,
    defaultVariationId: row.default_variation_id,
    offVariationId: row.off_variation_id,
    strategy: row.strategy,
    rollout: JSON.parse(row.rollout) as { variationId: string; weight: number }[],
    prerequisites: JSON.parse(row.prerequisites) as {
      prerequisiteFlagKey: string;
      expectedVariationKey: string;
    }[],
  };
}

const WRITTEN_BY: Record<ConfigurationWriter, string> = {
  person: '',
  releasePlan: ' by its release plan',
  experiment: ' by its experiment',
};

/** Whether the fallthrough (strategy, default variation, rollout and its salt) differs. */
function changesFallthrough(
  before: Pick<Selectable<FlagEnvironmentsTable>, 'strategy' | 'default_variation_id' | 'rollout'>,
  after: Pick<Selectable<FlagEnvironmentsTable>, 'strategy' | 'default_variation_id' | 'rollout'>,
): boolean {
  return (
    before.strategy !== after.strategy ||
    before.default_variation_id !== after.default_variation_id ||
    before.rollout !== after.rollout
  );
}

/**
 * The one write of a flag's configuration in an environment that SDKs see as
 * `flag.environment_config.updated`: touches the flag there (before reading, so concurrent
 * writes to the flag queue), updates the members in `values`, and emits the event with the
 * changed properties. A direct change (`PATCH …/environments/{env}`) and a release plan's steps
 * and rollback go through it alike, so SDKs, streams and webhooks see the same events.
 * @returns the configuration as stored
 */
export async function writeFlagConfiguration(
  m: Mutation,
  target: { project: KeyedRef; flag: FlagRef & { project_id: string }; environment: KeyedRef },
  values: Partial<Omit<FlagEnvironmentsTable, 'flag_id' | 'environment_id' | 'updated_at'>>,
  by: ConfigurationWriter = 'person',
): Promise<Selectable<FlagEnvironmentsTable>> {
  const { project, flag, environment } = target;
  await m.touchFlag(flag, [environment.id], by === 'releasePlan' ? 'releasePlan' : 'serves');
  const before = await m.trx
    .selectFrom('flag_environments')
    .selectAll()
    .where('flag_id', '=', flag.id)
    .where('environment_id', '=', environment.id)
    .executeTakeFirstOrThrow();
  const row = await updateFlagConfiguration(m, flag.id, environment.id, values, by);
  await m.emit({
    type: 'flag.environment_config.updated',
    project,
    environment,
    entity: { type: 'flag', id: flag.id, key: flag.key },
    child: { type: 'flag_environment_config', id: environment.id },
    changes: diffProperties(
      configurationFields(before, environment.key),
      configurationFields(row, environment.key),
    ),
    description: `Configuration of flag "${flag.key}" in "${environment.key}" updated${WRITTEN_BY[by]}`,
  });
  return row;
}

/**
 * Turns the flag on or off in the environment, touches it there and emits `flag.toggled`. When it
 * is already so, nothing is written, touched or emitted: a toggle to the current state records
 * nothing (decided in the update itself, so a concurrent toggle cannot slip between).
 * @param change.emergencyOff the caller (a Member or higher, directly) may turn the flag off
 *   past a change-request policy that allows it; the event then says so (design record 042)
 * @throws ApiError 409 `change_request_required` in an environment that requires change requests
 */
export async function setFlagEnabled(
  m: Mutation,
  project: KeyedRef,
  flag: FlagRef,
  environment: KeyedRef,
  change: { from: boolean; to: boolean; emergencyOff?: boolean },
): Promise<void> {
  const enabled = change.to ? 1 : 0;
  const { numUpdatedRows } = await m.trx
    .updateTable('flag_environments')
    .set({ is_enabled: enabled, updated_at: m.now })
    .where('flag_id', '=', flag.id)
    .where('environment_id', '=', environment.id)
    .where('is_enabled', '!=', enabled)
    .executeTakeFirst();
  if (numUpdatedRows === 0n) return;
  await flagChanged(
    m,
    project,
    flag,
    {
      type: 'flag.toggled',
      environment,
      child: { type: 'flag_environment_config', id: environment.id },
      changes: [{ property: 'IsEnabled', from: String(change.from), to: String(change.to) }],
      description: `Flag "${flag.key}" turned ${change.to ? 'on' : 'off'} in "${environment.key}"`,
    },
    change.emergencyOff && !change.to ? 'emergencyOff' : 'serves',
  );
  await pauseActivePlan(
    m,
    flag.id,
    environment.id,
    `the flag was turned ${change.to ? 'on' : 'off'} directly`,
  );
}
