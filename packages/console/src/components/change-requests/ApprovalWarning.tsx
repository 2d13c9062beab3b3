import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';

/** Members read to count who could approve; a larger organization has reviewers to spare. */
const MEMBERS_READ = 200;

/**
 * Said beside the change-request policy while it is being set (issue 43): a request is approved
 * by people other than its author, with at least the Member role, so when fewer such people than
 * `approvals` exist besides an author, that author's requests can never be approved (the Owner
 * alone in a new organization, say). Reads the organization's members (the dialog is an Admin's).
 */
export function ApprovalWarning(props: { org: string; approvals: number }) {
  const { org, approvals } = props;
  const members = useQuery({
    queryKey: ['members', org, 'reviewers'],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/members', {
          params: { path: { org }, query: { limit: MEMBERS_READ } },
        }),
      ),
  });
  const reviewers = (members.data?.items ?? []).filter((m) => m.role !== 'Viewer');
  if (!members.data || members.data.next_cursor || reviewers.length > approvals) return null;
  const names = reviewers.map((m) => `${m.name ?? m.email} (${m.role})`).join(', ');
  return (
    <p role="status" className="field-error">
      {reviewers.length === 1
        ? `${names} is the only member who could approve, and nobody approves their own request: `
        : `Only ${reviewers.length} members could approve (${names}), and nobody approves their own request: `}
      a request needing {approvals} {approvals === 1 ? 'approval' : 'approvals'} from any of them
      could never be approved. Invite a Member (or more) first, or require fewer approvals.
    </p>
  );
}
