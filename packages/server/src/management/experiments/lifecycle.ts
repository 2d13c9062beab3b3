import { type FlagEnvironmentTarget } from '../../api/path-resources.js';
import { v7 as uuid } from 'uuid';
import type { Mutation } from '../../db/mutate.js';
import { isUniqueViolation } from '../../db/unique.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Kysely, Transaction } from 'kysely';
import type { Schema } from '../../db/schema.js';
import { writeFlagConfiguration } from '../flags/queries.js';
import { metricsByKey, projectMetrics } from '../metrics/queries.js';
import { computeResults, primaryVerdicts } from './results.js';
import {
  decisionWords,
  emitExperimentEvent,
  experimentVariations,
  runningExperiment,
  type ExperimentMetricRef,
  type ExperimentRow,
  type StoredFallthrough,
  type VariationWeight,
} from './queries.js';
import {
  DEFAULT_CONFIDENCE,
  DEFAULT_MINIMUM_USERS,
  TOTAL_WEIGHT,
  type Decision,
  type ExperimentInput,
} from './schemas.js';

/** Rollout weights are thousandths of a percent (100 000); experiment weights basis points. */
const ROLLOUT_PER_BASIS_POINT = 10;

/** An experiment as written, checked: see {@link checkExperimentInput}. */
export interface ExperimentValues {
  name: string;
  hypothesis: string | null;
  variations: VariationWeight[];
  controlVariation: string;
  metrics: ExperimentMetricRef[];
  confidence: number;
  minimumUsers: number;
  salt: string | null;
}

/**
 * Checks an experiment as written (contract section 2, "Bad input") against the flag's
 * variations and the project's metric catalogue.
 * @param at - the path of the experiment in the request, prefixed to each field named
 * @throws ApiError 400 `validation_failed` naming the field
 */
export async function checkExperimentInput(
  db: Kysely<Schema> | Transaction<Schema>,
  projectId: string,
  input: Omit<ExperimentInput, 'key'>,
  flagVariations: readonly { key: string | null }[],
  at = '',
): Promise<ExperimentValues> {
  const known = flagVariations.map((variation) => variation.key);
  if (flagVariations.length < 2)
    throw invalidField(
      `${at}variations`,
      'the flag has one variation: an experiment needs two or more',
    );
  if (input.variations.length < 2)
    throw invalidField(`${at}variations`, 'needs at least two variations');
  const seen = new Set<string>();
  for (const [index, { key }] of input.variations.entries()) {
    if (!known.includes(key))
      throw invalidField(
        `${at}variations[${index}].key`,
        `is not a variation key of this flag (${known.join(', ')})`,
      );
    if (seen.has(key)) throw invalidField(`${at}variations[${index}].key`, 'is listed twice');
    seen.add(key);
  }
  const total = input.variations.reduce((sum, { weight }) => sum + weight, 0);
  if (total !== TOTAL_WEIGHT)
    throw invalidField(
      `${at}variations`,
      `weights are basis points and must add up to ${TOTAL_WEIGHT} (these add up to ${total})`,
    );
  if (!seen.has(input.controlVariation))
    throw invalidField(`${at}controlVariation`, "must be one of the experiment's variations");
  const secondary = input.secondaryMetrics ?? [];
  const guardrail = input.guardrailMetrics ?? [];
  const metrics = await metricsByKey(db, projectId, [
    input.primaryMetric,
    ...secondary,
    ...guardrail,
  ]);
  const refs: ExperimentMetricRef[] = [];
  const used = new Set<string>();
  const add = (key: string, role: ExperimentMetricRef['role'], field: string) => {
    const metric = metrics.get(key);
    if (!metric) throw invalidField(`${at}${field}`, `is not a metric of this project: "${key}"`);
    if (used.has(key)) throw invalidField(`${at}${field}`, `names metric "${key}" twice`);
    used.add(key);
    refs.push({ metricId: metric.id, role });
  };
  add(input.primaryMetric, 'primary', 'primaryMetric');
  secondary.forEach((key, index) => add(key, 'secondary', `secondaryMetrics[${index}]`));
  guardrail.forEach((key, index) => add(key, 'guardrail', `guardrailMetrics[${index}]`));
  return {
    name: input.name,
    hypothesis: input.hypothesis ?? null,
    variations: input.variations,
    controlVariation: input.controlVariation,
    metrics: refs,
    confidence: input.confidence ?? DEFAULT_CONFIDENCE,
    minimumUsers: input.minimumUsers ?? DEFAULT_MINIMUM_USERS,
    salt: input.salt ?? null,
  };
}

/**
 * Creates a draft experiment inside `m` and emits `experiment.created`. A draft serves nothing,
 * so creating one needs no change request.
 * @throws ApiError 409 `conflict` when the key is taken on this flag in this environment
 */
export async function createExperiment(
  m: Mutation,
  target: FlagEnvironmentTarget,
  key: string,
  values: ExperimentValues,
  createdBy: string,
): Promise<ExperimentRow> {
  const id = uuid();
  const row: ExperimentRow = {
    id,
    project_id: target.project.id,
    flag_id: target.flag.id,
    environment_id: target.environment.id,
    key,
    name: values.name,
    hypothesis: values.hypothesis,
    variations: JSON.stringify(values.variations),
    control_variation: values.controlVariation,
    metrics: JSON.stringify(values.metrics),
    confidence: values.confidence,
    minimum_users: values.minimumUsers,
    // The default salt is the experiment's id: its split is independent of every other one.
    salt: values.salt ?? id,
    status: 'draft',
    decision: null,
    fallthrough_before: null,
    primary_verdicts: null,
    checked_at: null,
    srm_detected_at: null,
    started_at: null,
    stopped_at: null,
    created_by: createdBy,
    created_at: m.now,
    updated_at: m.now,
  };
  try {
    await m.trx.insertInto('experiments').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error))
      throw new ApiError(
        'conflict',
        `Flag "${target.flag.key}" has an experiment "${key}" in "${target.environment.key}" already.`,
        { fields: { key: ['is taken by another experiment of this flag in this environment'] } },
      );
    throw error;
  }
  await emitExperimentEvent(
    m,
    target,
    row,
    'experiment.created',
    `Experiment "${key}" of flag "${target.flag.key}" in "${target.environment.key}" created: ${values.variations.map((v) => `${v.key} ${v.weight / 100}%`).join(', ')}`,
    [{ property: 'Status', from: null, to: 'draft' }],
  );
  return row;
}

async function variationIds(m: Mutation, flagId: string): Promise<Map<string, string>> {
  const rows = await m.trx
    .selectFrom('variations')
    .select(['id', 'key'])
    .where('flag_id', '=', flagId)
    .execute();
  return new Map(rows.map((row) => [row.key, row.id]));
}

/**
 * Starts a draft inside `m` (contract section 2): writes the flag's fallthrough in the
 * environment as the experiment's split, bucketed with its salt, and emits `experiment.started`.
 * Refused where change requests are required unless `m` applies one.
 * @throws ApiError 400 `validation_failed` on `experiment` when another experiment runs on the flag
 *   there; 409 `conflict` when not a draft, when a release plan is active or paused there, or
 *   when a variation is gone; 409 `change_request_required`
 */
export async function startExperiment(
  m: Mutation,
  target: FlagEnvironmentTarget,
  experiment: ExperimentRow,
): Promise<ExperimentRow> {
  if (experiment.status !== 'draft')
    throw new ApiError(
      'conflict',
      `Experiment "${experiment.key}" is ${experiment.status}; only a draft starts.`,
    );
  const before = await m.trx
    .selectFrom('flag_environments')
    .select(['strategy', 'default_variation_id', 'rollout', 'rollout_salt'])
    .where('flag_id', '=', target.flag.id)
    .where('environment_id', '=', target.environment.id)
    .executeTakeFirstOrThrow();
  const ids = await variationIds(m, target.flag.id);
  const rollout = experimentVariations(experiment).map(({ key, weight }) => {
    const variationId = ids.get(key);
    if (variationId === undefined)
      throw new ApiError(
        'conflict',
        `Variation "${key}" of the experiment is no longer a variation of flag "${target.flag.key}".`,
      );
    return { variationId, weight: weight * ROLLOUT_PER_BASIS_POINT };
  });
  // The write locks the flag first, so that the checks below see any concurrent start committed.
  await writeFlagConfiguration(
    m,
    target,
    {
      strategy: 'PercentageRollout',
      rollout: JSON.stringify(rollout),
      rollout_salt: experiment.salt,
    },
    'experiment',
  );
  const running = await runningExperiment(m.trx, target.flag.id, target.environment.id);
  if (running)
    throw invalidField(
      'experiment',
      `cannot start: experiment "${running.key}" already runs on flag "${target.flag.key}" in "${target.environment.key}" (one at a time); stop it first`,
    );
  const plan = await m.trx
    .selectFrom('release_plans')
    .select('state')
    .where('flag_id', '=', target.flag.id)
    .where('environment_id', '=', target.environment.id)
    .where('state', 'in', ['active', 'paused'])
    .executeTakeFirst();
  if (plan)
    throw new ApiError(
      'conflict',
      `Flag "${target.flag.key}" has a ${plan.state} release plan in "${target.environment.key}"; an experiment cannot run beside it.`,
    );
  const fallthrough: StoredFallthrough = {
    strategy: before.strategy,
    defaultVariationId: before.default_variation_id,
    rollout: before.rollout,
    rolloutSalt: before.rollout_salt,
  };
  const started = await m.trx
    .updateTable('experiments')
    .set({
      status: 'running',
      started_at: m.now,
      updated_at: m.now,
      fallthrough_before: JSON.stringify(fallthrough),
    })
    .where('id', '=', experiment.id)
    .where('status', '=', 'draft')
    .returningAll()
    .executeTakeFirst();
  if (!started)
    throw new ApiError(
      'conflict',
      `Experiment "${experiment.key}" was started or removed meanwhile.`,
    );
  await emitExperimentEvent(
    m,
    target,
    started,
    'experiment.started',
    `Experiment "${experiment.key}" of flag "${target.flag.key}" started in "${target.environment.key}"`,
    [{ property: 'Status', from: 'draft', to: 'running' }],
  );
  return started;
}

/**
 * Stops a running experiment inside `m` with `decision` (contract section 2) and writes the
 * fallthrough it decides: the shipped variation, the control, or (inconclusive) the fallthrough
 * from before the start. Emits `experiment.stopped`.
 * @throws ApiError 400 naming `decision.ship` for a variation not in the experiment; 409 when not
 *   running; 409 `change_request_required`
 */
export async function stopExperiment(
  m: Mutation,
  target: FlagEnvironmentTarget,
  experiment: ExperimentRow,
  decision: Decision,
): Promise<ExperimentRow> {
  if (experiment.status !== 'running')
    throw new ApiError(
      'conflict',
      `Experiment "${experiment.key}" is ${experiment.status}; only a running experiment stops.`,
    );
  const keys = experimentVariations(experiment).map((variation) => variation.key);
  if (typeof decision === 'object' && !keys.includes(decision.ship))
    throw invalidField(
      'decision.ship',
      `is not a variation of the experiment (${keys.join(', ')})`,
    );
  const ids = await variationIds(m, target.flag.id);
  const fixed = (key: string) => {
    const id = ids.get(key);
    if (id === undefined)
      throw new ApiError(
        'conflict',
        `Variation "${key}" is no longer a variation of flag "${target.flag.key}".`,
      );
    return {
      strategy: 'SingleVariation' as const,
      default_variation_id: id,
      rollout: '[]',
      rollout_salt: null,
    };
  };
  const before = JSON.parse(experiment.fallthrough_before ?? 'null') as StoredFallthrough | null;
  const fallthrough =
    decision === 'inconclusive'
      ? before === null
        ? fixed(experiment.control_variation)
        : {
            strategy: before.strategy,
            default_variation_id: before.defaultVariationId,
            rollout: before.rollout,
            rollout_salt: before.rolloutSalt,
          }
      : fixed(decision === 'keepControl' ? experiment.control_variation : decision.ship);
  // The list shows a stopped experiment with its final verdicts, read at the stop.
  const results = await computeResults(
    m.trx,
    experiment,
    await projectMetrics(m.trx, experiment.project_id),
    new Date(m.now),
  );
  const stopped = await m.trx
    .updateTable('experiments')
    .set({
      primary_verdicts: JSON.stringify(primaryVerdicts(results)),
      status: 'stopped',
      stopped_at: m.now,
      updated_at: m.now,
      decision: JSON.stringify(decision),
    })
    .where('id', '=', experiment.id)
    .where('status', '=', 'running')
    .returningAll()
    .executeTakeFirst();
  if (!stopped)
    throw new ApiError('conflict', `Experiment "${experiment.key}" was stopped meanwhile.`);
  await writeFlagConfiguration(m, target, fallthrough, 'experiment');
  await emitExperimentEvent(
    m,
    target,
    stopped,
    'experiment.stopped',
    `Experiment "${experiment.key}" of flag "${target.flag.key}" stopped in "${target.environment.key}": ${decisionWords(decision)}`,
    [
      { property: 'Status', from: 'running', to: 'stopped' },
      { property: 'Decision', from: null, to: decisionWords(decision) },
    ],
  );
  return stopped;
}
