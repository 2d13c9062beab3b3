import type { Kysely, Transaction } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Plan, Schema, WebhookSubscriptionsTable } from '../db/schema.js';
import { EVENT_TYPES } from '../events/types.js';
import { ApiError, invalidField } from '../errors.js';
import { checkProjectIds, isUuid, notFound, type OrgAccess } from '../api/access.js';
import { checkGrant, mayReadInSql, reachesInSql } from '../api/reach.js';
import type { Services } from '../services.js';
import { resolvedUrlProblem } from '../http/safe-target.js';

/** Subscriptions an organization may have, by plan; null is unlimited (spec: Limits). */
export const SUBSCRIPTION_LIMITS: Record<Plan, number | null> = {
  Solo: 1,
  Team: 3,
  Pro: 3,
  Business: null,
  Enterprise: null,
};

/**
 * Resolves `{id}` to a subscription of the caller's organization within its reach.
 * @throws ApiError 404 when it does not exist there, or an allowlisted caller's does not cover it.
 */
export async function requireSubscription(
  services: Services,
  access: OrgAccess,
  id: string,
): Promise<WebhookSubscriptionsTable> {
  const row = isUuid(id)
    ? await services.db
        .selectFrom('webhook_subscriptions')
        .selectAll()
        .where('organization_id', '=', access.org.id)
        .where('id', '=', id)
        .where(reachesInSql(services.dialect, access, 'project_scope'))
        .executeTakeFirst()
    : undefined;
  if (!row)
    throw notFound('Webhook subscription', id, [], {
      method: 'GET',
      path: `/api/v1/orgs/${access.org.slug}/webhooks`,
    });
  return row;
}

/** Active (unretired) secrets of a subscription, oldest first, without their values. */
export function activeSecretSummaries(db: Kysely<Schema>, subscriptionId: string) {
  return db
    .selectFrom('webhook_secrets')
    .select(['id', 'created_at'])
    .where('subscription_id', '=', subscriptionId)
    .where('retired_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * Serialises concurrent changes to one row on PostgreSQL (`SELECT … FOR UPDATE`), so checks
 * such as the plan limit or "last active secret" cannot race. SQLite transactions are already
 * serialised on its single connection.
 */
export async function lockRow(
  trx: Transaction<Schema>,
  dialect: Dialect,
  table: 'organizations' | 'webhook_subscriptions',
  id: string,
): Promise<void> {
  if (dialect !== 'postgres') return;
  await trx.selectFrom(table).select('id').where('id', '=', id).forUpdate().execute();
}

/**
 * Validates a target URL for saving: shape, scheme and every resolved address (spec: Limits,
 * "Webhook URL").
 * @throws ApiError 400 `validation_failed` on `url`.
 */
export async function checkUrl(services: Services, url: string): Promise<void> {
  const problem = await resolvedUrlProblem(url, services.config.webhooks.allowPrivateTargets);
  if (problem) throw invalidField('url', problem);
}

/**
 * Validates and de-duplicates the filters of a create or update (`creating`: absent filters mean
 * all): event types from the catalogue, projects and environments of the caller's organization.
 * An allowlisted caller names only projects of its allowlist, and at least one (design record 033).
 * @throws ApiError 400 `validation_failed` naming the offending field.
 */
export async function checkFilters(
  services: Services,
  access: OrgAccess,
  filters: { eventTypes?: string[]; projectIds?: string[]; environmentIds?: string[] },
  creating: boolean,
): Promise<{ eventTypes?: string[]; projectIds?: string[]; environmentIds?: string[] }> {
  const eventTypes = filters.eventTypes && [...new Set(filters.eventTypes)];
  const projectIds = filters.projectIds && [...new Set(filters.projectIds)];
  const environmentIds = filters.environmentIds && [...new Set(filters.environmentIds)];
  const catalogue: readonly string[] = EVENT_TYPES;
  const unknownTypes = (eventTypes ?? []).filter((type) => !catalogue.includes(type));
  if (unknownTypes.length > 0)
    throw new ApiError('validation_failed', `eventTypes: unknown ${unknownTypes.join(', ')}`, {
      fields: { eventTypes: [`unknown event types: ${unknownTypes.join(', ')}`] },
      nextActions: [
        { method: 'GET', path: `/api/v1/orgs/${access.org.slug}/webhooks/event-types` },
      ],
    });
  if (creating || projectIds)
    checkGrant(access, { projectIds: projectIds?.length ? projectIds : null });
  if (projectIds) await checkProjectIds(services, access, projectIds);
  if (environmentIds && environmentIds.length > 0) {
    const found = await services.db
      .selectFrom('environments')
      .innerJoin('projects', 'projects.id', 'environments.project_id')
      .select('environments.id')
      .where('projects.organization_id', '=', access.org.id)
      .where(mayReadInSql(access, 'projects.id'))
      .where('environments.id', 'in', environmentIds)
      .execute();
    const known = new Set(found.map((row) => row.id));
    const unknown = environmentIds.filter((id) => !known.has(id));
    if (unknown.length > 0)
      throw invalidField('environmentIds', `unknown environment ids: ${unknown.join(', ')}`);
  }
  return { eventTypes, projectIds, environmentIds };
}

/**
 * A finished delivery as a redeliver request found it: the attempts made so far, a count that
 * only grows (every round adds at least one), so a round started and finished since is noticed.
 */
export interface FinishedDelivery {
  id: string;
  attempts: number;
}

/**
 * Reads a delivery's status and attempt count in one statement.
 * @returns undefined while the delivery is `Pending` (or gone)
 */
export async function findFinishedDelivery(
  db: Kysely<Schema>,
  deliveryId: string,
): Promise<FinishedDelivery | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => [
      'id',
      'status',
      eb
        .selectFrom('webhook_attempts')
        .select((inner) => inner.fn.countAll<number | string>().as('count'))
        .whereRef('webhook_attempts.delivery_id', '=', 'webhook_deliveries.id')
        .as('attempts'),
    ])
    .where('id', '=', deliveryId)
    .executeTakeFirst();
  if (!row || row.status === 'Pending') return undefined;
  return { id: row.id, attempts: Number(row.attempts) };
}

/**
 * Starts a fresh round of attempts, due `now` (ISO-8601 UTC), for a delivery still as `seen`:
 * one conditional update, so of several redeliver requests that saw the same finished delivery
 * exactly one wins, even when the round it started has already finished (design record 018).
 * @returns false when the delivery is pending again or another round has run since it was seen
 */
export async function restartDelivery(
  db: Kysely<Schema>,
  seen: FinishedDelivery,
  now: string,
): Promise<boolean> {
  const update = await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'Pending',
      attempt_count: 0,
      next_attempt_at: now,
      completed_at: null,
      lease_until: null,
      lease_owner: null,
    })
    .where('id', '=', seen.id)
    .where('status', '!=', 'Pending')
    .where(
      (eb) =>
        eb
          .selectFrom('webhook_attempts')
          .select((inner) => inner.fn.countAll().as('count'))
          .whereRef('webhook_attempts.delivery_id', '=', 'webhook_deliveries.id'),
      '=',
      seen.attempts,
    )
    .executeTakeFirst();
  return Number(update.numUpdatedRows) > 0;
}
