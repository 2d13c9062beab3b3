import { type FlagEnvironmentTarget } from '../../api/path-resources.js';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { ExperimentsTable, Schema } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import type { Mutation } from '../../db/mutate.js';
import { flagEnvironmentEvent, type EventType, type PropertyChange } from '../../events/types.js';
import type { Decision } from './schemas.js';

export type ExperimentRow = Selectable<ExperimentsTable>;
type Db = Kysely<Schema> | Transaction<Schema>;

export type MetricRole = 'primary' | 'secondary' | 'guardrail';

/** A metric of an experiment as stored: by id, so that it survives renames. */
export interface ExperimentMetricRef {
  metricId: string;
  role: MetricRole;
}

/** A variation's share of the split, in basis points. */
export interface VariationWeight {
  key: string;
  weight: number;
}

/** The flag's fallthrough when the experiment started, restored by an `inconclusive` stop. */
export interface StoredFallthrough {
  strategy: 'SingleVariation' | 'PercentageRollout' | 'TargetedRollout';
  defaultVariationId: string;
  rollout: string;
  rolloutSalt: string | null;
}

export function experimentVariations(row: Pick<ExperimentRow, 'variations'>): VariationWeight[] {
  return JSON.parse(row.variations) as VariationWeight[];
}

export function experimentMetrics(row: Pick<ExperimentRow, 'metrics'>): ExperimentMetricRef[] {
  return JSON.parse(row.metrics) as ExperimentMetricRef[];
}

/** The experiment's row by key or id within the flag and environment, or undefined. */
export function findExperiment(
  db: Db,
  flagId: string,
  environmentId: string,
  ref: string,
): Promise<ExperimentRow | undefined> {
  return db
    .selectFrom('experiments')
    .selectAll()
    .where('flag_id', '=', flagId)
    .where('environment_id', '=', environmentId)
    .where((eb) => eb.or([eb('key', '=', ref), eb('id', '=', ref)]))
    .executeTakeFirst();
}

/** The running experiment of the flag in the environment, if any. */
export function runningExperiment(
  db: Db,
  flagId: string,
  environmentId: string,
): Promise<Pick<ExperimentRow, 'id' | 'key'> | undefined> {
  return db
    .selectFrom('experiments')
    .select(['id', 'key'])
    .where('flag_id', '=', flagId)
    .where('environment_id', '=', environmentId)
    .where('status', '=', 'running')
    .executeTakeFirst();
}

/**
 * Refuses a direct change of the flag's fallthrough (`environmentId` given) or of its variations
 * (in any environment) while an experiment runs on it (contract section 2).
 * @throws ApiError 409 `EXPERIMENT_RUNNING`
 */
export async function refuseWhileExperimentRuns(
  db: Db,
  flag: { id: string; key: string },
  environmentId: string | null,
  what: string,
): Promise<void> {
  let query = db
    .selectFrom('experiments')
    .innerJoin('environments', 'environments.id', 'experiments.environment_id')
    .select(['experiments.key', 'environments.key as environmentKey'])
    .where('experiments.flag_id', '=', flag.id)
    .where('experiments.status', '=', 'running');
  if (environmentId !== null) query = query.where('experiments.environment_id', '=', environmentId);
  const running = await query.executeTakeFirst();
  if (running)
    throw new ApiError(
      'EXPERIMENT_RUNNING',
      `Experiment "${running.key}" runs on flag "${flag.key}" in "${running.environmentKey}": ${what} cannot change until it is stopped.`,
    );
}

/** The decision of a stopped experiment as stored, or null. */
export function storedDecision(row: Pick<ExperimentRow, 'decision'>): Decision | null {
  return row.decision === null ? null : (JSON.parse(row.decision) as Decision);
}

/** The decision in words, for events and the audit log. */
export function decisionWords(decision: Decision): string {
  if (decision === 'keepControl') return 'keep the control';
  if (decision === 'inconclusive') return 'inconclusive';
  return `ship "${decision.ship}"`;
}

/** Emits one `experiment.*` event about `experiment` (contract section 2), environment-scoped. */
export function emitExperimentEvent(
  m: Mutation,
  target: FlagEnvironmentTarget,
  experiment: Pick<ExperimentRow, 'id'>,
  type: EventType,
  description: string,
  changes: PropertyChange[] = [],
): Promise<void> {
  return m.emit(
    flagEnvironmentEvent(
      target,
      { type: 'experiment', id: experiment.id },
      type,
      description,
      changes,
    ),
  );
}
