import type { Kysely } from 'kysely';
import type { Role, Schema } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { hashSecret, isRelayKey, isSdkKey, secretKind, secretMatches } from './secrets.js';

/** A personal access token or a browser session, acting as its user. */
export interface UserCaller {
  type: 'user';
  /** The credential: a personal access token, or a session cookie (design record 022). */
  via: 'token' | 'session';
  /** The token's id, or the session's. */
  tokenId: string;
  id: string;
  email: string;
  name: string | null;
  emailVerified: boolean;
  /** The SSO connection this credential came through, if any (spec: Authentication rule 4). */
  ssoConnectionId: string | null;
  /**
   * The organization of {@link ssoConnectionId}: a credential that came through a connection
   * counts in that organization only (design record 032).
   */
  ssoOrganizationId: string | null;
}

/** A service token: no user, one organization, a role and an optional project allowlist. */
export interface ServiceCaller {
  type: 'service_token';
  tokenId: string;
  id: string;
  name: string;
  organizationId: string;
  role: Role;
  /** Project ids the token may reach; null means every project. */
  projectScope: string[] | null;
}

/** Who is calling the management API. */
export type Caller = UserCaller | ServiceCaller;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The credential in an `Authorization: Bearer …` header, or undefined when there is none. */
export function bearerCredential(authorization: string | undefined): string | undefined {
  return authorization ? BEARER.exec(authorization)?.[1] : undefined;
}

/**
 * Resolves the `Authorization: Bearer …` header to a caller.
 * @throws ApiError `unauthorized` (401) when the credential is missing, unknown, expired or revoked.
 */
export async function authenticate(
  db: Kysely<Schema>,
  authorization: string | undefined,
  now: Date,
): Promise<Caller> {
  const token = bearerCredential(authorization);
  if (!token)
    throw new ApiError('unauthorized', 'Send a bearer token: Authorization: Bearer <token>.');
  const row = await db
    .selectFrom('api_tokens')
    .leftJoin('users', 'users.id', 'api_tokens.user_id')
    .leftJoin('sso_connections', 'sso_connections.id', 'api_tokens.sso_connection_id')
    .select([
      'api_tokens.id',
      'api_tokens.kind',
      'api_tokens.token_hash',
      'api_tokens.name',
      'api_tokens.user_id',
      'api_tokens.organization_id',
      'api_tokens.role',
      'api_tokens.project_scope',
      'api_tokens.sso_connection_id',
      'api_tokens.expires_at',
      'api_tokens.revoked_at',
      'users.email',
      'users.name as user_name',
      'users.email_verified',
      'sso_connections.organization_id as sso_organization_id',
    ])
    .where('api_tokens.token_hash', '=', hashSecret(token))
    .executeTakeFirst();
  if (!row || !secretMatches(token, row.token_hash)) {
    throw new ApiError(
      'unauthorized',
      isSdkKey(token)
        ? `The bearer token is ${secretKind(token)}, which only the evaluation API (/v1, /ofrep/v1) takes; the management API takes a personal access token or a service token.`
        : isRelayKey(token)
          ? 'The bearer token is a relay key, which only the relay routes (/v1/relay/…) take; the management API takes a personal access token or a service token.'
          : 'The bearer token is not valid.',
    );
  }
  if (row.revoked_at) throw new ApiError('unauthorized', 'The bearer token has been revoked.');
  if (row.expires_at && new Date(row.expires_at) <= now) {
    throw new ApiError('unauthorized', 'The bearer token has expired.');
  }
  // A token bound to a connection that is gone counts nowhere (deleting one revokes its tokens).
  if (row.sso_connection_id && !row.sso_organization_id)
    throw new ApiError('unauthorized', 'The bearer token has been revoked.');
  if (row.kind === 'service') {
    return {
      type: 'service_token',
      tokenId: row.id,
      id: row.id,
      name: row.name,
      organizationId: required(row.organization_id, 'organization_id'),
      role: required(row.role, 'role'),
      projectScope: row.project_scope ? (JSON.parse(row.project_scope) as string[]) : null,
    };
  }
  return {
    type: 'user',
    via: 'token',
    tokenId: row.id,
    id: required(row.user_id, 'user_id'),
    email: required(row.email, 'users.email'),
    name: row.user_name ?? null,
    emailVerified: row.email_verified === 1,
    ssoConnectionId: row.sso_connection_id,
    ssoOrganizationId: row.sso_organization_id,
  };
}

/** A column the token's kind guarantees (service tokens: organization and role; user tokens: user). */
function required<T>(value: T | null, column: string): T {
  if (value === null) throw new Error(`api_tokens row without ${column}`);
  return value;
}
