import type { Selectable } from 'kysely';
import { hasRole } from '../auth/roles.js';
import type {
  ChangeRequestReviewsTable,
  ChangeRequestsTable,
  ChangeRequestState,
  EnvironmentsTable,
} from '../db/schema.js';
import type { Services } from '../services.js';
import type { ActionHint } from '../api/actions.js';
import type { OrgAccess } from '../api/access.js';
import type { ChangeDiff } from './changes.js';
import type { Change } from './kinds.js';

export type ChangeRequestRow = Selectable<ChangeRequestsTable>;
export type ReviewRow = Selectable<ChangeRequestReviewsTable>;

/** Who wrote a request: a person, or a service token (spec: change requests, section 2). */
export type Author =
  | { userId: string; email: string | null; name: string | null }
  | { tokenId: string; name: string | null };

/** Who applied a request: a person or token, or the schedule. */
export type AppliedBy = Author | { service: 'schedule' };

/** States from which a request may still change; the others are final. */
export const EDITABLE: readonly ChangeRequestState[] = ['draft', 'open', 'approved'];
export const CANCELLABLE: readonly ChangeRequestState[] = [
  'draft',
  'open',
  'approved',
  'scheduled',
];
export const REJECTABLE: readonly ChangeRequestState[] = ['open', 'approved', 'scheduled'];

/**
 * The caller as a change request sees them: their standing in the organization, and whether the
 * call came through `/mcp` (an agent: it may propose and apply, never review).
 */
export interface RequestCaller {
  access: OrgAccess;
  viaMcp: boolean;
}

/** Whether the caller may review at all: a person, by their own session or personal token. */
export function reviewRefusal(caller: RequestCaller): string | null {
  if (caller.access.caller.type !== 'user')
    return 'only a person reviews: a service token may propose and apply, not review';
  if (caller.viaMcp)
    return 'only a person reviews: an agent on /mcp may propose and apply, not review';
  return null;
}

function isAuthor(row: ChangeRequestRow, caller: RequestCaller): boolean {
  return row.author_id === caller.access.caller.id;
}

/** `_actions` of a request for the caller (spec: change requests, section 2). */
export function requestActions(
  row: ChangeRequestRow,
  reviews: readonly ReviewRow[],
  caller: RequestCaller,
): Record<string, ActionHint> {
  const { role } = caller.access;
  const author = isAuthor(row, caller);
  const authorOrAdmin = author || hasRole(role, 'Admin');
  const inState = (states: readonly ChangeRequestState[]) =>
    states.includes(row.state) ? null : `the request is ${row.state}`;
  const hint = (reason: string | null, needed: 'Member' | 'Viewer' = 'Member'): ActionHint =>
    !hasRole(role, needed)
      ? { allowed: false, reason: `requires the ${needed} role` }
      : { allowed: reason === null, reason };
  const reviewer = reviewRefusal(caller) ?? (author ? 'the author does not review' : null);
  const approved = reviews.some(
    (r) => r.reviewer_id === caller.access.caller.id && r.decision === 'approve' && !r.withdrawn,
  );
  const authorOnly = author ? null : 'only the author edits';
  const authorOrAdminOnly = authorOrAdmin ? null : 'only the author or an Admin';
  return {
    edit: hint(authorOnly ?? inState(EDITABLE)),
    submit: hint(authorOnly ?? inState(['draft'])),
    approve: hint(reviewer ?? inState(['open']) ?? (approved ? 'you approved it already' : null)),
    reject: hint(reviewer ?? inState(REJECTABLE)),
    apply: hint(authorOrAdminOnly ?? inState(['approved'])),
    schedule: hint(authorOrAdminOnly ?? inState(['approved'])),
    unschedule: hint(authorOrAdminOnly ?? inState(['scheduled'])),
    cancel: hint(authorOrAdminOnly ?? inState(CANCELLABLE)),
  };
}

/** The request as the API returns it; `diff` only in the detail. */
export function requestResponse(
  row: ChangeRequestRow,
  context: {
    projectKey: string;
    environmentKey: string;
    reviews: readonly ReviewRow[];
    caller: RequestCaller;
    diff?: ChangeDiff[];
  },
) {
  return {
    id: row.id,
    number: row.number,
    projectKey: context.projectKey,
    environmentKey: context.environmentKey,
    title: row.title,
    description: row.description,
    state: row.state,
    author: JSON.parse(row.author) as Author,
    changes: JSON.parse(row.changes) as Change[],
    approvalsRequired: row.approvals_required,
    reviews: context.reviews.map((review) => ({
      reviewer: JSON.parse(review.reviewer) as Author,
      decision: review.decision,
      comment: review.comment,
      at: review.created_at,
      withdrawn: review.withdrawn === 1,
    })),
    applyAt: row.apply_at,
    appliedAt: row.applied_at,
    appliedBy: row.applied_by === null ? null : (JSON.parse(row.applied_by) as AppliedBy),
    failure:
      row.failure === null ? null : (JSON.parse(row.failure) as { code: string; message: string }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(context.diff ? { diff: context.diff } : {}),
    _actions: requestActions(row, context.reviews, context.caller),
  };
}

/** The reviews of the requests, by request id, oldest first. */
export async function reviewsOf(
  services: Pick<Services, 'db'>,
  ids: readonly string[],
): Promise<Map<string, ReviewRow[]>> {
  const byRequest = new Map<string, ReviewRow[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return byRequest;
  const rows = await services.db
    .selectFrom('change_request_reviews')
    .selectAll()
    .where('change_request_id', 'in', ids)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  for (const row of rows) byRequest.get(row.change_request_id)?.push(row);
  return byRequest;
}

/** The project's environments, by id. */
export async function environmentsById(
  services: Pick<Services, 'db'>,
  projectId: string,
): Promise<Map<string, Selectable<EnvironmentsTable>>> {
  const rows = await services.db
    .selectFrom('environments')
    .selectAll()
    .where('project_id', '=', projectId)
    .execute();
  return new Map(rows.map((row) => [row.id, row]));
}
