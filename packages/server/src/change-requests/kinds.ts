import type { ValidateFunction } from 'ajv';
import { Type, type Static, type TSchema } from 'typebox';
import type { Mutation } from '../db/mutate.js';
import { schemaCompiler } from '../http/schema-validator.js';
import { fieldProblems } from '../http/validation-messages.js';
import {
  DocumentCondition,
  DocumentFlagEnvironment,
  DocumentVariation,
  type DocumentFlag,
  type ProjectDocument,
} from '../writes/document.js';
import {
  documentFlag,
  documentFlagEnvironment,
  documentSegment,
  type EnvironmentRow,
  type FlagState,
  type ProjectState,
} from '../writes/project-state.js';
import { KeySchema } from '../api/fields.js';
import { flagEnvironmentTarget, type FlagEnvironmentTarget } from '../api/path-resources.js';
import { RELEASE_PLAN_ACTOR } from '../management/release-plans/queries.js';
import { PlanInput } from '../management/release-plans/schemas.js';
import { checkPlanInput, startPlan, withGuardMetric } from '../management/release-plans/start.js';
import { LOGICAL_OPERATORS, type FieldProblems } from '../management/targeting/conditions.js';
import { startExperiment, stopExperiment } from '../management/experiments/lifecycle.js';
import { findExperiment } from '../management/experiments/queries.js';
import { Decision } from '../management/experiments/schemas.js';
import { ApiError } from '../errors.js';

/**
 * The kinds of change a change request holds (spec: change requests, section 2; design record
 * 042). Each kind says what its change looks like, reads the current state of its target in the
 * same shape (the diff's `before`), gives the target's revision (the optimistic-concurrency
 * token), and contributes its write to the apply. A release plan is one more entry here.
 */
export interface ChangeKind<C extends { kind: string } = { kind: string }> {
  readonly kind: C['kind'];
  /** The change's JSON shape, `kind` included. */
  readonly schema: TSchema;
  /** The target, for messages: `flag "new-checkout"`. */
  target(change: C): string;
  /**
   * The target as it is now, in the shape of the change's desired state; null when the target
   * is gone, or (a flag) archived: a change to it cannot apply.
   */
  before(state: ProjectState, environment: EnvironmentRow, change: C): unknown;
  /** The change's desired state (the diff's `after`). */
  after(change: C): unknown;
  /** The target's revision now; null when the target is gone or archived. */
  revision(state: ProjectState, environment: EnvironmentRow, change: C): number | null;
  /** The revision the change was written against; null when the kind has none. */
  baseRevision(change: C): number | null;
  /**
   * Adds the change to the apply: to the flags-as-code document every such change is written
   * through, or as a write of its own run after it.
   */
  plan(apply: ApplyPlan, change: C, index: number): void;
}

/**
 * What an apply writes: one flags-as-code document reconciled in the apply's transaction (the
 * same write functions, events and audit entries as direct writes), then the writes of kinds
 * that are not project configuration.
 */
export interface ApplyPlan {
  readonly state: ProjectState;
  readonly environment: EnvironmentRow;
  readonly document: ProjectDocument;
  /** Where each change's desired state sits in {@link document}: `flags[0].variations` → 2. */
  readonly origins: Map<string, { index: number; member: string }>;
  readonly writes: ((m: Mutation) => Promise<void>)[];
}

const BaseRevision = Type.Integer({
  minimum: 0,
  description: 'The revision of the target the change was written against.',
});

const FlagChange = Type.Object(
  {
    kind: Type.Literal('flag'),
    flagKey: KeySchema,
    baseRevision: BaseRevision,
    configuration: DocumentFlagEnvironment,
  },
  { additionalProperties: false },
);
type FlagChange = Static<typeof FlagChange>;

const SegmentDefinition = Type.Object(
  {
    conditionLogic: Type.Optional(Type.Enum(LOGICAL_OPERATORS, { description: 'Default And.' })),
    conditions: Type.Optional(Type.Array(DocumentCondition, { maxItems: 100 })),
  },
  { additionalProperties: false },
);

const SegmentChange = Type.Object(
  {
    kind: Type.Literal('segment'),
    segmentKey: KeySchema,
    baseRevision: BaseRevision,
    definition: SegmentDefinition,
  },
  { additionalProperties: false },
);
type SegmentChange = Static<typeof SegmentChange>;

const VariationsChange = Type.Object(
  {
    kind: Type.Literal('variations'),
    flagKey: KeySchema,
    baseRevision: BaseRevision,
    variations: Type.Array(DocumentVariation, { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false },
);
type VariationsChange = Static<typeof VariationsChange>;

/** Starts a release plan of a flag in the request's environment (spec section 4; design record 046). */
const ReleasePlanChange = Type.Object(
  { kind: Type.Literal('releasePlan'), flagKey: KeySchema, plan: PlanInput },
  { additionalProperties: false },
);
type ReleasePlanChange = Static<typeof ReleasePlanChange>;

/**
 * Starts or stops an experiment of a flag in the request's environment (contract
 * `experiments.md`, section 2; design record 064).
 */
const ExperimentChange = Type.Object(
  {
    kind: Type.Literal('experiment'),
    flagKey: KeySchema,
    experimentKey: KeySchema,
    action: Type.Enum(['start', 'stop']),
    decision: Type.Optional(Decision),
  },
  { additionalProperties: false },
);
type ExperimentChange = Static<typeof ExperimentChange>;

/** One change of a request, of any kind in {@link CHANGE_KINDS}. */
export type Change =
  FlagChange | SegmentChange | VariationsChange | ReleasePlanChange | ExperimentChange;

function flagState(state: ProjectState, key: string): FlagState | undefined {
  return state.flags.find((flag) => flag.row.key === key);
}

function segmentKeys(state: ProjectState): Map<string, string> {
  return new Map(state.segments.map((segment) => [segment.id, segment.key]));
}

/** The flag in the request's environment, as the writes of release plans and experiments name it. */
function targetIn(apply: ApplyPlan, flag: FlagState): FlagEnvironmentTarget {
  const { project } = apply.state;
  return flagEnvironmentTarget({
    org: { id: project.organization_id },
    project,
    environment: apply.environment,
    flag: flag.row,
  });
}

/** The flag's entry in the apply's document, made from its stored state on first use. */
function documentEntry(apply: ApplyPlan, key: string): { entry: DocumentFlag; at: number } {
  const flags = (apply.document.flags ??= []);
  const at = flags.findIndex((flag) => flag.key === key);
  const existing = flags[at];
  if (existing) return { entry: existing, at };
  const stored = flagState(apply.state, key);
  if (!stored) throw new Error(`change request: flag "${key}" unchecked`);
  // Only this environment's configuration: the others are left as they are.
  const entry = documentFlag(stored, [apply.environment], segmentKeys(apply.state));
  entry.environments = {};
  flags.push(entry);
  return { entry, at: flags.length - 1 };
}

const flagKind: ChangeKind<FlagChange> = {
  kind: 'flag',
  schema: FlagChange,
  target: (change) => `flag "${change.flagKey}"`,
  before(state, environment, change) {
    const flag = flagState(state, change.flagKey);
    const configuration = flag?.configurations.get(environment.id);
    if (!flag || flag.row.is_archived === 1 || !configuration) return null;
    return documentFlagEnvironment(
      configuration,
      flag.rules.get(environment.id) ?? [],
      new Map(flag.variations.map((v) => [v.id, v.key])),
      segmentKeys(state),
    );
  },
  after: (change) => change.configuration,
  revision(state, environment, change) {
    const flag = flagState(state, change.flagKey);
    if (!flag || flag.row.is_archived === 1) return null;
    return flag.configurations.get(environment.id)?.revision ?? null;
  },
  baseRevision: (change) => change.baseRevision,
  plan(apply, change, index) {
    const { entry, at } = documentEntry(apply, change.flagKey);
    entry.environments = { ...entry.environments, [apply.environment.key]: change.configuration };
    apply.origins.set(`flags[${at}].environments.${apply.environment.key}`, {
      index,
      member: 'configuration',
    });
  },
};

const variationsKind: ChangeKind<VariationsChange> = {
  kind: 'variations',
  schema: VariationsChange,
  target: (change) => `variations of flag "${change.flagKey}"`,
  before(state, _environment, change) {
    const flag = flagState(state, change.flagKey);
    if (!flag || flag.row.is_archived === 1) return null;
    return documentFlag(flag, [], segmentKeys(state)).variations;
  },
  after: (change) => change.variations,
  revision(state, _environment, change) {
    const flag = flagState(state, change.flagKey);
    return !flag || flag.row.is_archived === 1 ? null : flag.row.variations_revision;
  },
  baseRevision: (change) => change.baseRevision,
  plan(apply, change, index) {
    const { entry, at } = documentEntry(apply, change.flagKey);
    entry.variations = change.variations;
    apply.origins.set(`flags[${at}].variations`, { index, member: 'variations' });
  },
};

const segmentKind: ChangeKind<SegmentChange> = {
  kind: 'segment',
  schema: SegmentChange,
  target: (change) => `segment "${change.segmentKey}"`,
  before(state, _environment, change) {
    const segment = state.segments.find((s) => s.key === change.segmentKey);
    if (!segment) return null;
    const { conditionLogic, conditions } = documentSegment(segment);
    return { conditionLogic, conditions };
  },
  after: (change) => change.definition,
  revision(state, _environment, change) {
    return state.segments.find((s) => s.key === change.segmentKey)?.version ?? null;
  },
  baseRevision: (change) => change.baseRevision,
  plan(apply, change, index) {
    const segment = apply.state.segments.find((s) => s.key === change.segmentKey);
    if (!segment) throw new Error(`change request: segment "${change.segmentKey}" unchecked`);
    const segments = (apply.document.segments ??= []);
    // Name and description stay; the definition is who is in the segment.
    segments.push({
      ...documentSegment(segment),
      conditionLogic: change.definition.conditionLogic ?? 'And',
      conditions: change.definition.conditions ?? [],
    });
    apply.origins.set(`segments[${segments.length - 1}]`, { index, member: 'definition' });
  },
};

/**
 * A release plan, started when the request is applied (spec section 4: in an environment that
 * requires change requests a plan is started by one; its steps then advance without further
 * approval). Before is the fallthrough the plan would move from; it has no revision of its own
 * (the plan is checked against the flag as it is at apply time), so it conflicts only when the
 * flag is gone or archived.
 */
const releasePlanKind: ChangeKind<ReleasePlanChange> = {
  kind: 'releasePlan',
  schema: ReleasePlanChange,
  target: (change) => `release plan of flag "${change.flagKey}"`,
  before(state, environment, change) {
    const flag = flagState(state, change.flagKey);
    const configuration = flag?.configurations.get(environment.id);
    if (!flag || flag.row.is_archived === 1 || !configuration) return null;
    const key = (id: string) => flag.variations.find((v) => v.id === id)?.key ?? id;
    return {
      fallthrough:
        configuration.strategy === 'SingleVariation'
          ? { variation: key(configuration.default_variation_id) }
          : {
              rollout: (
                JSON.parse(configuration.rollout) as { variationId: string; weight: number }[]
              ).map((weight) => ({ variation: key(weight.variationId), weight: weight.weight })),
            },
    };
  },
  after: (change) => change.plan,
  revision(state, environment, change) {
    const flag = flagState(state, change.flagKey);
    if (!flag || flag.row.is_archived === 1) return null;
    return flag.configurations.get(environment.id)?.revision ?? null;
  },
  baseRevision: () => null,
  plan(apply, change, index) {
    const flag = flagState(apply.state, change.flagKey);
    const configuration = flag?.configurations.get(apply.environment.id);
    if (!flag || !configuration)
      throw new Error(`change request: flag "${change.flagKey}" unchecked`);
    const at = `changes[${index}].plan.`;
    // A guard naming no catalogue metric is checked now; one naming one, when its metric is read.
    if (!change.plan.guard?.metricKey)
      checkPlanInput(change.plan, flag.variations, configuration, at);
    const { project } = apply.state;
    apply.writes.push(async (m) => {
      const values = checkPlanInput(
        await withGuardMetric(m.trx, project.id, change.plan, at),
        flag.variations,
        configuration,
        at,
      );
      await startPlan(
        m,
        targetIn(apply, flag),
        { ...values, createdBy: RELEASE_PLAN_ACTOR.userId },
        new Date(m.now),
      );
    });
  },
};

/**
 * An experiment's start or stop, done when the request is applied (contract section 2: in an
 * environment that requires change requests, starting an experiment and the fallthrough its stop
 * writes go through one). Before and after are its status; like a release plan it has no revision
 * of its own and is checked against the experiment as it is at apply time.
 */
const experimentKind: ChangeKind<ExperimentChange> = {
  kind: 'experiment',
  schema: ExperimentChange,
  target: (change) => `experiment "${change.experimentKey}" of flag "${change.flagKey}"`,
  before(state, environment, change) {
    const flag = flagState(state, change.flagKey);
    if (!flag || flag.row.is_archived === 1 || !flag.configurations.has(environment.id))
      return null;
    return {
      experiment: change.experimentKey,
      status: change.action === 'start' ? 'draft' : 'running',
    };
  },
  after: (change) => ({
    experiment: change.experimentKey,
    status: change.action === 'start' ? 'running' : 'stopped',
    ...(change.action === 'stop' ? { decision: change.decision ?? 'inconclusive' } : {}),
  }),
  revision(state, environment, change) {
    const flag = flagState(state, change.flagKey);
    if (!flag || flag.row.is_archived === 1) return null;
    return flag.configurations.get(environment.id)?.revision ?? null;
  },
  baseRevision: () => null,
  plan(apply, change) {
    const flag = flagState(apply.state, change.flagKey);
    if (!flag) throw new Error(`change request: flag "${change.flagKey}" unchecked`);
    const { environment } = apply;
    apply.writes.push(async (m) => {
      const target = targetIn(apply, flag);
      const experiment = await findExperiment(
        m.trx,
        flag.row.id,
        environment.id,
        change.experimentKey,
      );
      if (!experiment)
        throw new ApiError(
          'conflict',
          `Experiment "${change.experimentKey}" of flag "${change.flagKey}" in "${environment.key}" is gone.`,
        );
      if (change.action === 'start') await startExperiment(m, target, experiment);
      else await stopExperiment(m, target, experiment, change.decision ?? 'inconclusive');
    });
  },
};

/** Every kind of change, by its `kind`. */
export const CHANGE_KINDS: ReadonlyMap<string, ChangeKind> = new Map<string, ChangeKind>(
  (
    [flagKind, variationsKind, segmentKind, releasePlanKind, experimentKind] as ChangeKind<never>[]
  ).map((kind) => [kind.kind, kind as unknown as ChangeKind]),
);

const compile = schemaCompiler({ coerceTypes: false, useDefaults: false });
const validators = new Map<string, ValidateFunction>(
  [...CHANGE_KINDS].map(([name, kind]) => [name, compile(kind.schema)]),
);

/** The kind of a change known to have passed {@link checkChangeShapes}. */
export function kindOf(change: Change): ChangeKind {
  const kind = CHANGE_KINDS.get(change.kind);
  if (!kind) throw new Error(`change request: unknown kind "${change.kind}" unchecked`);
  return kind;
}

/**
 * Checks each change's shape against its kind: an unknown kind, a missing or malformed member,
 * each reported at its path (`changes[2].configuration.rules[0].variation`).
 */
export function checkChangeShapes(changes: readonly unknown[], problems: FieldProblems): void {
  changes.forEach((change, index) => {
    const at = `changes[${index}]`;
    const name = (change as { kind?: unknown } | null)?.kind;
    const validate = typeof name === 'string' ? validators.get(name) : undefined;
    if (!validate) {
      problems.add(
        `${at}.kind`,
        `must be one of ${[...CHANGE_KINDS.keys()].join(', ')}${typeof name === 'string' ? `, not "${name}"` : ''}`,
      );
      return;
    }
    if (validate(change)) return;
    for (const { field, message } of fieldProblems(validate.errors ?? [], 'body'))
      problems.add(field === '' ? at : `${at}.${bracketed(field)}`, message);
  });
}

/** `rules.0.variation` as `rules[0].variation`. */
function bracketed(dotted: string): string {
  return dotted.replace(/\.(\d+)(?=\.|$)/g, '[$1]').replace(/^(\d+)(?=\.|$)/, '[$1]');
}

/** The target a change names: a request holds at most one change per target. */
export function targetKey(change: Change): string {
  return change.kind === 'segment'
    ? `segment:${change.segmentKey}`
    : `${change.kind}:${change.flagKey}`;
}
