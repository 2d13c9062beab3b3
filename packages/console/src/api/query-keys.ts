/**
 * Every TanStack Query key the console uses, made by these factories and nowhere else (design
 * record 058), so that a query and the invalidations of what it reads cannot drift apart.
 *
 * A key is `[kind, org, project, …]` whenever it reads something of a project, and
 * `[kind, org, …]` for something of an organization: the live stream (`api/live.ts`, design
 * record 026) marks stale what a change concerns by those positions. A key made by a shorter
 * factory is the prefix of the longer ones of its kind, so invalidating `flag(org, project, key)`
 * marks stale the flag's detail, configurations, rules and release plans at once.
 */
export const queryKeys = {
  /** The caller (`GET /me`). */
  me: () => ['me'] as const,
  /** The caller's sessions. */
  mySessions: () => ['me', 'sessions'] as const,
  /** The caller's personal access tokens. */
  myTokens: () => ['me', 'tokens'] as const,
  /** What an invitation link is for (`GET /invitations/{token}`): organization, role, address. */
  invitation: (token: string) => ['invitation', token] as const,
  /** Whether the instance still needs its first run (`GET /auth/setup`). */
  setup: () => ['auth', 'setup'] as const,

  /** The organizations the caller belongs to. */
  orgs: () => ['orgs'] as const,
  /** One organization. */
  org: (org: string) => ['org', org] as const,
  /** An organization's projects. */
  projects: (org: string) => ['projects', org] as const,
  /** The project a signed-in person lands in (the first one, or none yet). */
  firstProject: (org: string | undefined) => ['first-project', org] as const,
  /** An organization's members: the prefix of {@link queryKeys.member}. */
  members: (org: string) => ['members', org] as const,
  /** One member (none while the caller is not known yet). */
  member: (org: string, userId: string | null) => ['members', org, userId] as const,
  /** An organization's pending invitations. */
  invitations: (org: string) => ['invitations', org] as const,
  /** An organization's service tokens. */
  serviceTokens: (org: string) => ['service-tokens', org] as const,
  /** An organization's relay keys. */
  relayKeys: (org: string) => ['relay-keys', org] as const,
  /** An organization's single sign-on connections. */
  ssoConnections: (org: string) => ['sso-connections', org] as const,
  /** A page of the organization's audit log, by its filters. */
  auditLog: (org: string, query: object) => ['audit-log', org, query] as const,
  /** The event types a webhook can subscribe to. */
  webhookEventTypes: (org: string) => ['webhook-event-types', org] as const,
  /** An organization's webhook subscriptions. */
  webhooks: (org: string) => ['webhooks', org] as const,
  /** One webhook subscription; without `id`, every one of them. */
  webhook: (org: string, id?: string) =>
    id === undefined ? (['webhook', org] as const) : (['webhook', org, id] as const),
  /** A webhook subscription's deliveries. */
  deliveries: (org: string, webhook: string) => ['deliveries', org, webhook] as const,
  /** One delivery, read again whenever its attempts or status change. */
  delivery: (org: string, webhook: string, delivery: string, attempts: number, status: string) =>
    ['delivery', org, webhook, delivery, attempts, status] as const,

  /** A project's environments. */
  environments: (org: string, project: string) => ['environments', org, project] as const,
  /** The SDK keys of one environment. */
  sdkKeys: (org: string, project: string, environment: string | null) =>
    ['sdk-keys', org, project, environment] as const,

  /** Every flag list of a project: the prefix of {@link queryKeys.flagList} and the others. */
  flags: (org: string, project: string) => ['flags', org, project] as const,
  /** A page of the flag list, by its filters, sort and cursor. */
  flagList: (org: string, project: string, filters: object) =>
    ['flags', org, project, filters] as const,
  /** The flags a prerequisite can name. */
  prerequisiteChoices: (org: string, project: string) =>
    ['flags', org, project, 'prerequisite-choices'] as const,
  /** Everything of every flag of a project: the prefix of {@link queryKeys.flag}. */
  everyFlag: (org: string, project: string) => ['flag', org, project] as const,
  /** Everything of one flag: the prefix of the keys below. */
  flag: (org: string, project: string, flag: string) => ['flag', org, project, flag] as const,
  /** A flag's detail (`GET …/flags/{flag}`). */
  flagDetail: (org: string, project: string, flag: string) =>
    ['flag', org, project, flag, 'detail'] as const,
  /** A flag's configurations in every environment. */
  flagEnvironments: (org: string, project: string, flag: string) =>
    ['flag', org, project, flag, 'environments'] as const,
  /** A flag's rules in one environment. */
  flagRules: (org: string, project: string, flag: string, environment: string) =>
    ['flag', org, project, flag, 'rules', environment] as const,
  /** In which environments a flag has a release plan, and their states. */
  releasePlans: (org: string, project: string, flag: string) =>
    ['flag', org, project, flag, 'release-plans'] as const,
  /** A flag's release plan in one environment. */
  releasePlan: (org: string, project: string, flag: string, environment: string) =>
    ['flag', org, project, flag, 'release-plan', environment] as const,
  /** The guard's readings of a flag's release plan in one environment. */
  releasePlanGuard: (org: string, project: string, flag: string, environment: string) =>
    ['flag', org, project, flag, 'release-plan-guard', environment] as const,
  /** A flag's experiments in one environment (experiments.md §2). */
  flagExperiments: (org: string, project: string, flag: string, environment: string) =>
    ['flag', org, project, flag, 'experiments', environment] as const,
  /** One experiment of a flag in one environment: the prefix of its results. */
  experiment: (org: string, project: string, flag: string, environment: string, key: string) =>
    ['flag', org, project, flag, 'experiment', environment, key] as const,
  /** An experiment's results (`GET …/experiments/{experiment}/results`, experiments.md §3). */
  experimentResults: (
    org: string,
    project: string,
    flag: string,
    environment: string,
    key: string,
  ) => ['flag', org, project, flag, 'experiment', environment, key, 'results'] as const,
  /** Where code reads a flag: its references by repository and branch (flag-cleanup §2). */
  flagCodeReferences: (org: string, project: string, flag: string) =>
    ['flag', org, project, flag, 'code-references'] as const,
  /** A project's scanned repositories with their branches (`GET …/code-references/repositories`). */
  codeRepositories: (org: string, project: string) => ['code-repositories', org, project] as const,
  /** A flag's history (by the flag's id). */
  history: (org: string, project: string, flagId: string) =>
    ['history', org, project, flagId] as const,
  /** The history entry a release plan's rollback refers to. */
  rollback: (org: string, project: string, flag: string, plan: string) =>
    ['history', org, project, flag, 'rollback', plan] as const,
  /** Evaluations per interval, of a project or one flag. */
  usage: (org: string, project: string, query: object) => ['usage', org, project, query] as const,
  /**
   * Removal candidates; without `staleness`, every list of them. `references` narrows them by
   * code references (`none`: safe to archive, `some`: still read; empty: all).
   */
  removalCandidates: (org: string, project: string, staleness?: string, references = '') =>
    staleness === undefined
      ? (['removal-candidates', org, project] as const)
      : (['removal-candidates', org, project, staleness, references] as const),
  /** One flag's entry among the removal candidates (stale or dead), or null. */
  removalCandidate: (org: string, project: string, flag: string) =>
    ['removal-candidates', org, project, 'of-flag', flag] as const,

  /** A project's metric catalogue (`GET …/metrics`, experiments.md §1). */
  metrics: (org: string, project: string) => ['metrics', org, project] as const,
  /**
   * The project's experiments (the Experiments page), of one status; without `status` the prefix
   * of every such list.
   */
  experiments: (org: string, project: string, status?: string) =>
    status === undefined
      ? (['experiments', org, project] as const)
      : (['experiments', org, project, status] as const),

  /** A project's segments (`GET …/segments`, see `components/segments.ts`). */
  segments: (org: string, project: string) => ['segments', org, project] as const,
  /** One segment; without `segment`, every one of the project. */
  segment: (org: string, project: string, segment?: string) =>
    segment === undefined
      ? (['segment', org, project] as const)
      : (['segment', org, project, segment] as const),
  /** Where a segment is used. */
  segmentUsage: (org: string, project: string, segment: string) =>
    ['segment-usage', org, project, segment] as const,

  /** Every change-request query of a project: the prefix of the three below. */
  changeRequests: (org: string, project: string) => ['change-requests', org, project] as const,
  /** How many change requests wait for the caller's review. */
  toReview: (org: string, project: string) =>
    ['change-requests', org, project, 'to-review-count'] as const,
  /** One tab of the change-request list. */
  changeRequestList: (org: string, project: string, tab: string) =>
    ['change-requests', org, project, 'list', tab] as const,
  /** One change request. */
  changeRequest: (org: string, project: string, number: number) =>
    ['change-requests', org, project, 'detail', number] as const,

  /** The command bar's flags matching a search. */
  commandBarFlags: (org: string, project: string, search: string) =>
    ['command-bar', org, project, search] as const,
  /** The command bar's segments matching a search. */
  commandBarSegments: (org: string, project: string, search: string) =>
    ['command-bar-segments', org, project, search] as const,

  /** The `_actions` of one environment. */
  environmentActions: (org: string, project: string, environment: string) =>
    ['actions', 'environment', org, project, environment] as const,
  /** The `_actions` of one SDK key. */
  sdkKeyActions: (org: string, project: string, environment: string | null, key: string) =>
    ['actions', 'sdk-key', org, project, environment, key] as const,
};
