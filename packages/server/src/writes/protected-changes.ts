import type { Mutation } from '../db/mutate.js';
import { diffProperties } from '../events/types.js';
import { ApiError } from '../errors.js';
import { defaultOffVariation } from '../management/flags/configuration.js';
import { completeFlagEnvironment, completeSegment } from './document-defaults.js';
import type { DocumentFlagEnvironment, ProjectDocument } from './document.js';
import {
  documentFlagEnvironment,
  documentSegment,
  type EnvironmentRow,
  type FlagState,
  type ProjectState,
} from './project-state.js';
import { checkDocument } from './validation.js';

// Flags as code in a project with environments that require change requests (contract, change
// requests, section 1; design record 042, "Flags as code and agents"): which parts of a plan
// need a change request, what the apply writes directly, and what it proposes instead.

/** A change of a change request, as flags as code proposes it (contract, section 2). */
export type ProposedChange =
  | {
      kind: 'flag';
      flagKey: string;
      baseRevision: number;
      configuration: DocumentFlagEnvironment;
    }
  | {
      kind: 'segment';
      segmentKey: string;
      baseRevision: number;
      definition: { conditionLogic: string; conditions: unknown[] };
    }
  | {
      kind: 'variations';
      flagKey: string;
      baseRevision: number;
      variations: { key: string; name: string | null; value: string; description: string | null }[];
    };

/** A change request an apply opened for the plan's changes to one protected environment. */
export interface OpenedChangeRequest {
  environmentKey: string;
  number: number;
  state: string;
  /** How many changes (flag configurations, segments, variation sets) it holds. */
  changes: number;
}

/**
 * Opens one change request inside the apply's mutation, opened for review, as its author (the
 * caller, or the CLI's operator): given by the change-request module, which depends on flags as
 * code rather than the other way round.
 * @throws ApiError 400 naming the path of each problem of the changes
 */
export type OpenChangeRequest = (
  m: Mutation,
  request: {
    /** The project as the apply left it, read in `m`. */
    state: ProjectState;
    environment: EnvironmentRow;
    title: string;
    description: string;
    changes: ProposedChange[];
  },
) => Promise<{ number: number; state: string }>;

/** The change requests an apply opens for its changes to protected environments. */
export interface ChangeRequestOption {
  title: string;
  description?: string | undefined;
  open: OpenChangeRequest;
}

/** What a planned change needs to know to be placed: its kind, key and changed properties. */
interface PlanEntry {
  action: string;
  kind: string;
  key: string;
  path: string;
  changes?: { property: string }[];
}

/** The properties of a segment and of a variation that change what environments serve. */
const SERVING_SEGMENT_PROPERTIES = new Set(['Conditions', 'ConditionLogic']);
const SERVING_VARIATION_PROPERTIES = new Set(['Value']);

/** Keys of the project's environments whose policy requires change requests, in document order. */
export function protectedEnvironmentKeys(state: ProjectState): string[] {
  return state.environments
    .filter((environment) => environment.change_requests_required === 1)
    .map((environment) => environment.key);
}

/**
 * The protected environment whose change request holds a planned change, or undefined when the
 * change is written directly: a flag's configuration or rules in a protected environment go to
 * that environment's request; segment conditions and a flag's variation set (a variation added or
 * removed, a value changed), being project-wide, go to the first protected environment's (contract, section 1: "a change request of any environment
 * of the project that requires them").
 */
export function requestEnvironmentOf(
  change: PlanEntry,
  protectedKeys: readonly string[],
): string | undefined {
  const [first] = protectedKeys;
  if (!first) return undefined;
  if (change.kind === 'configuration' || change.kind === 'rule') {
    const [environmentKey = ''] = change.key.slice(change.key.indexOf('@') + 1).split('#');
    return protectedKeys.includes(environmentKey) ? environmentKey : undefined;
  }
  // A variation added to or removed from a flag changes its set, served in every environment.
  if (change.kind === 'variation' && change.action !== 'update') return first;
  const serving =
    change.kind === 'segment'
      ? SERVING_SEGMENT_PROPERTIES
      : change.kind === 'variation'
        ? SERVING_VARIATION_PROPERTIES
        : undefined;
  if (change.action !== 'update' || !serving) return undefined;
  return change.changes?.some((c) => serving.has(c.property)) ? first : undefined;
}

/** A new flag's configuration in every environment as `insertFlag` makes it, document shaped. */
function initialConfiguration(flag: NonNullable<ProjectDocument['flags']>[number]) {
  return completeFlagEnvironment({
    enabled: false,
    defaultVariation: flag.variations[0]?.key ?? '',
    offVariation: defaultOffVariation(flag.type, flag.variations)?.key ?? '',
  });
}

/**
 * The configurations of flags the document creates that differ, in a protected environment, from
 * what a new flag starts with: the plan does not list them (it lists the flag's creation), yet
 * they change what that environment serves. One plan entry each.
 */
export function newFlagConfigurations(
  document: ProjectDocument,
  state: ProjectState,
  protectedKeys: readonly string[],
): PlanEntry[] {
  const existing = new Set(state.flags.map((flag) => flag.row.key));
  const entries: PlanEntry[] = [];
  for (const [index, flag] of (document.flags ?? []).entries()) {
    if (existing.has(flag.key)) continue;
    const initial = JSON.stringify(initialConfiguration(flag));
    for (const environmentKey of protectedKeys) {
      const configuration = flag.environments?.[environmentKey];
      if (!configuration || JSON.stringify(completeFlagEnvironment(configuration)) === initial)
        continue;
      entries.push({
        action: 'update',
        kind: 'configuration',
        path: `flags[${index}].environments.${environmentKey}`,
        key: `${flag.key}@${environmentKey}`,
      });
    }
  }
  return entries;
}

/**
 * The 409 `change_request_required` of an apply without a change request whose plan reaches
 * protected environments: nothing is written, every such change is named by its path. As every
 * such refusal, `next_actions` names the change-request resource; the message names the apply's
 * own way to propose (`--change-request`, `changeRequest`).
 */
export function changeRequestRequired(
  environmentKeys: readonly string[],
  changes: readonly PlanEntry[],
  where: { orgSlug: string; projectKey: string },
): ApiError {
  const names = environmentKeys.map((key) => `"${key}"`).join(', ');
  const fields = Object.create(null) as Record<string, string[]>;
  for (const change of changes)
    (fields[change.path] ??= []).push(`needs a change request (${change.kind} ${change.key})`);
  return new ApiError(
    'change_request_required',
    `The document changes what ${environmentKeys.length === 1 ? 'environment' : 'environments'} ${names} ` +
      `${environmentKeys.length === 1 ? 'serves, which requires' : 'serve, which require'} change requests; ` +
      'nothing was applied. Apply it as a change request (vexil apply --change-request "title", ' +
      'or changeRequest=title on the apply call), or leave those changes out of the document.',
    {
      fields,
      nextActions: [
        {
          method: 'POST',
          path: `/api/v1/orgs/${where.orgSlug}/projects/${where.projectKey}/change-requests`,
        },
      ],
    },
  );
}

/**
 * The part of the document an apply with a change request writes directly: the document without
 * the flags' configurations in protected environments, with the stored conditions of segments
 * (their names and descriptions still apply) and the stored variation set of each flag whose set
 * the document changes in what is served. Everything left out is proposed instead
 * ({@link proposedChanges}).
 */
export function directDocument(
  document: ProjectDocument,
  state: ProjectState,
  protectedKeys: readonly string[],
): ProjectDocument {
  if (protectedKeys.length === 0) return document;
  const segments = new Map(state.segments.map((segment) => [segment.key, segment]));
  const flags = new Map(state.flags.map((flag) => [flag.row.key, flag]));
  return {
    ...document,
    segments: document.segments?.map((input) => {
      const stored = segments.get(input.key);
      if (!stored) return input;
      const { conditionLogic, conditions } = documentSegment(stored);
      return { ...input, conditionLogic, conditions };
    }),
    flags: document.flags?.map((input) => {
      const stored = flags.get(input.key);
      const environments = Object.fromEntries(
        Object.entries(input.environments ?? {}).filter(([key]) => !protectedKeys.includes(key)),
      );
      const variations =
        stored && variationSetServes(input, stored) ? storedVariations(stored) : input.variations;
      return { ...input, environments, variations };
    }),
  };
}

/**
 * Checks that the part of the document written directly stands on its own: a configuration of
 * an environment that requires no change request may not serve a variation only a change request
 * would add.
 * @throws ApiError 400 `validation_failed` by path, nothing written
 */
export function checkDirectPart(
  direct: ProjectDocument,
  state: ProjectState,
  prune: boolean,
): void {
  try {
    checkDocument(direct, state, { prune, projectKey: state.project.key });
  } catch (error) {
    if (!(error instanceof ApiError) || !error.detail.fields) throw error;
    throw new ApiError(
      'validation_failed',
      'What the document changes outside environments requiring change requests uses what only ' +
        'its change requests would create (a variation added to a flag); nothing was applied. ' +
        'Apply the new variations first, then what uses them.',
      { fields: error.detail.fields },
    );
  }
}

/** The document's variation set of a flag, as a `variations` change holds it. */
function variationSet(flag: NonNullable<ProjectDocument['flags']>[number]) {
  return flag.variations.map((variation) => ({
    key: variation.key,
    name: variation.name ?? null,
    value: variation.value,
    description: variation.description ?? null,
  }));
}

/**
 * Whether the document changes what a stored flag's variation set serves: a variation added or
 * removed, or a value changed (names, descriptions and order only describe it), as the write
 * path's guard decides it.
 */
function variationSetServes(
  input: NonNullable<ProjectDocument['flags']>[number],
  stored: FlagState,
) {
  const values = new Map(stored.variations.map((v) => [v.key, v.value]));
  return (
    input.variations.length !== stored.variations.length ||
    input.variations.some((variation) => values.get(variation.key) !== variation.value)
  );
}

/** A stored flag's variation set as the document writes it, in its order. */
function storedVariations(stored: FlagState) {
  return stored.variations.map((variation) => ({
    key: variation.key,
    name: variation.name,
    value: variation.value,
    description: variation.description,
  }));
}

/**
 * What the document still changes in protected environments once its direct part is written,
 * by the environment whose change request holds it (see {@link requestEnvironmentOf}), each
 * against the target's current revision. Read from the state after the direct part, so that flags
 * and variations it created are there to propose configurations of.
 */
export function proposedChanges(
  document: ProjectDocument,
  state: ProjectState,
  protectedKeys: readonly string[],
): Map<string, ProposedChange[]> {
  const byEnvironment = new Map<string, ProposedChange[]>();
  const propose = (environmentKey: string, change: ProposedChange) =>
    byEnvironment.set(environmentKey, [...(byEnvironment.get(environmentKey) ?? []), change]);
  const [first] = protectedKeys;
  if (!first) return byEnvironment;
  const environmentIds = new Map(state.environments.map((e) => [e.key, e.id]));
  const segmentKeys = new Map(state.segments.map((s) => [s.id, s.key]));

  for (const input of document.segments ?? []) {
    const stored = state.segments.find((segment) => segment.key === input.key);
    if (!stored) continue;
    const { conditionLogic = 'And', conditions = [] } = completeSegment(input);
    const current = documentSegment(stored);
    const definition = { conditionLogic, conditions };
    if (
      diffProperties(
        { conditionLogic: current.conditionLogic, conditions: current.conditions },
        definition,
      ).length === 0
    )
      continue;
    propose(first, {
      kind: 'segment',
      segmentKey: input.key,
      baseRevision: stored.version,
      definition,
    });
  }

  for (const input of document.flags ?? []) {
    const stored = state.flags.find((flag) => flag.row.key === input.key);
    if (!stored) continue;
    if (variationSetServes(input, stored))
      propose(first, {
        kind: 'variations',
        flagKey: input.key,
        baseRevision: stored.row.variations_revision,
        variations: variationSet(input),
      });
    const variationKeys = new Map(stored.variations.map((v) => [v.id, v.key]));
    for (const environmentKey of protectedKeys) {
      const wanted = input.environments?.[environmentKey];
      const environmentId = environmentIds.get(environmentKey) ?? '';
      const configuration = stored.configurations.get(environmentId);
      if (!wanted || !configuration) continue;
      const current = documentFlagEnvironment(
        configuration,
        stored.rules.get(environmentId) ?? [],
        variationKeys,
        segmentKeys,
      );
      const desired = completeFlagEnvironment(wanted);
      if (diffProperties(current, desired).length === 0) continue;
      propose(environmentKey, {
        kind: 'flag',
        flagKey: input.key,
        baseRevision: configuration.revision,
        configuration: desired,
      });
    }
  }
  return byEnvironment;
}

/**
 * Opens one change request per protected environment for the changes proposed there, in the
 * mutation of the apply (its events and the request's commit together), opened for review
 * (`submit`), titled as asked. In the environments' document order.
 * @throws ApiError 400 `validation_failed` when a request is refused (e.g. over 100 changes),
 *   naming its environment; the apply's transaction then writes nothing
 */
export async function openChangeRequests(
  m: Mutation,
  state: ProjectState,
  proposals: ReadonlyMap<string, ProposedChange[]>,
  option: ChangeRequestOption,
): Promise<OpenedChangeRequest[]> {
  const opened: OpenedChangeRequest[] = [];
  for (const environment of state.environments) {
    const changes = proposals.get(environment.key);
    if (!changes) continue;
    const request = await option
      .open(m, {
        state,
        environment,
        title: option.title,
        description: option.description ?? '',
        changes,
      })
      .catch((error: unknown) => {
        if (!(error instanceof ApiError) || error.code !== 'validation_failed') throw error;
        // Its paths are the request's (`changes[3]`): name the request, so that they read.
        throw new ApiError(
          'validation_failed',
          `The change request for "${environment.key}" was refused, so nothing was applied; ` +
            'its problems are listed by their path in the request (changes[n]).',
          error.detail,
        );
      });
    opened.push({
      environmentKey: environment.key,
      number: request.number,
      state: request.state,
      changes: changes.length,
    });
  }
  return opened;
}
