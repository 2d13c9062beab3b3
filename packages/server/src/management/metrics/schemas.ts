import { Type, type Static } from 'typebox';
import { ActionsSchema } from '../../api/actions.js';
import { DescriptionSchema, KeySchema, NameSchema, Timestamp } from '../../api/fields.js';

export const METRIC_KINDS = ['conversion', 'count', 'sum', 'mean'] as const;
export type MetricKind = (typeof METRIC_KINDS)[number];
export const DIRECTIONS = ['higher_is_better', 'lower_is_better'] as const;

/** Events count within this many hours after a user's first exposure unless a metric says (contract section 1). */
export const DEFAULT_WINDOW_HOURS = 168;

export const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });

export const MetricParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  metric: Type.String(),
});

const EventKey = Type.String({ minLength: 1, maxLength: 200 });
const ValueProperty = Type.String({ minLength: 1, maxLength: 200 });
const WindowHours = Type.Integer({ minimum: 1, maximum: 24 * 366 });

/** A metric as created (contract `experiments.md`, section 1). */
export const MetricInput = Type.Object(
  {
    key: KeySchema,
    name: NameSchema,
    description: Type.Optional(DescriptionSchema),
    eventKey: EventKey,
    kind: Type.Enum([...METRIC_KINDS]),
    valueProperty: Type.Optional(Type.Union([ValueProperty, Type.Null()])),
    direction: Type.Enum([...DIRECTIONS]),
    windowHours: Type.Optional(WindowHours),
  },
  { additionalProperties: false },
);
export type MetricInput = Static<typeof MetricInput>;

/** What `PATCH` may change: everything but the key. */
export const MetricPatch = Type.Object(
  {
    name: Type.Optional(NameSchema),
    description: Type.Optional(DescriptionSchema),
    eventKey: Type.Optional(EventKey),
    kind: Type.Optional(Type.Enum([...METRIC_KINDS])),
    valueProperty: Type.Optional(Type.Union([ValueProperty, Type.Null()])),
    direction: Type.Optional(Type.Enum([...DIRECTIONS])),
    windowHours: Type.Optional(WindowHours),
  },
  { additionalProperties: false },
);
export type MetricPatch = Static<typeof MetricPatch>;

export const MetricItem = Type.Object({
  id: Type.String(),
  key: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  eventKey: Type.String(),
  kind: Type.Enum([...METRIC_KINDS]),
  valueProperty: Type.Union([Type.String(), Type.Null()]),
  direction: Type.Enum([...DIRECTIONS]),
  windowHours: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const MetricResponse = Type.Intersect([
  MetricItem,
  Type.Object({ _actions: ActionsSchema }),
]);
