/**
 * The release plan's shapes as the contract (change-requests.md §4–5) writes them. Replaced by
 * the generated `openapi.json` types once the server's routes land.
 */
export interface ReleaseStep {
  percentage: number;
  after: string;
  startedAt?: string | null;
}

export interface ReleaseGuard {
  metric: string;
  kind: 'rate';
  direction: 'lower_is_better' | 'higher_is_better';
  minimumUsers: number;
  confidence: number;
  action: 'rollback' | 'pause';
}

export type ReleasePlanState = 'active' | 'paused' | 'completed' | 'rolledBack';

export interface ReleasePlan {
  variation: string;
  steps: ReleaseStep[];
  guard?: ReleaseGuard | null;
  state: ReleasePlanState;
  currentStep: number;
  nextStepAt: string | null;
  reason?: string | null;
}

export interface GuardSide {
  exposedUsers: number;
  usersWithMetric: number;
  rate: number | null;
}

export interface GuardReport {
  target: GuardSide;
  rest: GuardSide;
  statistic: number | null;
  threshold: number;
}
