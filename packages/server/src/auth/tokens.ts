import type { Kysely, Transaction } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { ApiTokensTable, Role, Schema } from '../db/schema.js';
import { generateSecret, hashSecret } from './secrets.js';

/** A token as listed: never the secret, only its last four characters. */
export interface TokenSummary {
  id: string;
  name: string;
  lastFourCharacters: string;
  role?: Role;
  projectScope?: string[];
  expiresAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
}

/**
 * Creates a personal access token (`vxl_pat_…`, for `userId`) or a service token (`vxl_svc_…`,
 * for `organizationId` with `role`). Stores only the hash; returns the row and the plaintext.
 */
export async function issueToken(
  db: Kysely<Schema> | Transaction<Schema>,
  input:
    | {
        kind: 'personal';
        userId: string;
        name: string;
        expiresAt: string | null;
        now: string;
        /** Set when created through an SSO session: the token came through that connection too. */
        ssoConnectionId?: string | null;
      }
    | {
        kind: 'service';
        organizationId: string;
        role: Role;
        projectScope: string[] | null;
        name: string;
        expiresAt: string | null;
        now: string;
      },
): Promise<{ row: ApiTokensTable; token: string }> {
  const token = generateSecret(input.kind === 'personal' ? 'vxl_pat' : 'vxl_svc');
  const row: ApiTokensTable = {
    id: uuid(),
    kind: input.kind,
    token_hash: hashSecret(token),
    last_four: token.slice(-4),
    name: input.name,
    user_id: input.kind === 'personal' ? input.userId : null,
    organization_id: input.kind === 'service' ? input.organizationId : null,
    role: input.kind === 'service' ? input.role : null,
    project_scope:
      input.kind === 'service' && input.projectScope ? JSON.stringify(input.projectScope) : null,
    sso_connection_id: input.kind === 'personal' ? (input.ssoConnectionId ?? null) : null,
    expires_at: input.expiresAt,
    revoked_at: null,
    last_used_at: null,
    created_at: input.now,
  };
  await db.insertInto('api_tokens').values(row).execute();
  return { row, token };
}

/** The list shape of a token. */
export function tokenSummary(row: ApiTokensTable): TokenSummary {
  return {
    id: row.id,
    name: row.name,
    lastFourCharacters: row.last_four,
    ...(row.role ? { role: row.role } : {}),
    ...(row.project_scope ? { projectScope: JSON.parse(row.project_scope) as string[] } : {}),
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
    createdAt: row.created_at,
  };
}
