import type { Kysely, Selectable } from 'kysely';
import { v7 as uuid } from 'uuid';
import { mutate, type Mutation } from '../db/mutate.js';
import type { ProjectsTable, Schema } from '../db/schema.js';
import type { Actor } from '../events/types.js';
import type { Services } from '../services.js';
import { insertProject } from '../management/projects/queries.js';
import type { ProjectDocument } from './document.js';
import { readProjectState, type ProjectState } from './project-state.js';
import {
  type ChangeRequestOption,
  type OpenedChangeRequest,
  changeRequestRequired,
  checkDirectPart,
  directDocument,
  newFlagConfigurations,
  openChangeRequests,
  proposedChanges,
  protectedEnvironmentKeys,
  requestEnvironmentOf,
} from './protected-changes.js';
import { checkDocument, checkShape } from './validation.js';
import { checkPolicyChanges } from './environment-policy.js';
import { keepStoredJsonText } from './variation-values.js';
import { Reconciliation, type PlannedChange } from './reconciliation.js';

/** The answer of an apply (design record 027). */
export interface ApplyResult {
  dryRun: boolean;
  /** Whether anything was written directly: false for a dry run and for an empty plan. */
  applied: boolean;
  changes: PlannedChange[];
  /** Counts by action. */
  summary: Record<PlannedChange['action'], number>;
  /** Things left alone that a reader may expect changed (e.g. a segment kept while in use). */
  warnings: string[];
  /** The change requests opened for changes to protected environments (one per environment). */
  changeRequests: OpenedChangeRequest[];
}

function summarize(changes: readonly PlannedChange[]): ApplyResult['summary'] {
  const summary = { create: 0, update: 0, archive: 0, restore: 0, delete: 0 };
  for (const change of changes) summary[change.action] += 1;
  return summary;
}

/** The project an apply works on: one that exists, or (CLI) one to create from the document. */
export interface ApplyTarget {
  organizationId: string;
  actor: Actor;
  project: Selectable<ProjectsTable> | null;
  /**
   * Whether the document may change an environment's change-request policy: an Admin's apply or
   * the operator's CLI. Absent, a document that changes one is refused (403 `forbidden`).
   */
  mayChangePolicy?: boolean;
}

/** A project that does not exist yet, as the document names it: nothing in it. */
function emptyState(document: ProjectDocument, organizationId: string, now: string): ProjectState {
  return {
    project: {
      id: uuid(),
      organization_id: organizationId,
      key: document.project.key,
      name: document.project.name ?? document.project.key,
      description: document.project.description ?? null,
      change_request_count: 0,
      created_at: now,
      updated_at: now,
    },
    environments: [],
    segments: [],
    flags: [],
  };
}

/** The organization's slug, for the paths a refusal names. */
async function organizationSlug(db: Kysely<Schema>, organizationId: string): Promise<string> {
  const row = await db
    .selectFrom('organizations')
    .select('slug')
    .where('id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return row.slug;
}

/**
 * The plan of `document` against `state`, each change to a protected environment marked with
 * the environment whose change request would hold it (design record 042).
 * @returns the plan, and the changes that need a change request (with new flags' configurations
 *   in protected environments, which the plan does not list)
 */
async function markedPlan(
  document: ProjectDocument,
  state: ProjectState,
  prune: boolean,
  created: boolean,
) {
  const reconciliation = new Reconciliation(document, state, prune, null);
  if (created)
    reconciliation.changes.push({
      action: 'create',
      kind: 'project',
      path: 'project',
      key: state.project.key,
    });
  await reconciliation.run();
  const protectedKeys = protectedEnvironmentKeys(state);
  for (const change of reconciliation.changes) {
    const environmentKey = requestEnvironmentOf(change, protectedKeys);
    if (environmentKey) change.proposedIn = environmentKey;
  }
  const newConfigurations: PlannedChange[] = newFlagConfigurations(
    document,
    state,
    protectedKeys,
  ).map((entry) => ({
    action: 'update',
    kind: 'configuration',
    path: entry.path,
    key: entry.key,
    proposedIn: requestEnvironmentOf(entry, protectedKeys),
  }));
  const changes = [...reconciliation.changes, ...newConfigurations];
  return {
    changes,
    warnings: reconciliation.warnings,
    protectedKeys,
    proposed: changes.filter((change) => change.proposedIn !== undefined),
  };
}

/**
 * Applies a flags-as-code document to a project (design record 027): checks it whole (shape, then
 * references and values against the project), computes the plan, and, unless `dryRun`, carries
 * it out in one transaction with the events, audit entries and webhook deliveries each change
 * makes through the API. The plan is computed inside that transaction, from what it changes;
 * applying the same document again plans nothing and writes nothing. With `target.project` null
 * (the CLI, on a project that does not exist yet) the project is created in that transaction
 * under the document's `project` key, name and description.
 *
 * Changes to what an environment that requires change requests serves (design record 042) are
 * refused whole, unless `changeRequest` is given: then, in the same transaction, everything else
 * is written and those changes are proposed as one change request per protected environment,
 * opened for review (project-wide segment and variation changes in the first protected
 * environment's). A dry run plans the same, marking each such change with `proposedIn`.
 * @param input the parsed document (see `parseDocumentText`)
 * @throws ApiError 400 `validation_failed` with every problem of the document by path; 409
 *   `change_request_required` naming the protected environments and, in `fields`, each change
 *   that reaches them, when the plan reaches one and `changeRequest` is absent.
 */
export async function applyDocument(
  services: Pick<Services, 'db' | 'events' | 'clock'>,
  target: ApplyTarget,
  input: unknown,
  options: { dryRun: boolean; prune: boolean; changeRequest?: ChangeRequestOption | undefined },
): Promise<ApplyResult> {
  const checked = await checkShape(
    input,
    async () => (target.project ? readProjectState(services.db, target.project) : null),
    options,
  );
  /** The plan of the document against `state`, refused when it needs a change request unasked. */
  const planned = async (
    db: Kysely<Schema>,
    document: ProjectDocument,
    state: ProjectState,
    created: boolean,
  ) => {
    checkDocument(document, state, { prune: options.prune, projectKey: state.project.key });
    checkPolicyChanges(document, state, target.mayChangePolicy ?? false);
    // An apply in a project without protected environments plans once, as it writes.
    if (!options.dryRun && protectedEnvironmentKeys(state).length === 0)
      return { changes: [], warnings: [], protectedKeys: [], proposed: [] };
    const plan = await markedPlan(document, state, options.prune, created);
    if (plan.proposed.length > 0 && options.changeRequest)
      checkDirectPart(directDocument(document, state, plan.protectedKeys), state, options.prune);
    // A dry run shows the whole plan, each change a request would hold marked `proposedIn`.
    if (plan.proposed.length > 0 && !options.changeRequest && !options.dryRun)
      throw changeRequestRequired(
        [...new Set(plan.proposed.map((change) => change.proposedIn ?? ''))],
        plan.proposed,
        {
          orgSlug: await organizationSlug(db, target.organizationId),
          projectKey: state.project.key,
        },
      );
    return plan;
  };
  if (options.dryRun) {
    const state = target.project
      ? await readProjectState(services.db, target.project)
      : emptyState(checked, target.organizationId, services.clock.now().toISOString());
    const { changes, warnings, proposed } = await planned(
      services.db,
      keepStoredJsonText(checked, state),
      state,
      target.project === null,
    );
    if (proposed.length > 0 && !options.changeRequest)
      warnings.push(
        `${proposed.length} of these ${proposed.length === 1 ? 'changes reaches' : 'changes reach'} ${[...new Set(proposed.map((change) => `"${change.proposedIn}"`))].join(', ')}, which requires change requests: apply with changeRequest (vexil apply --change-request <title>) to propose them; without it the apply is refused.`,
      );
    return {
      dryRun: true,
      applied: false,
      changes,
      summary: summarize(changes),
      warnings,
      changeRequests: [],
    };
  }
  const { changes, warnings, changeRequests } = await mutate(
    services.db,
    {
      organizationId: target.organizationId,
      actor: target.actor,
      now: services.clock.now(),
      events: services.events,
    },
    async (m) => {
      let state: ProjectState;
      if (target.project) state = await readProjectState(m.trx, target.project);
      else {
        state = emptyState(checked, target.organizationId, m.now);
        await insertProject(m, state.project);
      }
      const document = keepStoredJsonText(checked, state);
      const plan = await planned(m.trx, document, state, target.project === null);
      const protectedKeys = plan.proposed.length > 0 ? plan.protectedKeys : [];
      const direct = new Reconciliation(
        directDocument(document, state, protectedKeys),
        state,
        options.prune,
        m,
      );
      if (target.project === null)
        direct.changes.push({
          action: 'create',
          kind: 'project',
          path: 'project',
          key: state.project.key,
        });
      await direct.run();
      const option = options.changeRequest;
      // Without a change request, planned() refused any plan reaching a protected environment.
      if (protectedKeys.length === 0 || !option)
        return { changes: direct.changes, warnings: direct.warnings, changeRequests: [] };
      // What the direct part left is what the change requests propose: planned against the state
      // it wrote (new flags and variations are there), against the revisions it left.
      const written = await readProjectState(m.trx, state.project);
      const remaining = await markedPlan(document, written, false, false);
      const changeRequests = await openChangeRequests(
        m,
        written,
        proposedChanges(document, written, protectedKeys),
        option,
      );
      return {
        changes: [...direct.changes, ...remaining.proposed],
        warnings: direct.warnings,
        changeRequests,
      };
    },
  );
  return {
    dryRun: false,
    applied: changes.some((change) => change.proposedIn === undefined),
    changes,
    summary: summarize(changes),
    warnings,
    changeRequests,
  };
}

/**
 * Reconciles the project with `document` inside the caller's mutation, as an apply does, without
 * pruning: items the document leaves out are left alone. A change request applies its changes
 * this way (design record 042), so that they are written by the same functions, with the same
 * events, as a direct apply. The caller has checked the document (`checkDocument`).
 * @returns the changes made, by path in `document`
 */
export async function reconcileDocument(
  m: Mutation,
  state: ProjectState,
  document: ProjectDocument,
): Promise<PlannedChange[]> {
  const reconciliation = new Reconciliation(document, state, false, m);
  await reconciliation.run();
  return reconciliation.changes;
}
