import type { Kysely } from 'kysely';
import { hashSecret, isRelayKey, secretMatches } from '../auth/secrets.js';
import type { Schema } from '../db/schema.js';
import { ProblemError } from '../evaluation/problem.js';

/** What a relay key grants (design record 045): the environments it covers, nothing else. */
export interface RelayKeyGrant {
  id: string;
  organizationId: string;
  /** Covered projects; null: every project of the organization. */
  projectIds: readonly string[] | null;
  /** Covered environment keys within them; null: every environment. */
  environmentKeys: readonly string[] | null;
}

/** An environment a relay key may cover, as {@link covers} needs it. */
export interface ScopedEnvironment {
  id: string;
  projectId: string;
  key: string;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function unauthorized(detail: string): ProblemError {
  return new ProblemError(401, 'Unauthorized', detail);
}

/**
 * The grant of the relay key in an `Authorization: Bearer vxr_…` header.
 * @throws ProblemError 401 for a missing, malformed, unknown or revoked relay key
 */
export async function authenticateRelayKey(
  db: Kysely<Schema>,
  header: string | undefined,
): Promise<RelayKeyGrant> {
  const key = header === undefined ? undefined : BEARER.exec(header)?.[1];
  if (!key) throw unauthorized('Send a relay key (vxr_…) in the Authorization header.');
  if (!isRelayKey(key)) throw unauthorized('The relay routes take a relay key (vxr_…).');
  const row = await db
    .selectFrom('relay_keys')
    .select(['id', 'organization_id', 'key_hash', 'project_scope', 'environment_keys'])
    .where('key_hash', '=', hashSecret(key))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row || !secretMatches(key, row.key_hash))
    throw unauthorized('The relay key is not valid or has been revoked.');
  return {
    id: row.id,
    organizationId: row.organization_id,
    projectIds: row.project_scope === null ? null : (JSON.parse(row.project_scope) as string[]),
    environmentKeys:
      row.environment_keys === null ? null : (JSON.parse(row.environment_keys) as string[]),
  };
}

/** Whether the relay key (by id) is still active: open feeds re-check it as a safety net. */
export async function relayKeyActive(db: Kysely<Schema>, relayKeyId: string): Promise<boolean> {
  const row = await db
    .selectFrom('relay_keys')
    .select('id')
    .where('id', '=', relayKeyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether the grant covers an environment of its organization. */
export function covers(grant: RelayKeyGrant, environment: ScopedEnvironment): boolean {
  return (
    (grant.projectIds === null || grant.projectIds.includes(environment.projectId)) &&
    (grant.environmentKeys === null || grant.environmentKeys.includes(environment.key))
  );
}

/** The environments the grant covers now, by id. */
export async function coveredEnvironments(
  db: Kysely<Schema>,
  grant: RelayKeyGrant,
): Promise<Set<string>> {
  let query = db
    .selectFrom('environments')
    .innerJoin('projects', 'projects.id', 'environments.project_id')
    .select(['environments.id', 'environments.project_id as projectId', 'environments.key'])
    .where('projects.organization_id', '=', grant.organizationId);
  if (grant.projectIds !== null) {
    if (grant.projectIds.length === 0) return new Set();
    query = query.where('environments.project_id', 'in', [...grant.projectIds]);
  }
  if (grant.environmentKeys !== null) {
    if (grant.environmentKeys.length === 0) return new Set();
    query = query.where('environments.key', 'in', [...grant.environmentKeys]);
  }
  return new Set((await query.execute()).map((row) => row.id));
}

/** Whether the grant covers the environment with this id (false when it does not exist). */
export async function coversEnvironment(
  db: Kysely<Schema>,
  grant: RelayKeyGrant,
  environmentId: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('environments')
    .innerJoin('projects', 'projects.id', 'environments.project_id')
    .select(['environments.id', 'environments.project_id as projectId', 'environments.key'])
    .where('environments.id', '=', environmentId)
    .where('projects.organization_id', '=', grant.organizationId)
    .executeTakeFirst();
  return row !== undefined && covers(grant, row);
}

/** The 403 for environments a relay key does not cover (the feed, the intake, on every node). */
export function outsideScope(environmentIds: readonly string[]): ProblemError {
  return new ProblemError(
    403,
    'Forbidden',
    `The relay key does not cover environment ${environmentIds.join(', ')}.`,
    { environmentIds },
  );
}
