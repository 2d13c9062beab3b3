import type { ChangeRequest } from '../../api/types';
import { formatWhen } from './when';

/**
 * A request's state as the contract names it (`open`, `approved`, `scheduled` …), with what it
 * waits for: approvals so far, or the time it is scheduled for.
 */
export function StateBadge({ request }: { request: ChangeRequest }) {
  const approvals = request.reviews.filter((review) => review.decision === 'approve').length;
  return (
    <span className="state">
      <span className={`badge state-${request.state}`}>{request.state}</span>
      {request.state === 'open' && request.approvalsRequired > 0 && (
        <span className="hint">
          {' '}
          {approvals} of {request.approvalsRequired} approvals
        </span>
      )}
      {request.state === 'scheduled' && request.applyAt && (
        <span className="hint"> for {formatWhen(request.applyAt)}</span>
      )}
    </span>
  );
}

/** A person by name, else e-mail; a service token by its name. */
export function authorName(author: ChangeRequest['author'] | null | undefined): string {
  if (!author) return 'someone';
  return author.name ?? author.email ?? 'a service token';
}
