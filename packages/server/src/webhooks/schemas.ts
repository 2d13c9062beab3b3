import { Type } from 'typebox';
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookSecretsTable,
  WebhookSubscriptionsTable,
} from '../db/schema.js';
import { ActionsSchema } from '../api/actions.js';
import { NameSchema, Timestamp, Uuid } from '../api/fields.js';

/** Wire shapes of the webhook management endpoints (design record 005). */

const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const WebhookUrlSchema = Type.String({ minLength: 1, maxLength: 2048 });
export const EventTypesSchema = Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 });
export const IdListSchema = Type.Array(Uuid, { maxItems: 500 });

export const WebhookCreateBody = Type.Object(
  {
    name: NameSchema,
    url: WebhookUrlSchema,
    provider: Type.Optional(Type.Enum(['GenericHttp'])),
    eventTypes: Type.Optional(EventTypesSchema),
    projectIds: Type.Optional(IdListSchema),
    environmentIds: Type.Optional(IdListSchema),
  },
  { additionalProperties: false },
);

export const WebhookUpdateBody = Type.Object(
  {
    name: Type.Optional(NameSchema),
    url: Type.Optional(WebhookUrlSchema),
    eventTypes: Type.Optional(EventTypesSchema),
    projectIds: Type.Optional(IdListSchema),
    environmentIds: Type.Optional(IdListSchema),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const WebhookCreatedSchema = Type.Object({
  id: Uuid,
  secret: Type.String(),
  warning: Type.String(),
});

export const SecretCreatedSchema = Type.Object({
  secretId: Uuid,
  secret: Type.String(),
  warning: Type.String(),
});

const SecretSummarySchema = Type.Object({ id: Uuid, createdAt: Timestamp });

const webhookFields = {
  id: Uuid,
  name: Type.String(),
  url: Type.String(),
  provider: Type.String(),
  eventTypes: Type.Array(Type.String()),
  projectIds: Type.Array(Type.String()),
  environmentIds: Type.Array(Type.String()),
  /** The allowlist of the caller who created it; omitted when none (design record 033). */
  projectScope: Type.Optional(Type.Array(Type.String())),
  enabled: Type.Boolean(),
  disabledReason: NullableString,
  consecutiveFailures: Type.Integer(),
  secrets: Type.Array(SecretSummarySchema),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

/** A subscription inside a list: no `_actions` (spec: Capability hints). */
export const WebhookItemSchema = Type.Object(webhookFields);
/** A subscription read on its own. */
export const WebhookSchema = Type.Object({ ...webhookFields, _actions: ActionsSchema });

/** The spec's Webhook delivery record. */
export const DeliverySchema = Type.Object({
  id: Uuid,
  webhookEventId: Uuid,
  /** The event's type (`flag.toggled`), so the delivery log reads without opening each one. */
  eventType: Type.String(),
  status: Type.String(),
  attemptCount: Type.Integer(),
  nextAttemptAt: Timestamp,
  lastResponseStatusCode: NullableInteger,
  lastError: NullableString,
  completedAt: NullableTimestamp,
  createdAt: Timestamp,
});

const AttemptSchema = Type.Object({
  attemptNumber: Type.Integer(),
  attemptedAt: Timestamp,
  responseStatusCode: NullableInteger,
  durationMs: Type.Integer(),
  error: NullableString,
});

/** One delivery with its attempts, oldest first. */
export const DeliveryDetailSchema = Type.Object({
  ...DeliverySchema.properties,
  /** The request body delivered (spec: Delivery request). */
  payload: Type.Record(Type.String(), Type.Unknown()),
  attempts: Type.Array(AttemptSchema),
});

export const TestEventSchema = Type.Object({ webhookEventId: Uuid, webhookDeliveryId: Uuid });

/** The read shape of a subscription; secrets appear by id only, never by value. */
export function webhookItem(
  row: WebhookSubscriptionsTable,
  secrets: Pick<WebhookSecretsTable, 'id' | 'created_at'>[],
) {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    provider: row.provider,
    eventTypes: JSON.parse(row.event_types) as string[],
    projectIds: JSON.parse(row.project_ids) as string[],
    environmentIds: JSON.parse(row.environment_ids) as string[],
    ...(row.project_scope ? { projectScope: JSON.parse(row.project_scope) as string[] } : {}),
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    consecutiveFailures: row.consecutive_failures,
    secrets: secrets.map((secret) => ({ id: secret.id, createdAt: secret.created_at })),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function deliveryItem(row: WebhookDeliveriesTable, eventType: string) {
  return {
    id: row.id,
    webhookEventId: row.event_id,
    eventType,
    status: row.status,
    attemptCount: row.attempt_count,
    nextAttemptAt: row.next_attempt_at,
    lastResponseStatusCode: row.last_response_status_code,
    lastError: row.last_error,
    completedAt: row.completed_at,
    createdAt: row.created_at,
  };
}

export function attemptItem(row: WebhookAttemptsTable) {
  return {
    attemptNumber: row.attempt_number,
    attemptedAt: row.attempted_at,
    responseStatusCode: row.response_status_code,
    durationMs: row.duration_ms,
    error: row.error,
  };
}
