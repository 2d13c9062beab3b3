import { Type, type Static } from 'typebox';
import { ActionsSchema } from '../../api/actions.js';
import { KeySchema, NameSchema, Timestamp } from '../../api/fields.js';
import { DIRECTIONS, METRIC_KINDS } from '../metrics/schemas.js';

/** Weights are basis points (contract `experiments.md`, section 2): they add up to this. */
export const TOTAL_WEIGHT = 10_000;
export const MAX_OTHER_METRICS = 10;
export const DEFAULT_CONFIDENCE = 0.95;
export const DEFAULT_MINIMUM_USERS = 500;
export const EXPERIMENT_STATUSES = ['draft', 'running', 'stopped'] as const;

export const FlagEnvironmentParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
});

export const ExperimentParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
  experiment: Type.String(),
});

const VariationWeight = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 100 }),
    weight: Type.Integer({ minimum: 0, maximum: TOTAL_WEIGHT }),
  },
  { additionalProperties: false },
);
const MetricKeys = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  maxItems: MAX_OTHER_METRICS,
});
const Hypothesis = Type.Union([Type.String({ maxLength: 4000 }), Type.Null()]);
const Confidence = Type.Number({ minimum: 0.8, maximum: 0.999 });
const MinimumUsers = Type.Integer({ minimum: 100, maximum: 100_000_000 });
const Salt = Type.String({ minLength: 1, maxLength: 100 });

/** An experiment as created (contract section 2). */
export const ExperimentInput = Type.Object(
  {
    key: KeySchema,
    name: NameSchema,
    hypothesis: Type.Optional(Hypothesis),
    variations: Type.Array(VariationWeight, { minItems: 1, maxItems: 20 }),
    controlVariation: Type.String({ minLength: 1, maxLength: 100 }),
    primaryMetric: Type.String({ minLength: 1, maxLength: 100 }),
    secondaryMetrics: Type.Optional(MetricKeys),
    guardrailMetrics: Type.Optional(MetricKeys),
    confidence: Type.Optional(Confidence),
    minimumUsers: Type.Optional(MinimumUsers),
    salt: Type.Optional(Salt),
  },
  { additionalProperties: false },
);
export type ExperimentInput = Static<typeof ExperimentInput>;

/** What `PATCH` may change of a draft: everything but the key. */
export const ExperimentPatch = Type.Partial(
  Type.Object(
    {
      name: NameSchema,
      hypothesis: Hypothesis,
      variations: Type.Array(VariationWeight, { minItems: 1, maxItems: 20 }),
      controlVariation: Type.String({ minLength: 1, maxLength: 100 }),
      primaryMetric: Type.String({ minLength: 1, maxLength: 100 }),
      secondaryMetrics: MetricKeys,
      guardrailMetrics: MetricKeys,
      confidence: Confidence,
      minimumUsers: MinimumUsers,
      salt: Salt,
    },
    { additionalProperties: false },
  ),
);
export type ExperimentPatch = Static<typeof ExperimentPatch>;

/** How a stop ends the experiment: ship a variation, keep the control, or call it inconclusive. */
export const Decision = Type.Union([
  Type.Object(
    { ship: Type.String({ minLength: 1, maxLength: 100 }) },
    { additionalProperties: false },
  ),
  Type.Literal('keepControl'),
  Type.Literal('inconclusive'),
]);
export type Decision = Static<typeof Decision>;

export const StopInput = Type.Object({ decision: Decision }, { additionalProperties: false });

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  status: Type.Optional(Type.Enum([...EXPERIMENT_STATUSES])),
});

const Verdict = Type.Enum(['better', 'worse', 'inconclusive']);

export const ExperimentItem = Type.Object({
  id: Type.String(),
  key: Type.String(),
  name: Type.String(),
  hypothesis: Type.Union([Type.String(), Type.Null()]),
  flagKey: Type.String(),
  environmentKey: Type.String(),
  variations: Type.Array(Type.Object({ key: Type.String(), weight: Type.Integer() })),
  controlVariation: Type.String(),
  primaryMetric: Type.String(),
  secondaryMetrics: Type.Array(Type.String()),
  guardrailMetrics: Type.Array(Type.String()),
  confidence: Type.Number(),
  minimumUsers: Type.Integer(),
  salt: Type.String(),
  status: Type.Enum([...EXPERIMENT_STATUSES]),
  decision: Type.Union([Decision, Type.Null()]),
  startedAt: Type.Union([Timestamp, Type.Null()]),
  stoppedAt: Type.Union([Timestamp, Type.Null()]),
  srmDetectedAt: Type.Union([Timestamp, Type.Null()]),
  primaryVerdicts: Type.Union([Type.Record(Type.String(), Verdict), Type.Null()]),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const ExperimentResponse = Type.Intersect([
  ExperimentItem,
  Type.Object({
    /** The change request a start or stop opened in an environment that requires them. */
    changeRequest: Type.Optional(Type.Object({ number: Type.Integer() })),
    _actions: ActionsSchema,
  }),
]);

const Interval = Type.Tuple([Type.Number(), Type.Number()]);

const VariationFigures = Type.Object({
  users: Type.Integer(),
  usersWithEvent: Type.Integer(),
  value: Type.Number(),
  standardError: Type.Number(),
  absoluteDifference: Type.Optional(Type.Number()),
  relativeDifference: Type.Optional(Type.Number()),
  confidenceInterval: Type.Optional(Interval),
  pValue: Type.Optional(Type.Number()),
  verdict: Type.Optional(Verdict),
});

/** The results (contract section 3). */
export const ResultsResponse = Type.Object({
  status: Type.Enum([...EXPERIMENT_STATUSES]),
  startedAt: Type.Union([Timestamp, Type.Null()]),
  computedAt: Timestamp,
  srm: Type.Object({
    pValue: Type.Number(),
    detected: Type.Boolean(),
    expected: Type.Record(Type.String(), Type.Number()),
    observed: Type.Record(Type.String(), Type.Integer()),
  }),
  variations: Type.Array(
    Type.Object({
      key: Type.String(),
      exposedUsers: Type.Integer(),
      control: Type.Optional(Type.Boolean()),
    }),
  ),
  metrics: Type.Array(
    Type.Object({
      key: Type.String(),
      name: Type.String(),
      kind: Type.Enum([...METRIC_KINDS]),
      direction: Type.Enum([...DIRECTIONS]),
      role: Type.Enum(['primary', 'secondary', 'guardrail']),
      eventsWithoutValue: Type.Integer(),
      byVariation: Type.Record(Type.String(), VariationFigures),
    }),
  ),
  series: Type.Array(
    Type.Object({
      at: Timestamp,
      metric: Type.String(),
      variation: Type.String(),
      relativeDifference: Type.Number(),
      confidenceInterval: Interval,
    }),
  ),
});
export type Results = Static<typeof ResultsResponse>;
