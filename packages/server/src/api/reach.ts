import { sql, type Expression, type SqlBool } from 'kysely';
import { hasRole } from '../auth/roles.js';
import type { Dialect } from '../db/dialect.js';
import type { Role } from '../db/schema.js';
import { ApiError, invalidField } from '../errors.js';
import type { OrgAccess } from './access.js';

/**
 * The caller's reach (design record 033): its role, and its project allowlist
 * (`OrgAccess.projectScope`, null: every project). One rule, applied by every route that grants
 * access or reads organization-wide data:
 *
 * - a grant (a service token, an invitation, a member's role and allowlist, a webhook
 *   subscription) lies within the granter's own role and allowlist, and so does whatever grant it
 *   changes or removes;
 * - an allowlisted caller reads the organization through its projects only: events of its
 *   projects (never organization-wide ones), grants within its reach, people who share a project;
 * - an allowlisted caller changes nothing that belongs to the organization as a whole;
 * - nobody changes their own role or allowlist.
 */

/** A grant's project allowlist: null is every project (a webhook's empty filter is passed as null). */
type Projects = readonly string[] | null;

/**
 * Whether a grant of `projectIds` lies within the caller's allowlist: for an allowlisted caller,
 * a non-null subset of it.
 */
export function reaches(access: OrgAccess, projectIds: Projects): boolean {
  const scope = access.projectScope;
  if (!scope) return true;
  return projectIds !== null && projectIds.every((id) => scope.includes(id));
}

/**
 * Whether the caller (or a grant it made, such as a webhook subscription) may read what concerns
 * `projectId` (null: the organization as a whole).
 */
export function mayRead(
  access: Pick<OrgAccess, 'projectScope'>,
  projectId: string | null,
): boolean {
  if (!access.projectScope) return true;
  return projectId !== null && access.projectScope.includes(projectId);
}

/** A grant's allowlist as the caller is shown it: the projects outside the caller's are left out. */
export function visibleProjects(access: OrgAccess, projectIds: string[] | null): string[] | null {
  return projectIds && projectIds.filter((id) => mayRead(access, id));
}

/**
 * Checks a new or changed grant against the caller's own role and allowlist.
 * @throws ApiError 400 `validation_failed` on `role` or `projectIds` when the grant exceeds them
 *   (for an allowlisted caller, `projectIds` must name only projects of its own allowlist).
 */
export function checkGrant(access: OrgAccess, grant: { role?: Role; projectIds: Projects }): void {
  if (grant.role && !hasRole(access.role, grant.role))
    throw invalidField('role', `cannot exceed your own role (${access.role})`);
  if (!reaches(access, grant.projectIds))
    throw invalidField(
      'projectIds',
      `must name only projects of your own allowlist (${access.projectScope?.join(', ') ?? ''})`,
    );
}

/**
 * Checks that an existing grant (a member's role and allowlist) lies within the caller's reach,
 * before the caller changes or removes it.
 * @throws ApiError 403 `outside_allowlist` when it does not
 */
export function checkWithinReach(
  access: OrgAccess,
  grant: { role: Role; projectIds: Projects },
  what: string,
): void {
  if (!hasRole(access.role, grant.role) || !reaches(access, grant.projectIds))
    throw new ApiError('outside_allowlist', `${what}'s access reaches beyond yours.`);
}

/**
 * Refuses an allowlisted caller a change to the organization as a whole (its settings, its SSO
 * connections, a new project): the routes registered with `wholeOrganization` (scope.ts).
 * @throws ApiError 403 `outside_allowlist`
 */
export function requireWholeOrg(access: OrgAccess): void {
  if (access.projectScope)
    throw new ApiError(
      'outside_allowlist',
      'This changes the whole organization; a caller limited to some projects cannot.',
    );
}

/**
 * Refuses a change of the caller's own role or allowlist.
 * @throws ApiError 403 `own_access` when `userId` is the calling user
 */
export function checkNotOwnAccess(access: OrgAccess, userId: string): void {
  if (access.caller.type === 'user' && access.caller.id === userId)
    throw new ApiError(
      'own_access',
      'You cannot change your own role or project allowlist; ask another Admin.',
    );
}

/** {@link mayRead} in SQL, for a list query over a column holding one project id (or null). */
export function mayReadInSql(access: OrgAccess, column: string): Expression<SqlBool> {
  const scope = access.projectScope;
  return scope ? sql<SqlBool>`${sql.ref(column)} in (${sql.join(scope)})` : sql<SqlBool>`true`;
}

/** The elements of a JSON array held in a text column, as rows of one column `value`. */
function elements(dialect: Dialect, column: string) {
  return dialect === 'postgres'
    ? sql`jsonb_array_elements_text(${sql.ref(column)}::jsonb) as e(value)`
    : sql`json_each(${sql.ref(column)})`;
}

/**
 * {@link reaches} in SQL, for a list query: the grant in `column` (a JSON array of project ids, or
 * null for every project) lies within the caller's allowlist.
 */
export function reachesInSql(
  dialect: Dialect,
  access: OrgAccess,
  column: string,
): Expression<SqlBool> {
  const scope = access.projectScope;
  if (!scope) return sql<SqlBool>`true`;
  return sql<SqlBool>`(${sql.ref(column)} is not null and not exists (select 1 from ${elements(dialect, column)} where value not in (${sql.join(scope)})))`;
}

/**
 * The list and revoke routes of an organization's credentials (service tokens, relay keys): the
 * rows of the caller's organization, not revoked, whose `project_scope` it reaches.
 */
export function activeCredentialsInSql(dialect: Dialect, access: OrgAccess): Expression<SqlBool> {
  return sql<SqlBool>`(${sql.ref('organization_id')} = ${access.org.id} and ${sql.ref('revoked_at')} is null and ${reachesInSql(dialect, access, 'project_scope')})`;
}

/**
 * For a list query: the grant in `column` (a JSON array of project ids, or null for every
 * project) shares a project with the caller: the members an allowlisted caller sees (people who
 * work on one of its projects, or on all of them).
 */
export function sharesProjectsInSql(
  dialect: Dialect,
  access: OrgAccess,
  column: string,
): Expression<SqlBool> {
  const scope = access.projectScope;
  if (!scope) return sql<SqlBool>`true`;
  return sql<SqlBool>`(${sql.ref(column)} is null or exists (select 1 from ${elements(dialect, column)} where value in (${sql.join(scope)})))`;
}
