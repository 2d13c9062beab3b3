import type { ChangeRequest } from '../../api/types';
import { formatWhen } from './when';

/**
 * A request's state as the contract names it (`open`, `approved`, `scheduled` …), with what it
 * waits for: approvals so far, or the time it is scheduled for.
 */
export function StateBadge({ request }: { request: ChangeRequest }) {
  const approvals = request.reviews.filter(
    (review) => review.decision === 'approve' && !review.withdrawn,
  ).length;
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

/** Who acted: a person (`userId`, `email`, `name`), a service token, or the schedule. */
interface Actor {
  name?: string | null;
  email?: string | null;
  tokenId?: string;
  service?: string;
}

/** A person by name, else e-mail; a service token by its name; the schedule as "the schedule". */
export function authorName(actor: ChangeRequest['author'] | null | undefined): string {
  const who = (actor ?? {}) as Actor;
  if (who.service === 'schedule') return 'the schedule';
  return who.name ?? who.email ?? (who.tokenId ? 'a service token' : 'someone');
}
