import { useQuery } from '@tanstack/react-query';
import { Link, useSearch } from 'wouter';
import { api, unwrap } from '../api/client';
import type { ChangeRequest, ChangeRequestState } from '../api/types';
import { changeRequestPath, changeRequestsPath } from '../components/change-requests/paths';
import { authorName, StateBadge } from '../components/change-requests/StateBadge';
import { formatWhen } from '../components/change-requests/when';
import { usePlace } from '../components/Shell';
import '../flag-pages.css';
import { queryKeys } from '../api/query-keys';

type Query = {
  state?: ChangeRequestState;
  author?: 'me';
  reviewable?: boolean;
};

/** The list's tabs, each a filter of `GET …/change-requests` (change-requests.md section 2). */
const TABS = {
  open: { label: 'Open', query: { state: 'open' }, empty: 'No request is waiting for review.' },
  mine: { label: 'Mine', query: { author: 'me' }, empty: 'You have not opened any request.' },
  'to-review': {
    label: 'To review',
    query: { reviewable: true },
    empty: 'Nothing waits for your review.',
  },
  approved: {
    label: 'Approved',
    query: { state: 'approved' },
    empty: 'No approved request waits to be applied.',
  },
  scheduled: {
    label: 'Scheduled',
    query: { state: 'scheduled' },
    empty: 'No request is scheduled.',
  },
  done: { label: 'Done', query: {}, empty: 'No request has ended yet.' },
} satisfies Record<string, { label: string; query: Query; empty: string }>;

/** The final states, which "Done" lists: the API filters one state at a time. */
const DONE: readonly ChangeRequestState[] = ['applied', 'rejected', 'cancelled', 'failed'];
const SHOWN = 100;
type Tab = keyof typeof TABS;

/**
 * The project's change requests (design record 043): a tab per question people ask (what is
 * open, what is mine, what waits for me, what is scheduled, what has ended), each its own
 * address (`?tab=`), newest first as the API pages them.
 */
export function ChangeRequests({ org, project }: { org: string; project: string }) {
  const requested = new URLSearchParams(useSearch()).get('tab') ?? 'open';
  const tab: Tab = requested in TABS ? (requested as Tab) : 'open';
  const { environments } = usePlace();
  const list = useQuery({
    queryKey: queryKeys.changeRequestList(org, project, tab),
    queryFn: async () => {
      const read = (query: Query) =>
        unwrap(
          api.GET('/api/v1/orgs/{org}/projects/{project}/change-requests', {
            params: { path: { org, project }, query: { ...query, limit: SHOWN } },
          }),
        );
      if (tab !== 'done') return (await read(TABS[tab].query)).items;
      // One read per final state, merged newest first and cut to one page's worth.
      const pages = await Promise.all(DONE.map((state) => read({ state })));
      return pages
        .flatMap((page) => page.items)
        .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
        .slice(0, SHOWN);
    },
  });
  const environmentName = (key: string) => environments.find((e) => e.key === key)?.name ?? key;
  const items = list.data ?? [];
  return (
    <>
      <h1>Change requests</h1>
      <p className="hint">
        Changes to environments that require review: proposed, approved by someone else, then
        applied at once or at a set time.
      </p>
      <nav aria-label="Change request lists" className="tabs sections">
        {Object.entries(TABS).map(([value, { label }]) => (
          <Link
            key={value}
            href={changeRequestsPath(org, project, value)}
            aria-current={value === tab ? 'page' : undefined}
          >
            {label}
          </Link>
        ))}
      </nav>
      {list.error && <p role="alert">{list.error.message}</p>}
      {list.data && items.length === 0 && <p className="hint">{TABS[tab].empty}</p>}
      {items.length > 0 && (
        <table aria-label={`${TABS[tab].label} change requests`}>
          <thead>
            <tr>
              <th scope="col">Request</th>
              <th scope="col">Environment</th>
              <th scope="col">Author</th>
              <th scope="col">State</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {items.map((request) => (
              <Row
                key={request.id}
                org={org}
                project={project}
                request={request}
                environment={environmentName(request.environmentKey)}
              />
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function Row(props: { org: string; project: string; request: ChangeRequest; environment: string }) {
  const { request } = props;
  return (
    <tr>
      <th scope="row">
        <Link href={changeRequestPath(props.org, props.project, request.number)}>
          CR {request.number}: {request.title}
        </Link>
      </th>
      <td>{props.environment}</td>
      <td>{authorName(request.author)}</td>
      <td>
        <StateBadge request={request} />
      </td>
      <td>{formatWhen(request.updatedAt)}</td>
    </tr>
  );
}
