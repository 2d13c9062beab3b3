import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../http/app-instance.js';
import type { Role, WebhookSubscriptionsTable } from '../db/schema.js';
import { EVENT_TYPES } from '../events/types.js';
import { ApiError } from '../errors.js';
import { actionsFor } from '../api/actions.js';
import { mutateAs } from '../api/access.js';
import { reachesInSql } from '../api/reach.js';
import { PageQuery, paginate, pagedSchema } from '../api/pagination.js';
import type { Services } from '../services.js';
import { secretEvent, subscriptionEvent, subscriptionUpdateEvent } from './audit.js';
import { registerDeliveryRoutes } from './delivery-routes.js';
import {
  SUBSCRIPTION_LIMITS,
  activeSecretSummaries,
  checkFilters,
  checkUrl,
  lockRow,
  requireSubscription,
} from './queries.js';
import {
  SecretCreatedSchema,
  WebhookCreateBody,
  WebhookCreatedSchema,
  WebhookItemSchema,
  WebhookSchema,
  WebhookUpdateBody,
  webhookItem,
} from './schemas.js';
import { SECRET_SHOWN_ONCE_WARNING, generateWebhookSecret } from './signing.js';
import { scopedRoutes } from '../api/scope.js';

const OrgParams = Type.Object({ org: Type.String() });
const WebhookParams = Type.Object({ org: Type.String(), id: Type.String() });

/** Active signing secrets a subscription may hold at once; each one signs every attempt. */
const MAX_ACTIVE_SECRETS = 10;

function webhookActions(role: Role, row: WebhookSubscriptionsTable) {
  const disabled = row.enabled === 1 ? null : 'the subscription is disabled';
  return actionsFor(role, {
    update: { role: 'Admin' },
    delete: { role: 'Admin' },
    test: { role: 'Admin', blockedBy: disabled },
    addSecret: { role: 'Admin' },
  });
}

/**
 * Outbound webhook subscriptions of an organization (spec: Endpoints, rules 11–16; design
 * record 005), all Admin only. Subscription changes are audited but delivered to no subscription
 * (audit-only events, issue 43).
 */
export function registerWebhookRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  const tags = ['webhooks'];

  const readWebhook = async (row: WebhookSubscriptionsTable) =>
    webhookItem(row, await activeSecretSummaries(services.db, row.id));

  route.post(
    '/orgs/:org/webhooks',
    'Admin',
    {
      schema: {
        tags,
        params: OrgParams,
        body: WebhookCreateBody,
        response: { 201: WebhookCreatedSchema },
      },
    },
    async (scope, request, reply) => {
      const body = request.body;
      await checkUrl(services, body.url);
      const filters = await checkFilters(services, scope, body, true);
      const secret = generateWebhookSecret();
      const id = await mutateAs(services, scope, async (m) => {
        await lockRow(m.trx, services.dialect, 'organizations', scope.org.id);
        const limit = SUBSCRIPTION_LIMITS[scope.org.plan];
        if (limit !== null) {
          const { count } = await m.trx
            .selectFrom('webhook_subscriptions')
            .select((eb) => eb.fn.countAll().as('count'))
            .where('organization_id', '=', scope.org.id)
            .executeTakeFirstOrThrow();
          if (Number(count) >= limit)
            throw new ApiError(
              'plan_limit_reached',
              `The ${scope.org.plan} plan allows ${limit} webhook subscription${limit === 1 ? '' : 's'}.`,
            );
        }
        const subscriptionId = uuid();
        await m.trx
          .insertInto('webhook_subscriptions')
          .values({
            id: subscriptionId,
            organization_id: scope.org.id,
            name: body.name,
            url: body.url,
            provider: 'GenericHttp',
            event_types: JSON.stringify(filters.eventTypes ?? []),
            project_ids: JSON.stringify(filters.projectIds ?? []),
            environment_ids: JSON.stringify(filters.environmentIds ?? []),
            project_scope: scope.projectScope && JSON.stringify(scope.projectScope),
            enabled: 1,
            disabled_reason: null,
            consecutive_failures: 0,
            created_at: m.now,
            updated_at: m.now,
          })
          .execute();
        const secretId = uuid();
        await m.trx
          .insertInto('webhook_secrets')
          .values({
            id: secretId,
            subscription_id: subscriptionId,
            secret: services.signingSecrets.seal(secretId, secret),
            created_at: m.now,
            retired_at: null,
          })
          .execute();
        await m.emit(subscriptionEvent('webhook.created', { id: subscriptionId, name: body.name }));
        await m.emit(
          secretEvent('webhook.secret.created', { id: subscriptionId, name: body.name }, secretId),
        );
        return subscriptionId;
      });
      return reply.status(201).send({ id, secret, warning: SECRET_SHOWN_ONCE_WARNING });
    },
  );

  route.get(
    '/orgs/:org/webhooks/event-types',
    'Admin',
    {
      schema: { tags, params: OrgParams, response: { 200: Type.Array(Type.String()) } },
    },
    () => [...EVENT_TYPES],
  );

  route.get(
    '/orgs/:org/webhooks',
    'Admin',
    {
      schema: {
        tags,
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(WebhookItemSchema) },
      },
    },
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('webhook_subscriptions')
          .selectAll()
          .where('organization_id', '=', scope.org.id)
          .where(reachesInSql(services.dialect, scope, 'project_scope')),
        request.query,
      );
      const items = await Promise.all(rows.map(readWebhook));
      const limit = SUBSCRIPTION_LIMITS[scope.org.plan];
      let blockedBy: string | null = null;
      if (limit !== null) {
        const { count } = await services.db
          .selectFrom('webhook_subscriptions')
          .select((eb) => eb.fn.countAll().as('count'))
          .where('organization_id', '=', scope.org.id)
          .executeTakeFirstOrThrow();
        if (Number(count) >= limit) blockedBy = `the ${scope.org.plan} plan limit is reached`;
      }
      return {
        items,
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, { create: { role: 'Admin', blockedBy } }),
      };
    },
  );

  route.get(
    '/orgs/:org/webhooks/:id',
    'Admin',
    { schema: { tags, params: WebhookParams, response: { 200: WebhookSchema } } },
    async (scope, request) => {
      const row = await requireSubscription(services, scope, request.params.id);
      return { ...(await readWebhook(row)), _actions: webhookActions(scope.role, row) };
    },
  );

  route.patch(
    '/orgs/:org/webhooks/:id',
    'Admin',
    {
      schema: {
        tags,
        params: WebhookParams,
        body: WebhookUpdateBody,
        response: { 200: WebhookSchema },
      },
    },
    async (scope, request) => {
      const current = await requireSubscription(services, scope, request.params.id);
      const body = request.body;
      if (body.url !== undefined) await checkUrl(services, body.url);
      const filters = await checkFilters(services, scope, body, false);
      // Enabling a disabled subscription starts a fresh failure count.
      const reenabled = body.enabled === true && current.enabled === 0;
      const disabled = body.enabled === false && current.enabled === 1;
      const row = await mutateAs(services, scope, async (m) => {
        const updated = await m.trx
          .updateTable('webhook_subscriptions')
          .set({
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(body.url !== undefined ? { url: body.url } : {}),
            ...(filters.eventTypes ? { event_types: JSON.stringify(filters.eventTypes) } : {}),
            ...(filters.projectIds ? { project_ids: JSON.stringify(filters.projectIds) } : {}),
            ...(filters.environmentIds
              ? { environment_ids: JSON.stringify(filters.environmentIds) }
              : {}),
            ...(reenabled ? { enabled: 1, disabled_reason: null, consecutive_failures: 0 } : {}),
            ...(disabled ? { enabled: 0, disabled_reason: 'disabled by an administrator' } : {}),
            updated_at: m.now,
          })
          .where('id', '=', current.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        const event = subscriptionUpdateEvent(current, updated);
        if (event) await m.emit(event);
        return updated;
      });
      return { ...(await readWebhook(row)), _actions: webhookActions(scope.role, row) };
    },
  );

  route.delete(
    '/orgs/:org/webhooks/:id',
    'Admin',
    { schema: { tags, params: WebhookParams } },
    async (scope, request, reply) => {
      const row = await requireSubscription(services, scope, request.params.id);
      // Secrets, deliveries and attempts go with it (foreign keys cascade).
      await mutateAs(services, scope, async (m) => {
        await m.trx.deleteFrom('webhook_subscriptions').where('id', '=', row.id).execute();
        await m.emit(subscriptionEvent('webhook.deleted', row));
      });
      return reply.status(204).send();
    },
  );

  route.post(
    '/orgs/:org/webhooks/:id/secrets',
    'Admin',
    { schema: { tags, params: WebhookParams, response: { 201: SecretCreatedSchema } } },
    async (scope, request, reply) => {
      const row = await requireSubscription(services, scope, request.params.id);
      const secret = generateWebhookSecret();
      const secretId = await mutateAs(services, scope, async (m) => {
        await lockRow(m.trx, services.dialect, 'webhook_subscriptions', row.id);
        const active = await activeSecretSummaries(m.trx, row.id);
        if (active.length >= MAX_ACTIVE_SECRETS)
          throw new ApiError(
            'bad_request',
            `A subscription holds at most ${MAX_ACTIVE_SECRETS} active secrets; retire one first.`,
          );
        const id = uuid();
        await m.trx
          .insertInto('webhook_secrets')
          .values({
            id,
            subscription_id: row.id,
            secret: services.signingSecrets.seal(id, secret),
            created_at: m.now,
            retired_at: null,
          })
          .execute();
        await m.emit(secretEvent('webhook.secret.created', row, id));
        return id;
      });
      return reply.status(201).send({ secretId, secret, warning: SECRET_SHOWN_ONCE_WARNING });
    },
  );

  route.delete(
    '/orgs/:org/webhooks/:id/secrets/:secretId',
    'Admin',
    {
      schema: {
        tags,
        params: Type.Object({ org: Type.String(), id: Type.String(), secretId: Type.String() }),
      },
    },
    async (scope, request, reply) => {
      const row = await requireSubscription(services, scope, request.params.id);
      const { secretId } = request.params;
      await mutateAs(services, scope, async (m) => {
        await lockRow(m.trx, services.dialect, 'webhook_subscriptions', row.id);
        const active = await activeSecretSummaries(m.trx, row.id);
        if (!active.some((secret) => secret.id === secretId))
          throw new ApiError('not_found', `Active secret "${secretId}" was not found.`);
        if (active.length === 1)
          throw new ApiError(
            'bad_request',
            'This is the last active secret of the subscription; add a new secret before retiring it.',
            {
              nextActions: [
                {
                  method: 'POST',
                  path: `/api/v1/orgs/${scope.org.slug}/webhooks/${row.id}/secrets`,
                },
              ],
            },
          );
        await m.trx
          .updateTable('webhook_secrets')
          .set({ retired_at: m.now })
          .where('id', '=', secretId)
          .execute();
        await m.emit(secretEvent('webhook.secret.retired', row, secretId));
      });
      return reply.status(204).send();
    },
  );

  registerDeliveryRoutes(app, services);
}
