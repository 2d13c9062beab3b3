import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  HTTPMethods,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from 'fastify';
import type { Selectable } from 'kysely';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller, UserCaller } from '../auth/caller.js';
import type { EnvironmentsTable, ProjectsTable, Role } from '../db/schema.js';
import type { App } from '../http/app-instance.js';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import { callerOf, requireOrg, requireProject, type OrgAccess } from './access.js';
import { requireWholeOrg } from './reach.js';
import { requireEnvironment, requireFlag, type FlagRow } from './path-resources.js';

/** A route without `{org}`: any valid credential, or (`user`) a personal token only. */
export type CallerAccess = 'authenticated' | 'user';

/** The path parameters a scope is resolved from; each present one narrows it. */
interface ScopeParams {
  org?: string;
  project?: string;
  flag?: string;
  env?: string;
}

export interface CallerScope<C extends Caller = Caller> {
  caller: C;
}
export interface ProjectScope extends OrgAccess {
  project: ProjectsTable;
}
export interface FlagScope extends ProjectScope {
  flag: FlagRow;
}
export interface EnvironmentScope extends ProjectScope {
  environment: Selectable<EnvironmentsTable>;
}
export type FlagEnvironmentScope = FlagScope & EnvironmentScope;

/** The access a route states: an org role under `{org}`, otherwise a {@link CallerAccess}. */
export type RequiredAccess<P> = P extends { org: string } ? Role : CallerAccess;

/** What a handler is given for its path parameters `P` and stated access `A`. */
export type ScopeOf<P, A> = P extends { org: string }
  ? P extends { project: string }
    ? P extends { flag: string }
      ? P extends { env: string }
        ? FlagEnvironmentScope
        : FlagScope
      : P extends { env: string }
        ? EnvironmentScope
        : ProjectScope
    : OrgAccess
  : CallerScope<A extends 'user' ? UserCaller : Caller>;

/**
 * Resolves a management request's scope from its path, in the order the access chain has always
 * run: caller, `{org}` with the role check (and SSO), `{project}` within the token's project
 * allowlist, then `{flag}` and `{env}`. A `wholeOrganization` route refuses a caller with an
 * allowlist (design record 033).
 * @throws ApiError 401 without a caller; 403 `forbidden` for a service token on a `user` route or a
 *   role below `access`; 404 (with `did_you_mean`) for anything in the path not found or out of
 *   scope; 403 `sso_required` as {@link requireOrg}.
 */
async function resolveScope(
  services: Services,
  request: FastifyRequest,
  access: Role | CallerAccess,
  wholeOrganization: boolean,
): Promise<object> {
  const params = (request.params ?? {}) as ScopeParams;
  if (params.org === undefined) {
    const caller = callerOf(request);
    if (access === 'user' && caller.type !== 'user')
      throw new ApiError(
        'forbidden',
        'Service tokens cannot use personal routes (tokens, sessions).',
      );
    return { caller };
  }
  // The types admit only a role where the path names an org.
  const org = await requireOrg(services, request, params.org, access as Role);
  if (wholeOrganization) requireWholeOrg(org);
  if (params.project === undefined) return org;
  const project = await requireProject(services, org, params.project);
  const flag =
    params.flag === undefined ? undefined : await requireFlag(services, org, project, params.flag);
  const environment =
    params.env === undefined
      ? undefined
      : await requireEnvironment(services, org, project, params.env);
  return { ...org, project, ...(flag ? { flag } : {}), ...(environment ? { environment } : {}) };
}

/** A route's request and reply, typed by its TypeBox schema as Fastify types them. */
type RouteRequest<S extends FastifySchema> = FastifyRequest<
  RouteGenericInterface,
  RawServerDefault,
  IncomingMessage,
  S,
  TypeBoxTypeProvider
>;
type RouteReply<S extends FastifySchema> = FastifyReply<
  RouteGenericInterface,
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  unknown,
  S,
  TypeBoxTypeProvider
>;

/** What Fastify accepts as a route handler for schema `S`. */
type RouteHandler<S extends FastifySchema> = RouteHandlerMethod<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  RouteGenericInterface,
  unknown,
  S,
  TypeBoxTypeProvider
>;

/**
 * A management route's handler: its scope, resolved and typed from its path parameters, first;
 * what it returns is checked against the response schema as Fastify checks it.
 */
export type ScopedHandler<S extends FastifySchema, A> = (
  scope: ScopeOf<RouteRequest<S>['params'], A>,
  request: RouteRequest<S>,
  reply: RouteReply<S>,
) => ReturnType<RouteHandler<S>>;

/**
 * The one way into a management route. `route.get(path, access, { schema }, handler)` (and
 * `post`, `put`, `patch`, `delete`) registers a route whose handler is given the caller's scope,
 * resolved once from the path by {@link resolveScope} before the handler runs. A route that changes
 * the organization as a whole says so with `{ schema, wholeOrganization: true }`:
 *
 * ```ts
 * const route = scopedRoutes(app, services);
 * route.get('/orgs/:org/projects/:project/flags/:flag', 'Viewer', { schema }, async ({ role, flag }) =>
 *   flagDetail(services, role, flag),
 * );
 * ```
 */
export function scopedRoutes(app: App, services: Services) {
  const method =
    (verb: HTTPMethods) =>
    <S extends FastifySchema, A extends RequiredAccess<RouteRequest<S>['params']>>(
      url: string,
      access: A,
      options: {
        schema: S;
        wholeOrganization?: true;
        bodyLimit?: number;
        /** Runs before the body is validated: e.g. an optional body made `{}` when none was sent. */
        preValidation?: (request: FastifyRequest) => Promise<void>;
      },
      handler: ScopedHandler<S, A>,
    ): void => {
      const { wholeOrganization = false, ...routeOptions } = options;
      const scopedHandler = async (request: RouteRequest<S>, reply: RouteReply<S>) => {
        const scope = await resolveScope(services, request, access, wholeOrganization);
        return handler(scope as ScopeOf<RouteRequest<S>['params'], A>, request, reply);
      };
      // The handler's own return is checked against the schema (ScopedHandler); TypeScript
      // cannot see through Fastify's conditional reply type once it is wrapped in a promise.
      app.route({ method: verb, url, ...routeOptions, handler: scopedHandler as RouteHandler<S> });
    };
  return {
    get: method('GET'),
    post: method('POST'),
    put: method('PUT'),
    patch: method('PATCH'),
    delete: method('DELETE'),
  };
}
