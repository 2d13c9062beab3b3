/**
 * Row types of every table, as Kysely sees them. Both dialects store the same shapes:
 * ids are UUIDv7 text, timestamps are ISO-8601 UTC strings, booleans are integers 0/1 and
 * structured values are JSON text (design record 002).
 */
import type { ConditionOperator } from '@vexil/engine';

export type Role = 'Viewer' | 'Member' | 'Admin' | 'Owner';
export type Plan = 'Solo' | 'Team' | 'Pro' | 'Business' | 'Enterprise';

export interface OrganizationsTable {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  sso_required: number;
  sso_connection_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface UsersTable {
  id: string;
  email: string;
  name: string | null;
  email_verified: number;
  created_at: string;
  /** Argon2id hash (PHC string); null when the user has no password (design record 022). */
  password_hash: string | null;
  last_seen_at: string | null;
}

export interface MembershipsTable {
  organization_id: string;
  user_id: string;
  role: Role;
  created_at: string;
  /** JSON array of project ids the member may reach; null means every project. */
  project_ids: string | null;
}

export interface ApiTokensTable {
  id: string;
  kind: 'personal' | 'service';
  token_hash: string;
  last_four: string;
  name: string;
  user_id: string | null;
  organization_id: string | null;
  role: Role | null;
  /** JSON array of project ids; null means every project. */
  project_scope: string | null;
  /** SSO connection the credential was issued through, if any. */
  sso_connection_id: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

export interface ProjectsTable {
  id: string;
  organization_id: string;
  key: string;
  name: string;
  description: string | null;
  /** How many change requests the project has had: the last one's number (design record 042). */
  change_request_count: number;
  created_at: string;
  updated_at: string;
}

export interface EnvironmentsTable {
  id: string;
  project_id: string;
  key: string;
  name: string | null;
  color: string | null;
  sort_order: number;
  /** 1 when changes here ask for confirmation in the console (design record 025); 0 otherwise. */
  critical: number;
  /** 1 while direct writes to what it serves need a change request (design record 042). */
  change_requests_required: number;
  /** Approvals a change request here needs (1–5). */
  change_request_approvals: number;
  /** 1 when a Member may turn a flag off here directly despite the policy. */
  change_request_emergency_off: number;
  /**
   * The folded part of the configuration version served to SDKs: the version is this plus the
   * environment's {@link EnvironmentVersionBumpsTable} rows (`db/environment-versions.ts`).
   */
  version: number;
  created_at: string;
  updated_at: string;
}

/** One row per change that affected an environment, until folded into `environments.version`. */
export interface EnvironmentVersionBumpsTable {
  environment_id: string;
}

export interface FlagsTable {
  id: string;
  project_id: string;
  key: string;
  name: string | null;
  description: string | null;
  type: 'Boolean' | 'String' | 'Number' | 'Json';
  is_archived: number;
  client_side_visible: number;
  /** JSON array of strings. */
  tags: string;
  /** JSON object of string, number and Boolean values (flag metadata). */
  metadata: string;
  expires_at: string | null;
  owner_user_id: string | null;
  removal_pr_url: string | null;
  is_permanent: number;
  /** Bucketing salt, fixed at creation so rollouts stay sticky across renames. */
  salt: string;
  version: number;
  /** The revision of the flag's variation set, +1 on every change to it (design record 042). */
  variations_revision: number;
  created_at: string;
  updated_at: string;
}

export interface VariationsTable {
  id: string;
  flag_id: string;
  key: string;
  name: string | null;
  /** The value as JSON text (a Boolean flag's `true` is stored as `true`). */
  value: string;
  description: string | null;
  sort_order: number;
  created_at: string;
}

export interface FlagEnvironmentsTable {
  flag_id: string;
  environment_id: string;
  is_enabled: number;
  default_variation_id: string;
  off_variation_id: string;
  strategy: 'SingleVariation' | 'PercentageRollout' | 'TargetedRollout';
  /** JSON array of `{ variationId, weight }`, weights in thousandths of a percent. */
  rollout: string;
  /** JSON array of `{ prerequisiteFlagKey, expectedVariationKey }`. */
  prerequisites: string;
  /** The bucketing salt of the fallthrough rollout while an experiment runs; null: the flag's. */
  rollout_salt: string | null;
  /** +1 on every change to this configuration or its rules (design record 042). */
  revision: number;
  /**
   * The flag's `version` in this environment's SDK configuration: moves only with the
   * environment's version (design record 052).
   */
  version: number;
  updated_at: string;
}

/** A condition as stored (JSON in `rules.condition_groups` and `segments.conditions`) and returned. */
export interface StoredCondition {
  id: string;
  attribute: string;
  operator: ConditionOperator;
  values: string[];
  negate: boolean;
}

/** A condition group as stored in `rules.condition_groups`: the SDK shape plus server-assigned ids. */
export interface StoredConditionGroup {
  id: string;
  operator: 'And' | 'Or';
  conditions: StoredCondition[];
}

export interface RulesTable {
  id: string;
  flag_id: string;
  environment_id: string;
  priority: number;
  description: string | null;
  variation_id: string;
  /** The rule's whole-percent rollout, `rollout_weight` rounded down (kept for older readers). */
  rollout_percentage: number | null;
  /** The rule's rollout in thousandths of a percent (0–100000); null: every matching context. */
  rollout_weight: number | null;
  segment_id: string | null;
  /** JSON array of condition groups, with their server-assigned ids. */
  condition_groups: string;
  created_at: string;
  updated_at: string;
}

export interface SegmentsTable {
  id: string;
  project_id: string;
  key: string;
  name: string | null;
  description: string | null;
  /** JSON array of conditions. */
  conditions: string;
  condition_logic: 'And' | 'Or';
  version: number;
  created_at: string;
  updated_at: string;
}

export interface SdkKeysTable {
  id: string;
  organization_id: string;
  project_id: string;
  environment_id: string;
  key_hash: string;
  last_four: string;
  type: 'ClientSide' | 'ServerSide';
  name: string;
  description: string | null;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** A relay's credential (design record 045); only the secret's hash is stored. */
export interface RelayKeysTable {
  id: string;
  organization_id: string;
  name: string;
  key_hash: string;
  last_four: string;
  /** JSON array of project ids; null means every project. */
  project_scope: string | null;
  /** JSON array of environment keys; null means every environment of the covered projects. */
  environment_keys: string | null;
  created_at: string;
  revoked_at: string | null;
}

export interface WebhookSubscriptionsTable {
  id: string;
  organization_id: string;
  name: string;
  url: string;
  provider: 'GenericHttp';
  /** JSON arrays; empty means "all". */
  event_types: string;
  project_ids: string;
  environment_ids: string;
  /**
   * The allowlist of the caller who created it (JSON array; null: none): it receives only events
   * of these projects, and only callers whose allowlist covers it see it (design record 033).
   */
  project_scope: string | null;
  enabled: number;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: string;
  updated_at: string;
}

export interface WebhookSecretsTable {
  id: string;
  subscription_id: string;
  /**
   * The `whsec_…` secret, sealed (design record 015): HMAC signing needs the secret itself, so it
   * cannot be hashed. Only rows from before sealing hold it plain, until the next start seals them.
   */
  secret: string;
  created_at: string;
  retired_at: string | null;
}

export interface WebhookEventsTable {
  id: string;
  organization_id: string;
  project_id: string | null;
  environment_id: string | null;
  type: string;
  /** The delivery request body as JSON text, exactly as sent. */
  payload: string;
  occurred_at: string;
}

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  subscription_id: string;
  status: 'Pending' | 'Succeeded' | 'DeadLettered';
  attempt_count: number;
  next_attempt_at: string;
  /** A worker owns the delivery until this time; null when unclaimed. */
  lease_until: string | null;
  lease_owner: string | null;
  last_response_status_code: number | null;
  last_error: string | null;
  completed_at: string | null;
  created_at: string;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempt_number: number;
  attempted_at: string;
  response_status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface IdempotencyKeysTable {
  caller_id: string;
  route: string;
  key: string;
  request_hash: string;
  /** Null while the first request is still running. */
  response_status: number | null;
  response_body: string | null;
  created_at: string;
}

export interface FlagUsageTable {
  flag_id: string;
  environment_id: string;
  variation_key: string;
  /** Start of the hour, ISO-8601 UTC. */
  hour: string;
  count: number;
  last_evaluated_at: string;
}

export interface CustomEventUsageTable {
  environment_id: string;
  event_key: string;
  hour: string;
  count: number;
}

/** An organization's OpenID Connect identity provider (design record 022). */
export interface SsoConnectionsTable {
  id: string;
  organization_id: string;
  name: string;
  issuer: string;
  client_id: string;
  /** The client secret, sealed with the secrets key (design record 015). */
  client_secret: string;
  /** JSON array of lower-case e-mail domains; empty means any. */
  allowed_domains: string;
  default_role: Role;
  auto_create_users: number;
  enabled: number;
  created_at: string;
  updated_at: string;
}

/** A browser sign-in: the cookie holds the secret, the row its SHA-256. */
export interface SessionsTable {
  id: string;
  secret_hash: string;
  user_id: string;
  /** The SSO connection the session came through; null for a password sign-in. */
  sso_connection_id: string | null;
  user_agent: string | null;
  ip: string | null;
  created_at: string;
  last_seen_at: string;
  /** The absolute end of the session; the idle limit runs from `last_seen_at`. */
  expires_at: string;
  revoked_at: string | null;
}

export interface InvitationsTable {
  id: string;
  organization_id: string;
  /** Lower-case. */
  email: string;
  role: Role;
  /** JSON array of project ids; null means every project. */
  project_ids: string | null;
  token_hash: string;
  /** Who invited: a user id, or a service token's id. */
  invited_by: string;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  revoked_at: string | null;
}

/** An OpenID Connect sign-in between its start and its callback, found by its `state`. */
export interface SsoSignInsTable {
  state_hash: string;
  connection_id: string;
  code_verifier: string;
  nonce: string;
  expires_at: string;
}

/** A one-time setup code's hash (design record 040). */
export interface SetupCodesTable {
  code_hash: string;
  created_at: string;
}

/**
 * An identity a connection asserted, linked to the account it signs in as (design record 032):
 * a returning person is found by (connection, `sub`), never by e-mail alone.
 */
export interface SsoIdentitiesTable {
  connection_id: string;
  /** The identity provider's `sub` claim. */
  subject: string;
  user_id: string;
  created_at: string;
}

/** A password reset link (design record 034), found by its token's hash; it works once. */
export interface PasswordResetsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** A change request (design record 042; spec: change requests, section 2). */
export interface ChangeRequestsTable {
  id: string;
  organization_id: string;
  project_id: string;
  environment_id: string;
  /** Per project, from 1. */
  number: number;
  title: string;
  description: string;
  state: ChangeRequestState;
  /** JSON: `{ userId, email, name }` or `{ tokenId, name }`. */
  author: string;
  /** The author's user id or service token id: who may edit, and who may not review. */
  author_id: string;
  /** JSON array of changes as submitted. */
  changes: string;
  approvals_required: number;
  apply_at: string | null;
  applied_at: string | null;
  /** JSON: the actor who applied it (the author, an Admin, or the schedule's `service`). */
  applied_by: string | null;
  /** JSON `{ code, message }` when `failed`. */
  failure: string | null;
  /** JSON: the `diff` as it was when applied (before the apply's writes); null until applied. */
  applied_diff: string | null;
  created_at: string;
  updated_at: string;
}

/** A change request's states (contract: change-requests.md), written once for the API and MCP. */
export const CHANGE_REQUEST_STATES = [
  'draft',
  'open',
  'approved',
  'scheduled',
  'applied',
  'rejected',
  'cancelled',
  'failed',
] as const;
export type ChangeRequestState = (typeof CHANGE_REQUEST_STATES)[number];

export interface ChangeRequestReviewsTable {
  id: string;
  change_request_id: string;
  reviewer_id: string;
  /** JSON `{ userId, email, name }`. */
  reviewer: string;
  decision: 'approve' | 'reject';
  comment: string | null;
  /** 1 once an edit of the request withdrew this approval. */
  withdrawn: number;
  created_at: string;
}

/** A flag's release plan in one environment (design record 046); one row per flag and environment. */
export interface ReleasePlansTable {
  id: string;
  project_id: string;
  flag_id: string;
  environment_id: string;
  state: 'active' | 'paused' | 'completed' | 'rolledBack';
  /** The target variation. */
  variation_id: string;
  /** The variation the fallthrough served when the plan started: the rest of each step. */
  previous_variation_id: string;
  /** JSON `{ strategy, defaultVariationId, rollout }`: the fallthrough before the plan, for rollback. */
  fallthrough_before: string;
  /** JSON array of `{ percentage, after, startedAt }` (`startedAt` null until the step starts). */
  steps: string;
  /** JSON of the guard (spec section 5), or null. */
  guard: string | null;
  /** Index of the latest step started; -1 before the first. */
  current_step: number;
  /** When the next step falls due (ISO-8601 UTC); null unless active with a step to come. */
  next_step_at: string | null;
  paused_reason: string | null;
  /** JSON of the regression the guard detected, or null. */
  regression: string | null;
  /** When a node last tested the guard: claims the test, at most one node every few seconds. */
  guard_checked_at: string | null;
  started_at: string;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/**
 * One user of a guarded plan (design record 046): the side of their first exposure (1 target,
 * 0 the rest) and when, and their latest metric event. Either time may come first across nodes.
 */
export interface ReleasePlanExposuresTable {
  plan_id: string;
  /** base64url of the first 12 bytes of SHA-256 of the user's identity. */
  user_hash: string;
  side: number | null;
  /** Epoch ms (bigint on PostgreSQL, read back as a number). */
  exposed_ms: number | null;
  metric_ms: number | null;
}

/** A metric of a project's catalogue (contract `experiments.md`, section 1). */
export interface MetricsTable {
  id: string;
  project_id: string;
  key: string;
  name: string;
  description: string | null;
  /** The key of the `Custom` events it reads. */
  event_key: string;
  kind: 'conversion' | 'count' | 'sum' | 'mean';
  /** The `metadata` member holding the number (`sum`, `mean`); null otherwise. */
  value_property: string | null;
  direction: 'higher_is_better' | 'lower_is_better';
  window_hours: number;
  created_at: string;
  updated_at: string;
}

/** An experiment on a flag's fallthrough in one environment (contract section 2, record 064). */
export interface ExperimentsTable {
  id: string;
  project_id: string;
  flag_id: string;
  environment_id: string;
  key: string;
  name: string;
  hypothesis: string | null;
  /** JSON `[{ key, weight }]`, weights in basis points adding up to 10 000. */
  variations: string;
  control_variation: string;
  /** JSON `[{ metricId, role }]`, role `primary`, `secondary` or `guardrail`, the primary first. */
  metrics: string;
  confidence: number;
  minimum_users: number;
  salt: string;
  status: 'draft' | 'running' | 'stopped';
  /** JSON of the stop's decision: `{ ship }`, `"keepControl"` or `"inconclusive"`. */
  decision: string | null;
  /** JSON `{ strategy, defaultVariationId, rollout, rolloutSalt }`: the fallthrough at the start. */
  fallthrough_before: string | null;
  /** JSON `{ [variation]: verdict }` of the primary metric at the last check (treatments only). */
  primary_verdicts: string | null;
  /** When a node last checked the running experiment: claims the check. */
  checked_at: string | null;
  srm_detected_at: string | null;
  started_at: string | null;
  stopped_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** One exposed user of an experiment: the variation and time of the first exposure. */
export interface ExperimentExposuresTable {
  experiment_id: string;
  /** base64url of the first 12 bytes of SHA-256 of the user's identity. */
  user_hash: string;
  variation: string;
  /** Epoch ms (bigint on PostgreSQL, read back as a number). */
  exposed_ms: number;
}

/** One exposed user's events of one metric that count (within the metric's window). */
export interface ExperimentMetricUsersTable {
  experiment_id: string;
  metric_id: string;
  user_hash: string;
  /** The user's variation, copied from the exposure so that results need no join. */
  variation: string;
  events: number;
  /** Events whose value property held a finite number. */
  with_value: number;
  value_sum: number;
}

/** A point of an experiment's results series: JSON `[{ metric, variation, relativeDifference, confidenceInterval }]`. */
export interface ExperimentSeriesTable {
  experiment_id: string;
  at: string;
  points: string;
}

/** A repository whose code references a project keeps (flag-cleanup contract, section 2). */
export interface CodeReferenceRepositoriesTable {
  id: string;
  project_id: string;
  /** As the scan names it (`acme/shop`). */
  name: string;
  /** The branch counted in flag lists and removal candidates; the first uploaded until set. */
  default_branch: string | null;
  /** `https://…/{commit}/{path}#L{line}`, or null: references get no `url`. */
  source_url_template: string | null;
  created_at: string;
  updated_at: string;
}

/** One scanned branch of a repository: replaced with its references by each upload. */
export interface CodeReferenceBranchesTable {
  id: string;
  repository_id: string;
  name: string;
  commit_sha: string | null;
  scanned_at: string;
  reference_count: number;
  /** JSON array of the paths the scan could not parse (searched as text instead). */
  unparsed: string;
}

/** One place in code that reads a flag key. */
export interface CodeReferencesTable {
  branch_id: string;
  project_id: string;
  flag_key: string;
  path: string;
  line: number;
  column: number;
  kind: 'call' | 'jsx' | 'property' | 'alias' | 'literal';
  /** JSON `{ before: string[], line: string, after: string[] }`. */
  context: string;
  /** 1 when the project had no flag of this key at upload time. */
  unknown_key: number;
}

export interface Schema {
  organizations: OrganizationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  api_tokens: ApiTokensTable;
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  environment_version_bumps: EnvironmentVersionBumpsTable;
  flags: FlagsTable;
  variations: VariationsTable;
  flag_environments: FlagEnvironmentsTable;
  rules: RulesTable;
  segments: SegmentsTable;
  sdk_keys: SdkKeysTable;
  relay_keys: RelayKeysTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_secrets: WebhookSecretsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  idempotency_keys: IdempotencyKeysTable;
  flag_usage: FlagUsageTable;
  custom_event_usage: CustomEventUsageTable;
  sso_connections: SsoConnectionsTable;
  sessions: SessionsTable;
  invitations: InvitationsTable;
  sso_sign_ins: SsoSignInsTable;
  setup_codes: SetupCodesTable;
  sso_identities: SsoIdentitiesTable;
  password_resets: PasswordResetsTable;
  release_plans: ReleasePlansTable;
  release_plan_exposures: ReleasePlanExposuresTable;
  change_requests: ChangeRequestsTable;
  change_request_reviews: ChangeRequestReviewsTable;
  code_reference_repositories: CodeReferenceRepositoriesTable;
  code_reference_branches: CodeReferenceBranchesTable;
  code_references: CodeReferencesTable;
  metrics: MetricsTable;
  experiments: ExperimentsTable;
  experiment_exposures: ExperimentExposuresTable;
  experiment_metric_users: ExperimentMetricUsersTable;
  experiment_series: ExperimentSeriesTable;
}
