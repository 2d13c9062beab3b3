import { Type, type Static } from 'typebox';
import { ActionsSchema } from '../../api/actions.js';
import { NullableString, Timestamp } from '../../api/fields.js';
import { MAX_STEPS } from './plan-rules.js';

export const FlagEnvParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
});

/** A step as written: the wait is an ISO 8601 duration from the previous step's start. */
export const StepInput = Type.Object(
  {
    percentage: Type.Number({ exclusiveMinimum: 0, maximum: 100 }),
    after: Type.String({ minLength: 1, maxLength: 64 }),
  },
  { additionalProperties: false },
);

/**
 * The guard (spec: change requests, section 5); omitted members take their defaults. It names the
 * `Custom` event it watches (`metric`), or a conversion metric of the project's catalogue
 * (`metricKey`, contract `experiments.md` section 1), whose event key and direction it takes.
 */
export const GuardInput = Type.Object(
  {
    metric: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    metricKey: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    kind: Type.Optional(Type.Literal('rate')),
    direction: Type.Optional(Type.Enum(['lower_is_better', 'higher_is_better'])),
    minimumUsers: Type.Optional(Type.Integer({ minimum: 100, maximum: 100_000_000 })),
    confidence: Type.Optional(Type.Number({ minimum: 0.8, maximum: 0.999 })),
    action: Type.Optional(Type.Enum(['rollback', 'pause'])),
  },
  { additionalProperties: false },
);

/** `PUT …/release-plan`: the target variation's key, the steps, and an optional guard. */
export const PlanInput = Type.Object(
  {
    variation: Type.String({ minLength: 1, maxLength: 100 }),
    steps: Type.Array(StepInput, { minItems: 1, maxItems: MAX_STEPS }),
    guard: Type.Optional(Type.Union([GuardInput, Type.Null()])),
  },
  { additionalProperties: false },
);
export type PlanInput = Static<typeof PlanInput>;

const Guard = Type.Object({
  metric: Type.String(),
  metricKey: Type.Optional(Type.String()),
  kind: Type.Literal('rate'),
  direction: Type.Enum(['lower_is_better', 'higher_is_better']),
  minimumUsers: Type.Integer(),
  confidence: Type.Number(),
  action: Type.Enum(['rollback', 'pause']),
});

/** One side's figures and the statistic (spec section 5: `GET …/release-plan/guard`). */
const SideFigures = Type.Object({
  variations: Type.Array(Type.String()),
  exposedUsers: Type.Integer(),
  usersWithMetric: Type.Integer(),
  rate: Type.Union([Type.Number(), Type.Null()]),
});

export const GuardReading = Type.Object({
  metric: Type.String(),
  direction: Type.Enum(['lower_is_better', 'higher_is_better']),
  minimumUsers: Type.Integer(),
  confidence: Type.Number(),
  action: Type.Enum(['rollback', 'pause']),
  target: SideFigures,
  rest: SideFigures,
  /** Whether both sides have `minimumUsers` exposed users, so the test is running. */
  testing: Type.Boolean(),
  /** The mixture likelihood ratio Λ (design record 046); 1 before any evidence. */
  statistic: Type.Number(),
  /** Λ at which the guard stops the plan: 1 / (1 − confidence). */
  threshold: Type.Number(),
  /** The always-valid p-value min(1, 1/Λ). */
  pValue: Type.Number(),
  regressionDetected: Type.Boolean(),
  checkedAt: Type.Union([Timestamp, Type.Null()]),
});
export type GuardReading = Static<typeof GuardReading>;

export const Regression = Type.Object({
  detectedAt: Timestamp,
  action: Type.Enum(['rollback', 'pause']),
  target: SideFigures,
  rest: SideFigures,
  statistic: Type.Number(),
  threshold: Type.Number(),
});

export const PlanResponse = Type.Object({
  id: Type.String(),
  flagKey: Type.String(),
  environmentKey: Type.String(),
  variation: Type.String(),
  previousVariation: Type.String(),
  steps: Type.Array(
    Type.Object({
      percentage: Type.Number(),
      after: Type.String(),
      startedAt: Type.Union([Timestamp, Type.Null()]),
    }),
  ),
  guard: Type.Union([Guard, Type.Null()]),
  state: Type.Enum(['active', 'paused', 'completed', 'rolledBack']),
  currentStep: Type.Union([Type.Integer(), Type.Null()]),
  nextStepAt: Type.Union([Timestamp, Type.Null()]),
  startedAt: Timestamp,
  pausedReason: NullableString,
  regression: Type.Union([Regression, Type.Null()]),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  /** Things worth knowing that do not stop the plan (e.g. a metric no event has used yet). */
  warnings: Type.Optional(Type.Array(Type.String())),
  _actions: ActionsSchema,
});
