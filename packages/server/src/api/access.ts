import type { FastifyRequest } from 'fastify';
import { closest, distance } from 'fastest-levenshtein';
import type { Caller } from '../auth/caller.js';
import { hasRole } from '../auth/roles.js';
import { mutate, type Mutation } from '../db/mutate.js';
import type { OrganizationsTable, ProjectsTable, Role } from '../db/schema.js';
import type { Actor } from '../events/types.js';
import { ApiError, invalidField } from '../errors.js';
import type { Services } from '../services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a path segment is a uuid (then it names an id; otherwise a key or slug). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** The caller's standing in one organization, established by {@link requireOrg}. */
export interface OrgAccess {
  caller: Caller;
  org: OrganizationsTable;
  role: Role;
  /** Project ids the caller may reach (a service token's or a member's allowlist); null: all. */
  projectScope: string[] | null;
}

/** The authenticated caller of a management request (set by the authentication hook). */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new ApiError('unauthorized', 'Authentication required.');
  return request.caller;
}

/**
 * Resolves `{org}` (slug or id) for the caller and checks the role.
 * @throws ApiError 404 when the org does not exist or the caller is not in it (never revealing
 *   which), 403 `sso_required` when the org requires SSO and the credential did not come through
 *   it, 403 `forbidden` when the role is below `minimum`.
 */
export async function requireOrg(
  services: Services,
  request: FastifyRequest,
  orgRef: string,
  minimum: Role = 'Viewer',
): Promise<OrgAccess> {
  const caller = callerOf(request);
  const org = await services.db
    .selectFrom('organizations')
    .selectAll()
    .where(isUuid(orgRef) ? 'id' : 'slug', '=', orgRef)
    .executeTakeFirst();
  let role: Role | undefined;
  let projectScope: string[] | null = null;
  if (org && caller.type === 'service_token') {
    role = caller.organizationId === org.id ? caller.role : undefined;
    projectScope = caller.projectScope;
  } else if (org && caller.type === 'user' && (caller.ssoOrganizationId ?? org.id) === org.id) {
    // A credential that came through an SSO connection counts in that connection's org only:
    // elsewhere it is not a member, so 404 (design record 032).
    const membership = await services.db
      .selectFrom('memberships')
      .select(['role', 'project_ids'])
      .where('organization_id', '=', org.id)
      .where('user_id', '=', caller.id)
      .executeTakeFirst();
    role = membership?.role;
    projectScope = membership?.project_ids
      ? (JSON.parse(membership.project_ids) as string[])
      : null;
  }
  if (!org || !role) {
    throw new ApiError('not_found', `Organization "${orgRef}" was not found.`, {
      nextActions: [{ method: 'GET', path: '/api/v1/orgs' }],
    });
  }
  // Owners and service tokens are the break-glass path: an org can never lock itself out.
  if (
    org.sso_required === 1 &&
    caller.type === 'user' &&
    role !== 'Owner' &&
    caller.ssoConnectionId !== org.sso_connection_id
  ) {
    throw new ApiError('sso_required', 'This organization requires single sign-on.', {
      connectionId: org.sso_connection_id ?? undefined,
    });
  }
  if (!hasRole(role, minimum)) {
    throw new ApiError('forbidden', `This operation needs the ${minimum} role; you are ${role}.`);
  }
  return { caller, org, role, projectScope };
}

/** Whether the caller's project allowlist (a service token's or a member's) admits the project. */
export function projectInScope(access: OrgAccess, projectId: string): boolean {
  return !access.projectScope || access.projectScope.includes(projectId);
}

/**
 * Resolves `{project}` (key or id) inside the org.
 * @throws ApiError 404 (with near keys in `did_you_mean`) when absent or outside the token's scope.
 */
export async function requireProject(
  services: Services,
  access: OrgAccess,
  projectRef: string,
): Promise<ProjectsTable> {
  const project = await services.db
    .selectFrom('projects')
    .selectAll()
    .where('organization_id', '=', access.org.id)
    .where(isUuid(projectRef) ? 'id' : 'key', '=', projectRef)
    .executeTakeFirst();
  if (project && projectInScope(access, project.id)) return project;
  const keys = await services.db
    .selectFrom('projects')
    .select(['id', 'key'])
    .where('organization_id', '=', access.org.id)
    .execute();
  throw notFound(
    'Project',
    projectRef,
    keys.filter((row) => projectInScope(access, row.id)).map((row) => row.key),
    { method: 'GET', path: `/api/v1/orgs/${access.org.slug}/projects` },
  );
}

/**
 * Checks that every id names a project of the organization.
 * @throws ApiError `validation_failed` on `field`, listing the unknown ids.
 */
export async function checkProjectIds(
  services: Services,
  access: OrgAccess,
  projectIds: readonly string[],
  field = 'projectIds',
): Promise<void> {
  if (projectIds.length === 0) return;
  const found = await services.db
    .selectFrom('projects')
    .select('id')
    .where('organization_id', '=', access.org.id)
    .where('id', 'in', [...projectIds])
    .execute();
  const known = new Set(found.map((row) => row.id));
  const unknown = projectIds.filter((id) => !known.has(id));
  if (unknown.length > 0) throw invalidField(field, `unknown project ids: ${unknown.join(', ')}`);
}

/** A 404 with near matches among `candidates` and a follow-up request to list them. */
export function notFound(
  kind: string,
  ref: string,
  candidates: string[],
  listAction?: { method: string; path: string },
): ApiError {
  const near = candidates
    .filter(
      (candidate) =>
        distance(candidate.toLowerCase(), ref.toLowerCase()) <= Math.max(2, ref.length / 4),
    )
    .sort((a, b) => distance(a, ref) - distance(b, ref))
    .slice(0, 5);
  if (near.length === 0 && candidates.length > 0 && ref.length > 3) {
    const best = closest(ref, candidates);
    if (best.includes(ref) || ref.includes(best)) near.push(best);
  }
  return new ApiError('not_found', `${kind} "${ref}" was not found.`, {
    ...(near.length > 0 ? { didYouMean: near } : {}),
    ...(listAction ? { nextActions: [listAction] } : {}),
  });
}

/** The actor recorded on events: a user, or a service token by its own id and name. */
export function actorOf(caller: Caller): Actor {
  return caller.type === 'user'
    ? { userId: caller.id, email: caller.email, name: caller.name }
    : { userId: caller.id, email: null, name: caller.name };
}

/** Runs a mutation as the caller, in their organization (see {@link mutate}). */
export function mutateAs<T>(
  services: Services,
  access: OrgAccess,
  work: (mutation: Mutation) => Promise<T>,
): Promise<T> {
  return mutate(
    services.db,
    {
      organizationId: access.org.id,
      actor: actorOf(access.caller),
      now: services.clock.now(),
      events: services.events,
    },
    work,
  );
}
