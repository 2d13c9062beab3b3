import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useDeferredValue, useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import type { FlagSummary } from '../api/types';
import { CreateFlagDialog } from '../components/CreateFlagDialog';
import { useFavourites } from '../components/favourites';

const PAGE_SIZE = 50;

const SORTS = {
  key: { label: 'Key', compare: (a: FlagSummary, b: FlagSummary) => a.key.localeCompare(b.key) },
  name: {
    label: 'Name',
    compare: (a: FlagSummary, b: FlagSummary) => (a.name ?? a.key).localeCompare(b.name ?? b.key),
  },
  updated: {
    label: 'Recently changed',
    compare: (a: FlagSummary, b: FlagSummary) => b.updatedAt.localeCompare(a.updatedAt),
  },
  created: {
    label: 'Newest',
    compare: (a: FlagSummary, b: FlagSummary) => b.createdAt.localeCompare(a.createdAt),
  },
} as const;
type Sort = keyof typeof SORTS;

/**
 * Journey 2, "find a flag": search, tag, archived and expired go to the API (`GET …/flags`);
 * favourites and sort apply to the page shown. Paging follows the API's cursors.
 */
export function FlagList({ org, project }: { org: string; project: string }) {
  const [search, setSearch] = useState('');
  const [tag, setTag] = useState('');
  const [archived, setArchived] = useState(false);
  const [expired, setExpired] = useState(false);
  const [favouritesOnly, setFavouritesOnly] = useState(false);
  const [sort, setSort] = useState<Sort>('key');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const { favourites, toggle } = useFavourites(org, project);
  const q = useDeferredValue(search.trim());
  const cursor = cursors[cursors.length - 1];

  const flags = useQuery({
    queryKey: ['flags', org, project, { q, tag, archived, expired, cursor }],
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags', {
          params: {
            path: { org, project },
            query: {
              limit: PAGE_SIZE,
              ...(q ? { q } : {}),
              ...(tag.trim() ? { tag: tag.trim() } : {}),
              ...(archived ? { archived } : {}),
              ...(expired ? { expired } : {}),
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      ),
  });

  function filtered<T>(set: (value: T) => void) {
    return (value: T) => {
      set(value);
      setCursors([undefined]);
    };
  }

  const items = (flags.data?.items ?? [])
    .filter((flag) => !favouritesOnly || favourites.has(flag.key))
    .sort(SORTS[sort].compare);
  const canCreate = flags.data?._actions['create']?.allowed ?? false;

  return (
    <>
      <div className="page-heading">
        <h1>Flags</h1>
        {canCreate && <CreateFlagDialog org={org} project={project} />}
      </div>
      <search className="filters" aria-label="Filter flags">
        <label>
          Search flags
          <input
            type="search"
            value={search}
            placeholder="Key or name"
            onChange={(event) => filtered(setSearch)(event.target.value)}
          />
        </label>
        <label>
          Tag
          <input value={tag} onChange={(event) => filtered(setTag)(event.target.value)} />
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={archived}
            onChange={(event) => filtered(setArchived)(event.target.checked)}
          />
          Archived
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={expired}
            onChange={(event) => filtered(setExpired)(event.target.checked)}
          />
          Expired
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={favouritesOnly}
            onChange={(event) => setFavouritesOnly(event.target.checked)}
          />
          Favourites only
        </label>
        <label>
          Sort by
          <select value={sort} onChange={(event) => setSort(event.target.value as Sort)}>
            {Object.entries(SORTS).map(([value, { label }]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </search>
      {flags.isError && <p role="alert">{flags.error.message}</p>}
      <table className="flags">
        <caption className="visually-hidden">Flags in {project}</caption>
        <thead>
          <tr>
            <th scope="col">
              <span className="visually-hidden">Favourite</span>
            </th>
            <th scope="col">Flag</th>
            <th scope="col">Type</th>
            <th scope="col">Tags</th>
            <th scope="col">Changed</th>
          </tr>
        </thead>
        <tbody>
          {items.map((flag) => (
            <tr key={flag.id}>
              <td>
                <button
                  type="button"
                  className="star"
                  aria-pressed={favourites.has(flag.key)}
                  aria-label={`Favourite ${flag.key}`}
                  onClick={() => toggle(flag.key)}
                >
                  {favourites.has(flag.key) ? '★' : '☆'}
                </button>
              </td>
              <td>
                <Link href={`/orgs/${org}/projects/${project}/flags/${flag.key}`}>
                  {flag.name ?? flag.key}
                </Link>
                <div className="hint">
                  <code>{flag.key}</code>
                  {flag.isArchived && ' · archived'}
                  {flag.isExpired && ' · expired'}
                </div>
              </td>
              <td>{flag.type}</td>
              <td>{flag.tags.join(', ')}</td>
              <td>
                <time dateTime={flag.updatedAt}>{new Date(flag.updatedAt).toLocaleString()}</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {flags.isSuccess && items.length === 0 && <p>No flags match.</p>}
      <nav aria-label="Pages" className="pager">
        <button
          type="button"
          disabled={cursors.length === 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Previous page
        </button>
        <button
          type="button"
          disabled={!flags.data?.next_cursor}
          onClick={() => setCursors([...cursors, flags.data?.next_cursor ?? undefined])}
        >
          Next page
        </button>
      </nav>
    </>
  );
}
