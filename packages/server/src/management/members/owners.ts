import type { Transaction } from 'kysely';
import type { Dialect } from '../../db/database.js';
import type { Role, Schema } from '../../db/schema.js';
import { ApiError } from '../../errors.js';

/**
 * Refuses a change that would leave the organization without an Owner (people-and-sign-in.md,
 * People). On PostgreSQL the Owner rows are locked, so two concurrent demotions cannot each see
 * the other's Owner; SQLite serialises writers anyway.
 * @throws ApiError `conflict` (409) when `userId` is the only Owner.
 */
export async function keepAnOwner(
  trx: Transaction<Schema>,
  dialect: Dialect,
  organizationId: string,
  userId: string,
): Promise<void> {
  let query = trx
    .selectFrom('memberships')
    .select('user_id')
    .where('organization_id', '=', organizationId)
    .where('role', '=', 'Owner');
  if (dialect === 'postgres') query = query.forUpdate();
  const owners = await query.execute();
  if (owners.length === 1 && owners[0]?.user_id === userId)
    throw new ApiError(
      'conflict',
      'This is the organization’s last Owner: make another member Owner first.',
    );
}

/**
 * Refuses granting the Owner role, or changing or removing an Owner, by anyone but an Owner.
 * `from` is the member's role before (null for an invitation), `to` after (null for a removal).
 * @throws ApiError `forbidden` (403).
 */
export function checkOwnerChange(callerRole: Role, from: Role | null, to: Role | null): void {
  if ((from === 'Owner' || to === 'Owner') && callerRole !== 'Owner')
    throw new ApiError('forbidden', 'Only an Owner grants the Owner role or changes an Owner.');
}
