import type { FlagMetadata } from '@vexil/engine';
import type { Selectable } from 'kysely';
import type {
  FlagEnvironmentsTable,
  FlagsTable,
  ProjectsTable,
  Role,
  VariationsTable,
} from '../../db/schema.js';
import type { Services } from '../../services.js';
import { invalidField } from '../../http/errors.js';
import { isUuid, notFound, type OrgAccess } from '../access.js';
import { actionsFor } from '../actions.js';

export type FlagRow = Selectable<FlagsTable>;

/**
 * Resolves `{flag}` (key or id) inside a project, archived flags included.
 * @throws ApiError 404 with near keys in `did_you_mean`.
 */
export async function requireFlag(
  services: Services,
  access: OrgAccess,
  project: ProjectsTable,
  flagRef: string,
): Promise<FlagRow> {
  const flag = await services.db
    .selectFrom('flags')
    .selectAll()
    .where('project_id', '=', project.id)
    .where(isUuid(flagRef) ? 'id' : 'key', '=', flagRef)
    .executeTakeFirst();
  if (flag) return flag;
  const keys = await services.db
    .selectFrom('flags')
    .select('key')
    .where('project_id', '=', project.id)
    .execute();
  throw notFound(
    'Flag',
    flagRef,
    keys.map((row) => row.key),
    { method: 'GET', path: `/api/v1/orgs/${access.org.slug}/projects/${project.key}/flags` },
  );
}

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
  const sorted: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(metadata).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (typeof value === 'number' && !Number.isFinite(value))
      throw invalidField(`metadata.${key}`, 'must be a finite number');
    sorted[key] = value;
  }
  return JSON.stringify(sorted);
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
