import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * The initial schema. Frozen: once landed, a migration never changes; later changes are new
 * files. Timestamps are `timestamptz` on PostgreSQL and ISO-8601 text on SQLite.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  const json = 'text';

  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('sso_required', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sso_connection_id', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text')
    .addColumn('email_verified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('memberships')
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('memberships_pk', ['organization_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('last_four', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) =>
      c.references('organizations.id').onDelete('cascade'),
    )
    .addColumn('role', 'text')
    .addColumn('project_scope', json)
    .addColumn('sso_connection_id', 'text')
    .addColumn('expires_at', ts)
    .addColumn('revoked_at', ts)
    .addColumn('last_used_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('projects_org_key', ['organization_id', 'key'])
    .execute();

  await db.schema
    .createTable('environments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('color', 'text')
    .addColumn('sort_order', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('environments_project_key', ['project_id', 'key'])
    .execute();

  await db.schema
    .createTable('flags')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('is_archived', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('client_side_visible', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tags', json, (c) => c.notNull())
    .addColumn('expires_at', ts)
    .addColumn('owner_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('removal_pr_url', 'text')
    .addColumn('is_permanent', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('salt', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('flags_project_key', ['project_id', 'key'])
    .execute();

  await db.schema
    .createTable('variations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('flag_id', 'text', (c) => c.notNull().references('flags.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('value', json, (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('sort_order', 'integer', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addUniqueConstraint('variations_flag_key', ['flag_id', 'key'])
    .execute();

  await db.schema
    .createTable('flag_environments')
    .addColumn('flag_id', 'text', (c) => c.notNull().references('flags.id').onDelete('cascade'))
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('is_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('default_variation_id', 'text', (c) => c.notNull())
    .addColumn('off_variation_id', 'text', (c) => c.notNull())
    .addColumn('strategy', 'text', (c) => c.notNull())
    .addColumn('rollout', json, (c) => c.notNull())
    .addColumn('prerequisites', json, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('flag_environments_pk', ['flag_id', 'environment_id'])
    .execute();

  await db.schema
    .createTable('segments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('conditions', json, (c) => c.notNull())
    .addColumn('condition_logic', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('segments_project_key', ['project_id', 'key'])
    .execute();

  await db.schema
    .createTable('rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('flag_id', 'text', (c) => c.notNull().references('flags.id').onDelete('cascade'))
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('priority', 'integer', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('variation_id', 'text', (c) => c.notNull())
    .addColumn('rollout_percentage', 'integer')
    .addColumn('segment_id', 'text', (c) => c.references('segments.id'))
    .addColumn('condition_groups', json, (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('rules_flag_env')
    .on('rules')
    .columns(['flag_id', 'environment_id'])
    .execute();

  await db.schema
    .createTable('sdk_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('project_id', 'text', (c) =>
      c.notNull().references('projects.id').onDelete('cascade'),
    )
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('last_four', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('revoked_at', ts)
    .addColumn('last_used_at', ts)
    .execute();

  await db.schema
    .createTable('webhook_subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_types', json, (c) => c.notNull())
    .addColumn('project_ids', json, (c) => c.notNull())
    .addColumn('environment_ids', json, (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('disabled_reason', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('webhook_secrets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) =>
      c.notNull().references('webhook_subscriptions.id').onDelete('cascade'),
    )
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('retired_at', ts)
    .execute();

  await db.schema
    .createTable('webhook_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('project_id', 'text')
    .addColumn('environment_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', json, (c) => c.notNull())
    .addColumn('occurred_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_events_org')
    .on('webhook_events')
    .columns(['organization_id', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) =>
      c.notNull().references('webhook_events.id').onDelete('cascade'),
    )
    .addColumn('subscription_id', 'text', (c) =>
      c.notNull().references('webhook_subscriptions.id').onDelete('cascade'),
    )
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ts, (c) => c.notNull())
    .addColumn('lease_until', ts)
    .addColumn('lease_owner', 'text')
    .addColumn('last_response_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('completed_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addUniqueConstraint('webhook_deliveries_event_subscription', ['event_id', 'subscription_id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_subscription')
    .on('webhook_deliveries')
    .columns(['subscription_id', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) =>
      c.notNull().references('webhook_deliveries.id').onDelete('cascade'),
    )
    .addColumn('attempt_number', 'integer', (c) => c.notNull())
    .addColumn('attempted_at', ts, (c) => c.notNull())
    .addColumn('response_status_code', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .execute();
  await db.schema
    .createIndex('webhook_attempts_delivery')
    .on('webhook_attempts')
    .columns(['delivery_id'])
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('caller_id', 'text', (c) => c.notNull())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['caller_id', 'route', 'key'])
    .execute();

  await db.schema
    .createTable('flag_usage')
    .addColumn('flag_id', 'text', (c) => c.notNull().references('flags.id').onDelete('cascade'))
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('variation_key', 'text', (c) => c.notNull())
    .addColumn('hour', ts, (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('last_evaluated_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('flag_usage_pk', [
      'flag_id',
      'environment_id',
      'variation_key',
      'hour',
    ])
    .execute();

  await db.schema
    .createTable('custom_event_usage')
    .addColumn('environment_id', 'text', (c) =>
      c.notNull().references('environments.id').onDelete('cascade'),
    )
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('hour', ts, (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('custom_event_usage_pk', ['environment_id', 'event_key', 'hour'])
    .execute();
}
