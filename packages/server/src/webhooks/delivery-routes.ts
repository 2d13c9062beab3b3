import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../http/app-instance.js';
import type { EventPayload, EventType } from '../events/types.js';
import { ApiError } from '../errors.js';
import { actorOf, isUuid, mutateAs, type OrgAccess } from '../api/access.js';
import { PageQuery, paginate, pagedSchema } from '../api/pagination.js';
import type { Services } from '../services.js';
import { subscriptionCovers } from './fan-out.js';
import { findFinishedDelivery, requireSubscription, restartDelivery } from './queries.js';
import {
  DeliveryDetailSchema,
  DeliverySchema,
  TestEventSchema,
  attemptItem,
  deliveryItem,
} from './schemas.js';
import { scopedRoutes } from '../api/scope.js';

const WebhookParams = Type.Object({ org: Type.String(), id: Type.String() });
const DeliveryParams = Type.Object({
  org: Type.String(),
  id: Type.String(),
  deliveryId: Type.String(),
});

const stillPending = () =>
  new ApiError('bad_request', 'The delivery is still pending; it cannot be resent.');

async function requireDelivery(
  services: Services,
  scope: OrgAccess,
  subscriptionId: string,
  deliveryId: string,
) {
  const row = isUuid(deliveryId)
    ? await services.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('subscription_id', '=', subscriptionId)
        .where('id', '=', deliveryId)
        .executeTakeFirst()
    : undefined;
  if (!row)
    throw new ApiError('not_found', `Delivery "${deliveryId}" was not found.`, {
      nextActions: [
        {
          method: 'GET',
          path: `/api/v1/orgs/${scope.org.slug}/webhooks/${subscriptionId}/deliveries`,
        },
      ],
    });
  return row;
}

/** The delivery log of a subscription, test events and redelivery (spec: rules 13 and 14). */
export function registerDeliveryRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  const tags = ['webhooks'];

  route.post(
    '/orgs/:org/webhooks/:id/test',
    'Admin',
    { schema: { tags, params: WebhookParams, response: { 202: TestEventSchema } } },
    async (scope, request, reply) => {
      const subscription = await requireSubscription(services, scope, request.params.id);
      if (subscription.enabled !== 1)
        throw new ApiError('bad_request', 'The subscription is disabled; enable it first.');
      // Written directly rather than through the outbox: it goes to this subscription only.
      const result = await mutateAs(services, scope, async (m) => {
        const payload: EventPayload = {
          type: 'flag.toggled',
          occurredAt: m.now,
          organizationId: scope.org.id,
          projectId: null,
          environmentId: null,
          actor: actorOf(scope.caller),
          // An id of its own, naming no flag; no project marks it as a test (audit-log/routes.ts).
          entity: { type: 'flag', id: uuid() },
          changes: [{ property: 'IsEnabled', from: 'false', to: 'true' }],
          description: `Test event for webhook subscription "${subscription.name}"`,
        };
        const webhookEventId = uuid();
        const webhookDeliveryId = uuid();
        await m.trx
          .insertInto('webhook_events')
          .values({
            id: webhookEventId,
            organization_id: scope.org.id,
            project_id: null,
            environment_id: null,
            type: payload.type,
            payload: JSON.stringify(payload),
            occurred_at: m.now,
          })
          .execute();
        await m.trx
          .insertInto('webhook_deliveries')
          .values({
            id: webhookDeliveryId,
            event_id: webhookEventId,
            subscription_id: subscription.id,
            status: 'Pending',
            attempt_count: 0,
            next_attempt_at: m.now,
            created_at: m.now,
          })
          .execute();
        m.afterCommit(services.onDeliveriesQueued);
        return { webhookEventId, webhookDeliveryId };
      });
      return reply.status(202).send(result);
    },
  );

  route.get(
    '/orgs/:org/webhooks/:id/deliveries',
    'Admin',
    {
      schema: {
        tags,
        params: WebhookParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(DeliverySchema) },
      },
    },
    async (scope, request) => {
      const subscription = await requireSubscription(services, scope, request.params.id);
      // Ids are UUIDv7, so id order is creation order: most recent first.
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('subscription_id', '=', subscription.id),
        request.query,
        { direction: 'desc' },
      );
      const events = rows.length
        ? await services.db
            .selectFrom('webhook_events')
            .select(['id', 'type'])
            .where(
              'id',
              'in',
              rows.map((row) => row.event_id),
            )
            .execute()
        : [];
      const typeOf = new Map(events.map((event) => [event.id, event.type]));
      return {
        items: rows.map((row) => deliveryItem(row, typeOf.get(row.event_id) ?? '')),
        next_cursor: nextCursor,
        _actions: {},
      };
    },
  );

  route.get(
    '/orgs/:org/webhooks/:id/deliveries/:deliveryId',
    'Admin',
    { schema: { tags, params: DeliveryParams, response: { 200: DeliveryDetailSchema } } },
    async (scope, request) => {
      const subscription = await requireSubscription(services, scope, request.params.id);
      const delivery = await requireDelivery(
        services,
        scope,
        subscription.id,
        request.params.deliveryId,
      );
      const attempts = await services.db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('delivery_id', '=', delivery.id)
        .orderBy('attempted_at')
        .orderBy('attempt_number')
        .execute();
      const event = await services.db
        .selectFrom('webhook_events')
        .select(['type', 'payload'])
        .where('id', '=', delivery.event_id)
        .executeTakeFirstOrThrow();
      return {
        ...deliveryItem(delivery, event.type),
        payload: JSON.parse(event.payload) as Record<string, unknown>,
        attempts: attempts.map(attemptItem),
      };
    },
  );

  route.post(
    '/orgs/:org/webhooks/:id/deliveries/:deliveryId/redeliver',
    'Admin',
    { schema: { tags, params: DeliveryParams } },
    async (scope, request, reply) => {
      const subscription = await requireSubscription(services, scope, request.params.id);
      const delivery = await requireDelivery(
        services,
        scope,
        subscription.id,
        request.params.deliveryId,
      );
      const finished = await findFinishedDelivery(services.db, delivery.id);
      if (!finished) throw stillPending();
      if (subscription.enabled !== 1)
        throw new ApiError('bad_request', 'The subscription is disabled; enable it first.');
      const event = await services.db
        .selectFrom('webhook_events')
        .select(['type', 'project_id', 'environment_id'])
        .where('id', '=', delivery.event_id)
        .executeTakeFirstOrThrow();
      const covered = subscriptionCovers(subscription, {
        type: event.type as EventType,
        projectId: event.project_id,
        environmentId: event.environment_id,
      });
      if (!covered)
        throw new ApiError(
          'bad_request',
          "The subscription's current filters no longer cover this delivery's event.",
        );
      // The retry schedule restarts: a fresh round of attempts, due now.
      const restarted = await mutateAs(services, scope, async (m) => {
        const won = await restartDelivery(m.trx, finished, m.now);
        if (won) m.afterCommit(services.onDeliveriesQueued);
        return won;
      });
      if (!restarted) throw stillPending();
      return reply.status(204).send();
    },
  );
}
