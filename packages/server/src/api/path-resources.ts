import type { Selectable } from 'kysely';
import type { EnvironmentsTable, FlagsTable, ProjectsTable } from '../db/schema.js';
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
