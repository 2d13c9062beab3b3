/**
 * The release plan's shapes as the server's schemas write them (change-requests.md §4–5).
 * Replaced by the generated `openapi.json` types once the server's routes land.
 */
export interface ReleaseStep {
  percentage: number;
  after: string;
  startedAt: string | null;
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

export interface GuardSide {
  variations: string[];
  exposedUsers: number;
  usersWithMetric: number;
  rate: number | null;
}

export interface Regression {
  detectedAt: string;
  action: 'rollback' | 'pause';
  target: GuardSide;
  rest: GuardSide;
  statistic: number;
  threshold: number;
}

export interface ReleasePlan {
  id: string;
  variation: string;
  previousVariation: string;
  steps: ReleaseStep[];
  guard: ReleaseGuard | null;
  state: ReleasePlanState;
  currentStep: number | null;
  nextStepAt: string | null;
  startedAt: string;
  pausedReason: string | null;
  regression: Regression | null;
  warnings?: string[];
  _actions: Record<string, { allowed: boolean; reason?: string | null } | undefined>;
}

export interface GuardReport {
  metric: string;
  target: GuardSide;
  rest: GuardSide;
  testing: boolean;
  statistic: number;
  threshold: number;
  pValue: number;
  regressionDetected: boolean;
  checkedAt: string | null;
}
