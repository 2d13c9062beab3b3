import type { Kysely, Selectable, Transaction } from 'kysely';
import type { EnvironmentsTable, FlagsTable, ProjectsTable, Schema } from '../db/schema.js';
import type { KeyedRef } from '../events/types.js';
import type { Services } from '../services.js';
import { isUuid, notFound, type OrgAccess } from './access.js';

// The path's `{flag}` and `{env}`, resolved once for every route by `scopedRoutes` (scope.ts), as
// `{org}` and `{project}` are in access.ts.

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

/**
 * Resolves `{env}` (key or id) inside a project.
 * @throws ApiError 404 with near keys in `did_you_mean`.
 */
export async function requireEnvironment(
  services: Services,
  access: OrgAccess,
  project: ProjectsTable,
  envRef: string,
): Promise<Selectable<EnvironmentsTable>> {
  const environment = await services.db
    .selectFrom('environments')
    .selectAll()
    .where('project_id', '=', project.id)
    .where(isUuid(envRef) ? 'id' : 'key', '=', envRef)
    .executeTakeFirst();
  if (environment) return environment;
  const keys = await services.db
    .selectFrom('environments')
    .select('key')
    .where('project_id', '=', project.id)
    .execute();
  throw notFound(
    'Environment',
    envRef,
    keys.map((row) => row.key),
    { method: 'GET', path: `/api/v1/orgs/${access.org.slug}/projects/${project.key}/environments` },
  );
}

/**
 * A flag in one environment, as the writes and events of what runs there (a release plan, an
 * experiment) name it.
 */
export interface FlagEnvironmentTarget {
  organizationId: string;
  project: KeyedRef;
  environment: KeyedRef;
  flag: KeyedRef & { project_id: string };
}

/** The {@link FlagEnvironmentTarget} of a resolved path's flag and environment. */
export function flagEnvironmentTarget(scope: {
  org: { id: string };
  project: KeyedRef;
  environment: KeyedRef;
  flag: KeyedRef & { project_id: string };
}): FlagEnvironmentTarget {
  return {
    organizationId: scope.org.id,
    project: { id: scope.project.id, key: scope.project.key },
    environment: { id: scope.environment.id, key: scope.environment.key },
    flag: { id: scope.flag.id, key: scope.flag.key, project_id: scope.flag.project_id },
  };
}

/** Looks up the {@link FlagEnvironmentTarget} of a row naming a flag and an environment. */
export async function readFlagEnvironmentTarget(
  db: Kysely<Schema> | Transaction<Schema>,
  row: { flag_id: string; environment_id: string },
): Promise<FlagEnvironmentTarget> {
  const found = await db
    .selectFrom('flags')
    .innerJoin('projects', 'projects.id', 'flags.project_id')
    .innerJoin('environments', 'environments.project_id', 'projects.id')
    .select([
      'projects.organization_id',
      'projects.id as projectId',
      'projects.key as projectKey',
      'environments.id as environmentId',
      'environments.key as environmentKey',
      'flags.id as flagId',
      'flags.key as flagKey',
    ])
    .where('flags.id', '=', row.flag_id)
    .where('environments.id', '=', row.environment_id)
    .executeTakeFirstOrThrow();
  return {
    organizationId: found.organization_id,
    project: { id: found.projectId, key: found.projectKey },
    environment: { id: found.environmentId, key: found.environmentKey },
    flag: { id: found.flagId, key: found.flagKey, project_id: found.projectId },
  };
}
