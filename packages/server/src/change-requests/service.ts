import type { Selectable } from 'kysely';
import { v7 as uuid } from 'uuid';
import { hasRole } from '../auth/roles.js';
import { mutate, type Mutation } from '../db/mutate.js';
import type { ChangeRequestState, ProjectsTable } from '../db/schema.js';
import type { EventType, KeyedRef } from '../events/types.js';
import { ApiError, invalidField } from '../errors.js';
import type { Services } from '../services.js';
import { actorOf } from '../api/access.js';
import { requireEnvironment } from '../api/path-resources.js';
import { readProjectState } from '../writes/project-state.js';
import type { ProjectScope } from '../api/scope.js';
import { checkChanges, diffChanges, writeChanges, type ChangeDiff } from './changes.js';
import type { Change } from './kinds.js';
import { emitEntered, emitRequestEvent, type RequestWhere } from './request-events.js';
import { applyScheduled } from './scheduled-apply.js';
import {
  CANCELLABLE,
  EDITABLE,
  REJECTABLE,
  requestResponse,
  reviewRefusal,
  reviewsOf,
  type Author,
  type ChangeRequestRow,
  type RequestCaller,
} from './store.js';

/** RFC 3339 with an offset (`Z` or `±hh:mm`), as the contract requires of `applyAt`. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** What opens a change request (spec: change requests, section 2, `POST …/change-requests`). */
export interface OpenChangeRequestInput {
  /** The environment's key (or id). */
  environment: string;
  title: string;
  description?: string | undefined;
  /** 1–100 changes, each checked against its kind. */
  changes: readonly unknown[];
  /** RFC 3339 with offset, in the future; null or absent: applied when someone applies it. */
  applyAt?: string | null | undefined;
  /** Open it for review now rather than keep it a draft. */
  submit?: boolean | undefined;
}

/** A request as the API returns it. */
export type ChangeRequestResponse = ReturnType<typeof requestResponse>;

/**
 * `applyAt` as stored: UTC ISO-8601.
 * @throws ApiError 400 on `applyAt` when it is not RFC 3339 with an offset, or not after `now`
 */
function storedApplyAt(value: string, now: Date): string {
  const at = new Date(value);
  if (!RFC3339.test(value) || Number.isNaN(at.getTime()))
    throw invalidField(
      'applyAt',
      'must be an RFC 3339 date-time with an offset, e.g. 2026-05-01T09:00:00+02:00',
    );
  if (at <= now)
    throw invalidField('applyAt', `must be in the future (it is ${now.toISOString()} now)`);
  return at.toISOString();
}

/** Who a caller is as the author of a request: the person, or the service token. */
export function authorOf(caller: RequestCaller['access']['caller']): Author {
  return caller.type === 'user'
    ? { userId: caller.id, email: caller.email, name: caller.name }
    : { tokenId: caller.id, name: caller.name };
}

/** The state a request reaches when it leaves `draft` (or is edited while not a draft). */
function submittedState(
  row: Pick<ChangeRequestRow, 'approvals_required' | 'apply_at'>,
): ChangeRequestState {
  if (row.approvals_required > 0) return 'open';
  return row.apply_at ? 'scheduled' : 'approved';
}

/** Reads the request `number` of the project. @throws ApiError 404 */
export async function requireChangeRequest(
  services: Pick<Services, 'db'>,
  project: Pick<ProjectsTable, 'id' | 'key'>,
  number: number,
): Promise<ChangeRequestRow> {
  const row = await services.db
    .selectFrom('change_requests')
    .selectAll()
    .where('project_id', '=', project.id)
    .where('number', '=', number)
    .executeTakeFirst();
  if (!row)
    throw new ApiError(
      'not_found',
      `Change request #${number} was not found in project "${project.key}".`,
    );
  return row;
}

/**
 * The request as the caller sees it, with `diff` against the project as it is now, or, once
 * applied, as it was when applied (what the request changed, kept with it).
 */
export async function changeRequestDetail(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  row: ChangeRequestRow,
): Promise<ChangeRequestResponse> {
  const [state, reviews] = await Promise.all([
    readProjectState(services.db, scope.project),
    reviewsOf(services, [row.id]),
  ]);
  const environment = state.environments.find((e) => e.id === row.environment_id);
  const changes = JSON.parse(row.changes) as Change[];
  return requestResponse(row, {
    projectKey: scope.project.key,
    environmentKey: environment?.key ?? '',
    reviews: reviews.get(row.id) ?? [],
    caller,
    ...(row.applied_diff !== null
      ? { diff: JSON.parse(row.applied_diff) as ChangeDiff[] }
      : environment
        ? { diff: diffChanges(state, environment, changes) }
        : {}),
  });
}

/**
 * Opens a change request in the project, as `POST …/change-requests` does: checks the changes
 * against the project, numbers the request, stores it as `draft`, or with `submit` as `open`
 * (`approved` at once, or `scheduled` with `applyAt`, in an environment that requires no
 * approval), and emits the events. For flags-as-code and the MCP tools, which propose changes
 * from code. Machines may open requests; only people review them.
 * @throws ApiError 400 `validation_failed` naming the path of each problem (`changes[2].kind`,
 *   `applyAt`, `environment`), 404 for an unknown environment
 */
export async function openChangeRequest(
  services: Services,
  scope: ProjectScope,
  input: OpenChangeRequestInput,
  caller: RequestCaller = { access: scope, viaMcp: false },
): Promise<ChangeRequestResponse> {
  const environment = await requireEnvironment(services, scope, scope.project, input.environment);
  const now = services.clock.now();
  const applyAt = input.applyAt ? storedApplyAt(input.applyAt, now) : null;
  const state = await readProjectState(services.db, scope.project);
  const stateEnvironment = state.environments.find((e) => e.id === environment.id) ?? environment;
  const changes = checkChanges(state, stateEnvironment, input.changes);
  const row = await mutate(
    services.db,
    { organizationId: scope.org.id, actor: actorOf(scope.caller), now, events: services.events },
    (m) =>
      insertChangeRequest(
        m,
        { project: scope.project, environment },
        { author: authorOf(scope.caller), id: scope.caller.id },
        {
          title: input.title,
          description: input.description ?? '',
          changes,
          applyAt,
          submit: input.submit ?? false,
        },
      ),
  );
  await applyIfDue(services, row);
  return changeRequestDetail(
    services,
    scope,
    caller,
    await requireChangeRequest(services, scope.project, row.number),
  );
}

/**
 * Stores a request whose changes are checked, inside `m`, and emits its events: numbers it (the
 * project row's lock orders concurrent opens), copies the environment's approvals (0 where none
 * are required), and stores it `draft`, or with `submit` in the state it then enters. Used by
 * {@link openChangeRequest} and by flags-as-code, which opens requests inside its apply.
 */
export async function insertChangeRequest(
  m: Mutation,
  where: { project: Selectable<ProjectsTable>; environment: KeyedRef },
  author: { author: Author; id: string },
  input: {
    title: string;
    description: string;
    changes: readonly Change[];
    applyAt: string | null;
    submit: boolean;
  },
): Promise<ChangeRequestRow> {
  const { project, environment } = where;
  const policy = await m.trx
    .selectFrom('environments')
    .select(['change_requests_required', 'change_request_approvals'])
    .where('id', '=', environment.id)
    .executeTakeFirstOrThrow();
  // The row lock of this update numbers concurrent requests one after the other.
  const { change_request_count: number } = await m.trx
    .updateTable('projects')
    .set((eb) => ({ change_request_count: eb('change_request_count', '+', 1) }))
    .where('id', '=', project.id)
    .returning('change_request_count')
    .executeTakeFirstOrThrow();
  const approvalsRequired =
    policy.change_requests_required === 1 ? policy.change_request_approvals : 0;
  const stored: ChangeRequestRow = {
    id: uuid(),
    organization_id: project.organization_id,
    project_id: project.id,
    environment_id: environment.id,
    number,
    title: input.title,
    description: input.description,
    state: 'draft',
    author: JSON.stringify(author.author),
    author_id: author.id,
    changes: JSON.stringify(input.changes),
    approvals_required: approvalsRequired,
    apply_at: input.applyAt,
    applied_at: null,
    applied_by: null,
    failure: null,
    applied_diff: null,
    created_at: m.now,
    updated_at: m.now,
  };
  if (input.submit) stored.state = submittedState(stored);
  await m.trx.insertInto('change_requests').values(stored).execute();
  if (stored.state !== 'draft') await emitEntered(m, stored, { project, environment });
  return stored;
}

/** One action on a request, as its endpoint runs it (contract, section 2, "States"). */
interface Action {
  /** What the request would become, as a 409 names it ("it cannot be approved"). */
  verb: string;
  /** The states the action starts from. */
  from: readonly ChangeRequestState[];
  /**
   * Refuses the action before the request is claimed: a caller who may not act (403), or input
   * that does not check (400). Given the request as it stands.
   */
  check: (row: ChangeRequestRow) => Promise<void> | void;
  /** The transition's writes, inside the claim; answers the request as it now is. */
  work: (m: Mutation, row: ChangeRequestRow, where: RequestWhere) => Promise<ChangeRequestRow>;
  /** The action writes the request's changes, so their events name the request. */
  applies?: boolean;
}

/**
 * Runs `action` on request `number`: checks it, then claims the request with a conditional update
 * from one of `action.from` (which also locks it, so concurrent actions queue and each sees the
 * other's outcome) and runs `work` in the same transaction. Exactly one of two racing actions
 * goes ahead; the other finds the state moved. A request that became `scheduled` for a time
 * already past is applied after the transition commits.
 * @returns the request as the caller now sees it, with `diff`
 * @throws ApiError 404, what `check` throws, or 409 `conflict` naming the state when it is not
 *   one of `action.from`
 */
async function act(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  number: number,
  action: Action,
): Promise<ChangeRequestResponse> {
  const existing = await requireChangeRequest(services, scope.project, number);
  await action.check(existing);
  const row = await mutate(
    services.db,
    {
      organizationId: scope.org.id,
      actor: actorOf(scope.caller),
      now: services.clock.now(),
      events: services.events,
      ...(action.applies ? { changeRequest: { id: existing.id, number: existing.number } } : {}),
    },
    async (m) => {
      const claimed = await m.trx
        .updateTable('change_requests')
        .set({ updated_at: m.now })
        .where('project_id', '=', scope.project.id)
        .where('number', '=', number)
        .where('state', 'in', [...action.from])
        .returningAll()
        .executeTakeFirst();
      if (!claimed) {
        const current = await m.trx
          .selectFrom('change_requests')
          .select('state')
          .where('project_id', '=', scope.project.id)
          .where('number', '=', number)
          .executeTakeFirst();
        if (!current)
          throw new ApiError(
            'not_found',
            `Change request #${number} was not found in project "${scope.project.key}".`,
          );
        throw new ApiError(
          'conflict',
          `Change request #${number} is ${current.state}: it cannot be ${action.verb} (only when ${action.from.join(' or ')}).`,
        );
      }
      const environment = await m.trx
        .selectFrom('environments')
        .select(['id', 'key'])
        .where('id', '=', claimed.environment_id)
        .executeTakeFirstOrThrow();
      return action.work(m, claimed, { project: scope.project, environment });
    },
  );
  await applyIfDue(services, row);
  return changeRequestDetail(
    services,
    scope,
    caller,
    await requireChangeRequest(services, scope.project, number),
  );
}

function requireAuthor(row: ChangeRequestRow, caller: RequestCaller, what: string): void {
  if (row.author_id !== caller.access.caller.id)
    throw new ApiError('not_author', `Only the author of change request #${row.number} ${what}.`);
}

function requireAuthorOrAdmin(row: ChangeRequestRow, caller: RequestCaller, what: string): void {
  if (row.author_id !== caller.access.caller.id && !hasRole(caller.access.role, 'Admin'))
    throw new ApiError(
      'not_author',
      `Only the author of change request #${row.number} or an Admin ${what}.`,
    );
}

async function setState(
  m: Mutation,
  row: ChangeRequestRow,
  values: Partial<Omit<ChangeRequestRow, 'id'>>,
): Promise<ChangeRequestRow> {
  return m.trx
    .updateTable('change_requests')
    .set({ ...values, updated_at: m.now })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** {@link setState}, then the event of the state reached, described by `verb`. */
async function moveTo(
  m: Mutation,
  row: ChangeRequestRow,
  where: RequestWhere,
  values: Partial<Omit<ChangeRequestRow, 'id'>>,
  event: { type: EventType; verb: string },
): Promise<ChangeRequestRow> {
  const moved = await setState(m, row, values);
  await emitRequestEvent(m, event.type, moved, where, event.verb);
  return moved;
}

/** What PATCH may change of a request. */
export interface EditChangeRequestInput {
  title?: string | undefined;
  description?: string | undefined;
  changes?: readonly unknown[] | undefined;
  applyAt?: string | null | undefined;
}

/**
 * Edits a request (its author only): a draft stays a draft; otherwise it is open for review again
 * (or approved at once where no approval is required), every approval withdrawn.
 * @throws ApiError 403 for anyone but the author, 409 `conflict` unless draft, open or approved,
 *   400 naming each problem of the changes or `applyAt`
 */
export async function editChangeRequest(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  number: number,
  input: EditChangeRequestInput,
): Promise<ChangeRequestResponse> {
  const now = services.clock.now();
  let applyAt: string | null | undefined;
  let changes: Change[] | undefined;
  return act(services, scope, caller, number, {
    verb: 'edited',
    from: EDITABLE,
    check: async (existing) => {
      requireAuthor(existing, caller, 'edits it');
      if (input.applyAt !== undefined)
        applyAt = input.applyAt === null ? null : storedApplyAt(input.applyAt, now);
      if (input.changes === undefined) return;
      const state = await readProjectState(services.db, scope.project);
      const environment = state.environments.find((e) => e.id === existing.environment_id);
      if (!environment)
        throw new ApiError('conflict', 'The environment of this change request is gone.');
      changes = checkChanges(state, environment, input.changes);
    },
    work: async (m, row, where) => {
      const edited = {
        ...row,
        ...(input.title !== undefined ? { title: input.title } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(changes !== undefined ? { changes: JSON.stringify(changes) } : {}),
        ...(applyAt !== undefined ? { apply_at: applyAt } : {}),
      };
      const state = row.state === 'draft' ? 'draft' : submittedState(edited);
      await m.trx
        .updateTable('change_request_reviews')
        .set({ withdrawn: 1 })
        .where('change_request_id', '=', row.id)
        .where('decision', '=', 'approve')
        .execute();
      const updated = await setState(m, row, {
        title: edited.title,
        description: edited.description,
        changes: edited.changes,
        apply_at: edited.apply_at,
        state,
      });
      if (state !== 'draft') await emitEntered(m, updated, where);
      return updated;
    },
  });
}

/** Submits a draft (its author only): `open`, or `approved`/`scheduled` where none is required. */
export async function submitChangeRequest(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  number: number,
): Promise<ChangeRequestResponse> {
  return act(services, scope, caller, number, {
    verb: 'submitted',
    from: ['draft'],
    check: (existing) => requireAuthor(existing, caller, 'submits it'),
    work: async (m, row, where) => {
      const updated = await setState(m, row, { state: submittedState(row) });
      await emitEntered(m, updated, where);
      return updated;
    },
  });
}

/**
 * Records a review by a person who is not the author. Approving an open request counts towards
 * `approvalsRequired`; the last approval makes it `approved`, or `scheduled` when it carries
 * `applyAt` (applied at once when that time has passed). Rejecting ends it (`rejected`).
 * @throws ApiError 403 for a service token, a call through `/mcp`, or the author; 409 `conflict`
 *   in the wrong state or for a second approval by the same person
 */
export async function reviewChangeRequest(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  number: number,
  input: { decision: 'approve' | 'reject'; comment?: string | undefined },
): Promise<ChangeRequestResponse> {
  const refusal = reviewRefusal(caller);
  if (refusal) throw new ApiError('people_only', `Refused: ${refusal}.`);
  const approve = input.decision === 'approve';
  return act(services, scope, caller, number, {
    verb: approve ? 'approved' : 'rejected',
    from: approve ? ['open'] : REJECTABLE,
    check: (existing) => {
      if (existing.author_id === caller.access.caller.id)
        throw new ApiError(
          'not_author',
          `The author of change request #${number} does not review it: ask another person.`,
        );
    },
    work: async (m, row, where) => {
      const reviews = await m.trx
        .selectFrom('change_request_reviews')
        .selectAll()
        .where('change_request_id', '=', row.id)
        .where('decision', '=', 'approve')
        .where('withdrawn', '=', 0)
        .execute();
      if (approve && reviews.some((r) => r.reviewer_id === caller.access.caller.id))
        throw new ApiError('conflict', `You approved change request #${number} already.`);
      await m.trx
        .insertInto('change_request_reviews')
        .values({
          id: uuid(),
          change_request_id: row.id,
          reviewer_id: caller.access.caller.id,
          reviewer: JSON.stringify(authorOf(caller.access.caller)),
          decision: input.decision,
          comment: input.comment ?? null,
          withdrawn: 0,
          created_at: m.now,
        })
        .execute();
      if (!approve)
        return moveTo(
          m,
          row,
          where,
          { state: 'rejected' },
          { type: 'change_request.rejected', verb: 'rejected' },
        );
      if (reviews.length + 1 < row.approvals_required) return row;
      const approved = await moveTo(
        m,
        row,
        where,
        { state: row.apply_at ? 'scheduled' : 'approved' },
        { type: 'change_request.approved', verb: 'approved' },
      );
      if (approved.apply_at)
        await emitRequestEvent(
          m,
          'change_request.scheduled',
          approved,
          where,
          `scheduled for ${approved.apply_at}`,
        );
      return approved;
    },
  });
}

/**
 * Applies an approved request now, all or nothing, through the same writes as direct changes, or
 * with `applyAt` schedules it (author or Admin).
 * @throws ApiError 403, 409 `conflict` unless approved, 409 `change_request_conflict` naming the
 *   changes in conflict (nothing written, the request stays approved), 400 on `applyAt`
 */
export async function applyChangeRequest(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  number: number,
  input: { applyAt?: string | undefined },
): Promise<ChangeRequestResponse> {
  const at = input.applyAt;
  if (at) {
    let applyAt = '';
    return act(services, scope, caller, number, {
      verb: 'scheduled',
      from: ['approved'],
      check: (existing) => {
        requireAuthorOrAdmin(existing, caller, 'schedules it');
        applyAt = storedApplyAt(at, services.clock.now());
      },
      work: (m, row, where) =>
        moveTo(
          m,
          row,
          where,
          { state: 'scheduled', apply_at: applyAt },
          { type: 'change_request.scheduled', verb: `scheduled for ${applyAt}` },
        ),
    });
  }
  return act(services, scope, caller, number, {
    verb: 'applied',
    from: ['approved'],
    check: (existing) => requireAuthorOrAdmin(existing, caller, 'applies it'),
    applies: true,
    work: async (m, row, where) => {
      // The claimed row's changes: what was approved, whatever an edit racing this one sends.
      const diff = await writeChanges(
        m,
        scope.project,
        row.environment_id,
        JSON.parse(row.changes) as Change[],
      );
      return moveTo(
        m,
        row,
        where,
        {
          state: 'applied',
          applied_at: m.now,
          applied_by: JSON.stringify(authorOf(caller.access.caller)),
          applied_diff: JSON.stringify(diff),
        },
        { type: 'change_request.applied', verb: 'applied' },
      );
    },
  });
}

/** Takes a scheduled request back to `approved` (author or Admin). */
export async function unscheduleChangeRequest(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  number: number,
): Promise<ChangeRequestResponse> {
  return act(services, scope, caller, number, {
    verb: 'unscheduled',
    from: ['scheduled'],
    check: (existing) => requireAuthorOrAdmin(existing, caller, 'unschedules it'),
    work: (m, row, where) =>
      moveTo(
        m,
        row,
        where,
        { state: 'approved', apply_at: null },
        { type: 'change_request.unscheduled', verb: 'unscheduled' },
      ),
  });
}

/** Cancels a request that has not ended (author or Admin): `cancelled`, final. */
export async function cancelChangeRequest(
  services: Services,
  scope: ProjectScope,
  caller: RequestCaller,
  number: number,
): Promise<ChangeRequestResponse> {
  return act(services, scope, caller, number, {
    verb: 'cancelled',
    from: CANCELLABLE,
    check: (existing) => requireAuthorOrAdmin(existing, caller, 'cancels it'),
    work: (m, row, where) =>
      moveTo(
        m,
        row,
        where,
        { state: 'cancelled' },
        { type: 'change_request.cancelled', verb: 'cancelled' },
      ),
  });
}

/** After a transition: a request that became `scheduled` for a time already past is applied now. */
async function applyIfDue(services: Services, row: ChangeRequestRow): Promise<void> {
  if (row.state === 'scheduled' && row.apply_at && new Date(row.apply_at) <= services.clock.now())
    await applyScheduled(services, row.id, services.clock.now());
}
