import { Button } from '@radix-ui/themes';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { Link } from 'wouter';
import { ApiProblem, api, unwrap } from '../api/client';
import type { ChangeRequestDetail } from '../api/types';
import { ApplyAtField } from '../components/change-requests/ApplyAtField';
import { ChangeDiff, type DiffEntry } from '../components/change-requests/ChangeDiff';
import { changeRequestsPath } from '../components/change-requests/paths';
import { authorName, StateBadge } from '../components/change-requests/StateBadge';
import { formatWhen, utcOfLocal } from '../components/change-requests/when';
import { ConfirmButton } from '../components/ConfirmButton';
import { Labelled } from '../components/Field';
import { usePlace } from '../components/Shell';
import { useSegments } from '../api/segments';
import { queryKeys } from '../api/query-keys';
import { useFormMutation } from '../components/useFormMutation';

type Path = { org: string; project: string; number: number };

/**
 * One change request (design record 043): who asked for what, in which environment, each change
 * before and after side by side with conflicts marked, the reviews so far, and what the caller
 * may do now (`_actions`): approve or reject with a comment, apply now or at a time in their
 * zone, take a schedule back, cancel.
 */
export function ChangeRequestPage(props: { org: string; project: string; number: string }) {
  const { org, project } = props;
  const path: Path = { org, project, number: Number(props.number) };
  const { environments } = usePlace();
  const request = useQuery({
    queryKey: queryKeys.changeRequest(org, project, path.number),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/change-requests/{number}', {
          params: { path },
        }),
      ),
  });
  const segments = useSegments(org, project);
  if (request.isError) return <p role="alert">{request.error.message}</p>;
  if (!request.data) return <p role="status">Loading…</p>;
  const data = request.data;
  const environment = environments.find((e) => e.key === data.environmentKey);
  const diff: DiffEntry[] = data.diff ?? [];
  return (
    <>
      <nav aria-label="Breadcrumb" className="hint">
        <Link href={changeRequestsPath(org, project)}>Change requests</Link> / CR {data.number}
      </nav>
      <div className="page-heading">
        <h1>
          CR {data.number}: {data.title}
        </h1>
        <StateBadge request={data} />
      </div>
      <dl className="facts">
        <dt>Environment</dt>
        <dd>{environment?.name ?? data.environmentKey}</dd>
        <dt>Author</dt>
        <dd>{authorName(data.author)}</dd>
        <dt>Opened</dt>
        <dd>{formatWhen(data.createdAt)}</dd>
        {data.applyAt && (
          <>
            <dt>Apply at</dt>
            <dd>{formatWhen(data.applyAt)}</dd>
          </>
        )}
        {data.appliedAt && (
          <>
            <dt>Applied</dt>
            <dd>
              {formatWhen(data.appliedAt)}
              {data.appliedBy ? ` by ${authorName(data.appliedBy)}` : ''}
            </dd>
          </>
        )}
      </dl>
      {data.failure && (
        <p role="alert" className="field-error">
          Failed: {data.failure.message}
        </p>
      )}
      {data.description && <p className="description">{data.description}</p>}
      <h2>Changes</h2>
      {data.state === 'applied' && (
        <p className="hint">Before and after as they were when the request was applied.</p>
      )}
      {data.changes.map((change, index) => (
        <ChangeDiff
          applied={data.state === 'applied'}
          key={index}
          org={org}
          project={project}
          index={index}
          change={change}
          entry={diff[index]}
          segments={segments.data?.items ?? []}
        />
      ))}
      {data._actions['edit']?.allowed && diff.some((entry) => entry.conflict) && (
        <Rewrite path={path} request={data} diff={diff} />
      )}
      <Reviews request={data} />
      <Actions path={path} request={data} />
    </>
  );
}

function Reviews({ request }: { request: ChangeRequestDetail }) {
  return (
    <section aria-labelledby="reviews-heading">
      <h2 id="reviews-heading">Reviews</h2>
      {request.approvalsRequired > 0 && (
        <p className="hint">
          Needs {request.approvalsRequired}{' '}
          {request.approvalsRequired === 1 ? 'approval' : 'approvals'} from someone other than the
          author.
        </p>
      )}
      {request.reviews.length === 0 ? (
        <p className="hint">No reviews yet.</p>
      ) : (
        <ul className="reviews">
          {request.reviews.map((review, index) => (
            <li key={index}>
              <strong>{authorName(review.reviewer)}</strong>{' '}
              {review.decision === 'approve' ? 'approved' : 'rejected'}
              {review.withdrawn && ' (withdrawn: the request was edited after)'} ·{' '}
              <span className="hint">{formatWhen(review.at)}</span>
              {review.comment && <p>{review.comment}</p>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The caller's actions on the request, each shown only when `_actions` allows it. */
function Actions({ path, request }: { path: Path; request: ChangeRequestDetail }) {
  const queryClient = useQueryClient();
  const [comment, setComment] = useState('');
  const [applyAt, setApplyAt] = useState('');
  const headingId = useId();
  const can = (action: string) => request._actions[action]?.allowed === true;
  const base = '/api/v1/orgs/{org}/projects/{project}/change-requests/{number}' as const;
  const act = useFormMutation({
    mutationFn: (action: () => Promise<unknown>) => action(),
    onSettled: () =>
      Promise.all([
        queryClient.invalidateQueries({
          queryKey: queryKeys.changeRequests(path.org, path.project),
        }),
        queryClient.invalidateQueries({ queryKey: queryKeys.everyFlag(path.org, path.project) }),
      ]),
    onSuccess: () => setComment(''),
  });
  const review = (decision: 'approve' | 'reject') =>
    act.mutate(() =>
      unwrap(
        api.POST(`${base}/reviews`, {
          params: { path },
          body: { decision, ...(comment.trim() ? { comment: comment.trim() } : {}) },
        }),
      ),
    );
  const apply = (when: string | null) =>
    act.mutate(() =>
      unwrap(api.POST(`${base}/apply`, { params: { path }, body: when ? { applyAt: when } : {} })),
    );
  const canReview = can('approve') || can('reject');
  const anything =
    canReview ||
    ['apply', 'schedule', 'unschedule', 'cancel', 'submit'].some((action) => can(action));
  if (!anything) return null;
  return (
    <section aria-labelledby={headingId} className="cr-actions">
      <h2 id={headingId}>Decide</h2>
      {canReview && (
        <div className="review-form">
          <Labelled label="Comment" hint="Optional; the author and later readers see it.">
            {(id, describedBy) => (
              <textarea
                id={id}
                aria-describedby={describedBy}
                rows={3}
                value={comment}
                onChange={(event) => setComment(event.target.value)}
              />
            )}
          </Labelled>
          <div className="row">
            {can('approve') && (
              <Button type="button" disabled={act.isPending} onClick={() => review('approve')}>
                Approve
              </Button>
            )}
            {can('reject') && (
              <Button
                type="button"
                color="red"
                variant="soft"
                disabled={act.isPending}
                onClick={() => review('reject')}
              >
                Reject
              </Button>
            )}
          </div>
        </div>
      )}
      {can('submit') && (
        <Button
          type="button"
          disabled={act.isPending}
          onClick={() => act.mutate(() => unwrap(api.POST(`${base}/submit`, { params: { path } })))}
        >
          Submit for review
        </Button>
      )}
      {can('apply') && (
        <div className="row">
          <Button type="button" disabled={act.isPending} onClick={() => apply(null)}>
            Apply now
          </Button>
        </div>
      )}
      {can('schedule') && (
        <form
          className="row schedule"
          onSubmit={(event) => {
            event.preventDefault();
            apply(utcOfLocal(applyAt));
          }}
        >
          <ApplyAtField value={applyAt} onChange={setApplyAt} label="Schedule for" />
          <Button type="submit" variant="soft" disabled={act.isPending || applyAt === ''}>
            Schedule
          </Button>
        </form>
      )}
      {can('unschedule') && (
        <Button
          type="button"
          variant="soft"
          color="gray"
          disabled={act.isPending}
          onClick={() =>
            act.mutate(() => unwrap(api.DELETE(`${base}/schedule`, { params: { path } })))
          }
        >
          Unschedule
        </Button>
      )}
      {can('cancel') && (
        <ConfirmButton
          label="Cancel request"
          title={`Cancel CR ${request.number}?`}
          description="A cancelled request cannot be reopened; its changes are never applied."
          confirm="Cancel request"
          busy={act.isPending}
          onConfirm={() =>
            act.mutate(() => unwrap(api.POST(`${base}/cancel`, { params: { path } })))
          }
        />
      )}
      {act.error && (
        <p role="alert" className="field-error">
          {act.error instanceof ApiProblem && act.error.code === 'change_request_conflict'
            ? `Conflict: ${act.error.message} The author rewrites the change from the current targeting, which withdraws the approvals.`
            : act.error.message}
        </p>
      )}
    </section>
  );
}

/**
 * For the author of a request in conflict: the same desired state, written against the target as
 * it is now (each change's `baseRevision` becomes the target's current revision). The diff then
 * shows what the change does to the current state, and the approvals are withdrawn, so reviewers
 * decide on that (change-requests.md section 2: "the author updates the changes").
 */
function Rewrite(props: { path: Path; request: ChangeRequestDetail; diff: DiffEntry[] }) {
  const { path, request, diff } = props;
  const queryClient = useQueryClient();
  const rewrite = useFormMutation({
    mutationFn: () =>
      unwrap(
        api.PATCH('/api/v1/orgs/{org}/projects/{project}/change-requests/{number}', {
          params: { path },
          body: {
            changes: request.changes.map((change, index) => {
              const revision = diff[index]?.revision;
              return typeof revision === 'number' ? { ...change, baseRevision: revision } : change;
            }),
          },
        }),
      ),
    onSettled: () =>
      queryClient.invalidateQueries({ queryKey: queryKeys.changeRequests(path.org, path.project) }),
  });
  return (
    <section aria-labelledby="rewrite-heading" className="rewrite">
      <h2 id="rewrite-heading">Resolve the conflict</h2>
      <p className="hint">
        Keep the same desired state, written against the target as it is now: the table above then
        compares with the current state, and every approval is withdrawn for a new review.
      </p>
      <Button
        type="button"
        variant="soft"
        disabled={rewrite.isPending}
        onClick={() => rewrite.mutate()}
      >
        Rewrite against the current state
      </Button>
      {rewrite.error && (
        <p role="alert" className="field-error">
          {rewrite.error.message}
        </p>
      )}
    </section>
  );
}
