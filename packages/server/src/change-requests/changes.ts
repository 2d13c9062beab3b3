import type { Selectable } from 'kysely';
import type { Mutation } from '../db/mutate.js';
import type { ProjectsTable } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { reconcileDocument } from '../writes/apply.js';
import { DOCUMENT_VERSION } from '../writes/document.js';
import {
  documentEnvironment,
  readProjectState,
  type EnvironmentRow,
  type ProjectState,
} from '../writes/project-state.js';
import { checkDocument } from '../writes/validation.js';
import { FieldProblems } from '../management/targeting/conditions.js';
import { checkChangeShapes, kindOf, targetKey, type ApplyPlan, type Change } from './kinds.js';

/** The most changes one request holds (spec: change requests, section 2). */
export const MAX_CHANGES = 100;

/** One change as the detail's `diff` shows it. */
export interface ChangeDiff {
  kind: string;
  target: string;
  before: unknown;
  after: unknown;
  /** The target's revision now (null when it is gone or archived). */
  revision: number | null;
  baseRevision: number | null;
  conflict: boolean;
}

/** Each change's before, after and conflict against `state` (spec: the detail's `diff`). */
export function diffChanges(
  state: ProjectState,
  environment: EnvironmentRow,
  changes: readonly Change[],
): ChangeDiff[] {
  return changes.map((change) => {
    const kind = kindOf(change);
    const revision = kind.revision(state, environment, change);
    const baseRevision = kind.baseRevision(change);
    return {
      kind: change.kind,
      target: kind.target(change),
      before: kind.before(state, environment, change),
      after: kind.after(change),
      revision,
      baseRevision,
      conflict: revision === null || (baseRevision !== null && revision !== baseRevision),
    };
  });
}

/** The plan of writing `changes`: the document to reconcile and the writes of their own. */
function planChanges(
  state: ProjectState,
  environment: EnvironmentRow,
  changes: readonly Change[],
): ApplyPlan {
  const plan: ApplyPlan = {
    state,
    environment,
    document: {
      version: DOCUMENT_VERSION,
      project: { key: state.project.key },
      environments: state.environments.map(documentEnvironment),
      segments: [],
      flags: [],
    },
    origins: new Map(),
    writes: [],
  };
  changes.forEach((change, index) => kindOf(change).plan(plan, change, index));
  return plan;
}

/**
 * A problem of the composed document at the change it comes from: `flags[0].environments.prod.
 * rules[1].variation` → `changes[3].configuration.rules[1].variation`.
 */
function changePath(plan: ApplyPlan, path: string): string {
  let best: [string, { index: number; member: string }] | undefined;
  for (const entry of plan.origins)
    if (path.startsWith(entry[0]) && entry[0].length > (best?.[0].length ?? -1)) best = entry;
  if (!best) {
    // A problem of the flag as a whole (a variation another environment serves…).
    const flag = /^flags\[(\d+)\]/.exec(path)?.[0];
    const origin = flag && [...plan.origins].find(([prefix]) => prefix.startsWith(flag))?.[1];
    return origin ? `changes[${origin.index}]` : 'changes';
  }
  const [prefix, { index, member }] = best;
  return `changes[${index}].${member}${path.slice(prefix.length)}`;
}

/**
 * Checks a request's changes as submitted: 1–100 changes, each of a known kind and shape, one per
 * target, each target existing (and, for a flag, not archived), and together a configuration the
 * project accepts (every reference resolving, values of the flag's type, rollouts summing to
 * 100% …, as flags-as-code checks a document).
 * @throws ApiError 400 `validation_failed` naming each problem by path (`changes[2].kind`)
 */
export function checkChanges(
  state: ProjectState,
  environment: EnvironmentRow,
  input: readonly unknown[],
): Change[] {
  const problems = new FieldProblems();
  if (input.length === 0 || input.length > MAX_CHANGES)
    problems.add('changes', `must hold 1 to ${MAX_CHANGES} changes, not ${input.length}`);
  checkChangeShapes(input, problems);
  problems.throwIfAny();
  const changes = input as Change[];
  const seen = new Map<string, number>();
  changes.forEach((change, index) => {
    const target = targetKey(change);
    const earlier = seen.get(target);
    if (earlier !== undefined)
      problems.add(`changes[${index}]`, `changes the same target as changes[${earlier}]`);
    seen.set(target, index);
    if (kindOf(change).revision(state, environment, change) === null)
      problems.add(
        `changes[${index}]`,
        `${kindOf(change).target(change)} does not exist, or is archived`,
      );
  });
  problems.throwIfAny();
  const plan = planChanges(state, environment, changes);
  try {
    checkDocument(plan.document, state, { prune: false, projectKey: state.project.key });
  } catch (error) {
    if (!(error instanceof ApiError) || !error.detail.fields) throw error;
    for (const [path, messages] of Object.entries(error.detail.fields))
      for (const message of messages) problems.add(changePath(plan, path), message);
    problems.throwIfAny();
  }
  return changes;
}

/**
 * Locks the rows of the flags and segments the changes name (an update that changes nothing), so
 * that a direct write to them (which updates the same rows first, `m.touchFlag`) waits until the
 * apply commits, and the revisions checked are the revisions written over.
 */
async function lockTargets(m: Mutation, projectId: string, changes: readonly Change[]) {
  const flagKeys = changes.flatMap((c) => (c.kind === 'segment' ? [] : [c.flagKey]));
  const segmentKeys = changes.flatMap((c) => (c.kind === 'segment' ? [c.segmentKey] : []));
  await m.lockFlags(projectId, flagKeys);
  if (segmentKeys.length > 0)
    await m.trx
      .updateTable('segments')
      .set((eb) => ({ version: eb.ref('version') }))
      .where('project_id', '=', projectId)
      .where('key', 'in', segmentKeys)
      .execute();
}

/**
 * Writes a request's changes inside `m` (a mutation that applies the change request, so the
 * policy lets it through): all or nothing, through the same write functions as direct writes
 * (a flags-as-code reconcile of the changed targets), so that they make the same events.
 * @returns the `diff` as it was just before the writes (no change in conflict), which the
 *   applied request keeps so that it goes on showing what it changed
 * @throws ApiError 409 `change_request_conflict` naming each change whose target's revision is
 *   no longer its `baseRevision`, or whose target is gone or archived; 409 the same for changes
 *   the project no longer accepts (a segment a rule names was deleted …). Nothing is written.
 */
export async function writeChanges(
  m: Mutation,
  project: Selectable<ProjectsTable>,
  environmentId: string,
  changes: readonly Change[],
): Promise<ChangeDiff[]> {
  await lockTargets(m, project.id, changes);
  const state = await readProjectState(m.trx, project);
  const environment = state.environments.find((e) => e.id === environmentId);
  if (!environment) throw new ApiError('change_request_conflict', 'The environment is gone.');
  const conflicts = new FieldProblems();
  const diffs = diffChanges(state, environment, changes);
  diffs.forEach((diff, index) => {
    if (!diff.conflict) return;
    conflicts.add(
      `changes[${index}]`,
      diff.revision === null
        ? `${diff.target} is gone or archived`
        : `${diff.target} is at revision ${diff.revision}, not ${diff.baseRevision}`,
    );
  });
  const refuse = (problems: FieldProblems) => {
    const entries = problems.entries();
    throw new ApiError(
      'change_request_conflict',
      `Nothing was applied: ${entries.map(([path, [first]]) => `${path}: ${first}`).join('; ')}.`,
      { fields: problems.record() },
    );
  };
  if (conflicts.entries().length > 0) refuse(conflicts);
  try {
    checkChanges(state, environment, changes);
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'validation_failed') throw error;
    const problems = new FieldProblems();
    for (const [path, messages] of Object.entries(error.detail.fields ?? {}))
      for (const message of messages) problems.add(path, message);
    refuse(problems);
  }
  const plan = planChanges(state, environment, changes);
  // Events written together: one insert and one webhook fan-out for the whole request.
  await m.emitTogether(async () => {
    await reconcileDocument(m, state, plan.document);
    for (const write of plan.writes) await write(m);
  });
  return diffs;
}
