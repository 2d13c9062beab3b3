/**
 * The webhook event catalogue (spec: Events; design record 005 for the prefixes the spec
 * leaves open) and the shape of one delivery request.
 */
export const EVENT_TYPES = [
  'flag.created',
  'flag.updated',
  'flag.toggled',
  'flag.archived',
  'flag.restored',
  'flag.deleted',
  'flag.environment_config.updated',
  'flag.rule.created',
  'flag.rule.updated',
  'flag.rule.deleted',
  'flag.variation.created',
  'flag.variation.updated',
  'flag.variation.deleted',
  'segment.created',
  'segment.updated',
  'segment.deleted',
  'environment.created',
  'environment.updated',
  'environment.deleted',
  'project.created',
  'project.updated',
  'project.deleted',
  'sdk_key.created',
  'sdk_key.updated',
  'sdk_key.deleted',
  'api_token.created',
  'api_token.updated',
  'api_token.deleted',
  'relay_key.created',
  'relay_key.revoked',
  'organization.updated',
  'member.created',
  'member.updated',
  'member.deleted',
  'invitation.created',
  'invitation.accepted',
  'invitation.deleted',
  'sso_connection.created',
  'sso_connection.updated',
  'sso_connection.deleted',
  'change_request.opened',
  'change_request.approved',
  'change_request.rejected',
  'change_request.scheduled',
  'change_request.applied',
  'change_request.failed',
  'change_request.cancelled',
  'release_plan.started',
  'release_plan.advanced',
  'release_plan.paused',
  'release_plan.resumed',
  'release_plan.completed',
  'release_plan.rolled_back',
  'release_plan.regression_detected',
  'release_plan.deleted',
  'code_references.updated',
  'metric.created',
  'metric.updated',
  'metric.deleted',
  'experiment.created',
  'experiment.updated',
  'experiment.deleted',
  'experiment.started',
  'experiment.stopped',
  'experiment.srm_detected',
] as const;

/**
 * Changes recorded in the audit log but delivered to no subscription (issue 43): what is done to
 * webhook subscriptions themselves. A subscription receives every change of the organization, so
 * its changes are audited; they are not offered as event types to subscribe to, and a receiver
 * never hears of a secret being added or retired (design record 005).
 */
export const AUDIT_ONLY_EVENT_TYPES = [
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret.created',
  'webhook.secret.retired',
  // The spec's change-request events are the states a request reaches; unscheduling returns it
  // to `approved`, which is recorded without telling subscribers that it was approved again.
  'change_request.unscheduled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number] | (typeof AUDIT_ONLY_EVENT_TYPES)[number];

const AUDIT_ONLY: ReadonlySet<string> = new Set(AUDIT_ONLY_EVENT_TYPES);

/** Whether events of `type` go to the audit log only, never to a subscription. */
export function isAuditOnly(type: string): boolean {
  return AUDIT_ONLY.has(type);
}

/**
 * Events that happen within one environment; only these are narrowed by a subscription's
 * environment filter (spec: Subscription filtering).
 */
export const ENVIRONMENT_SCOPED_EVENT_TYPES: ReadonlySet<EventType> = new Set([
  'flag.toggled',
  'flag.environment_config.updated',
  'flag.rule.created',
  'flag.rule.updated',
  'flag.rule.deleted',
  'environment.created',
  'environment.updated',
  'environment.deleted',
  'sdk_key.created',
  'sdk_key.updated',
  'sdk_key.deleted',
  // A change request, a release plan and an experiment each belong to one environment: all their
  // events do.
  ...EVENT_TYPES.filter(
    (type) =>
      type.startsWith('change_request.') ||
      type.startsWith('release_plan.') ||
      type.startsWith('experiment.'),
  ),
]);

export interface EntityRef {
  type: string;
  id: string;
}

export interface PropertyChange {
  property: string;
  from: string | null;
  to: string | null;
}

/** Who made a change. A service token appears with its own id and name and no email. */
export interface Actor {
  userId: string;
  email: string | null;
  name: string | null;
}

/** The change request a change was applied by, as its events name it (design record 042). */
export interface ChangeRequestRef {
  id: string;
  number: number;
}

/** A project or environment an event happened in: its id, and its key for the live feed. */
export interface KeyedRef {
  id: string;
  key: string;
}

/**
 * What a mutation emits; the outbox adds `id`, `occurredAt`, `organizationId` and `actor`. The
 * keys ride along for the console's live feed only (design record 026): webhooks carry ids.
 */
export interface NewEvent {
  type: EventType;
  project?: KeyedRef;
  environment?: KeyedRef;
  /**
   * `key`: the entity's key (an organization's slug) if it has one and its row still exists when
   * the event is written; null otherwise (a deletion written after its row is gone).
   */
  entity: EntityRef & { key: string | null };
  child?: EntityRef;
  changes?: PropertyChange[];
  description: string;
  children?: EntityRef[];
  /** A flag turned off directly in an environment that requires change requests (emergency off). */
  bypassedChangeRequest?: boolean;
  /**
   * The change request a `change_request.*` event is about (the events of the changes it applies
   * take it from the mutation instead).
   */
  changeRequest?: ChangeRequestRef;
}

/**
 * An event about a flag in one environment — its release plan's, its experiment's: environment-
 * scoped, the flag as entity and `child` as what it is about.
 */
export function flagEnvironmentEvent(
  target: { project: KeyedRef; environment: KeyedRef; flag: KeyedRef },
  child: EntityRef,
  type: EventType,
  description: string,
  changes: PropertyChange[] = [],
): NewEvent {
  return {
    type,
    project: target.project,
    environment: target.environment,
    entity: { type: 'flag', id: target.flag.id, key: target.flag.key },
    child,
    changes,
    description,
  };
}

/** The delivery request body (spec: Delivery request). */
export interface EventPayload {
  type: EventType;
  occurredAt: string;
  organizationId: string;
  projectId: string | null;
  environmentId: string | null;
  actor: Actor;
  entity: EntityRef;
  child?: EntityRef;
  changes: PropertyChange[];
  description: string;
  children?: EntityRef[];
  /** Present on `change_request.*` events and on the events of changes a change request applied. */
  changeRequest?: ChangeRequestRef;
  /** Present (true) on an emergency off that went past a change-request policy. */
  bypassedChangeRequest?: true;
}

/** Lists the changed properties between two records, in the API's PascalCase property names. */
export function diffProperties(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): PropertyChange[] {
  const changes: PropertyChange[] = [];
  for (const name of Object.keys(after)) {
    const from = stringify(before[name]);
    const to = stringify(after[name]);
    if (from !== to)
      changes.push({ property: name.charAt(0).toUpperCase() + name.slice(1), from, to });
  }
  return changes;
}

function stringify(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}
