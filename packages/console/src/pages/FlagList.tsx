import { Button, IconButton, TextField } from '@radix-ui/themes';
import { keepPreviousData, queryOptions, usePrefetchQuery, useQuery } from '@tanstack/react-query';
import { memo, useDeferredValue, useEffect, useMemo, useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import type { Environment, FlagSummary } from '../api/types';
import { useProjectUsage } from '../api/usage';
import { CreateFlagDialog } from '../components/CreateFlagDialog';
import {
  ListToggle,
  useConfirmedToggle,
  useToggleMutation,
  type Toggle,
  type ToggleAllowed,
} from '../components/EnvironmentToggle';
import { useFavourites } from '../components/favourites';
import { queryKeys } from '../api/query-keys';
import { usePlace } from '../components/Shell';
import { Sparkline } from '../components/Sparkline';
import '../flag-pages.css';

const PAGE_SIZE = 50;
/** The sparkline's days, today included. */
const SPARKLINE_DAYS = 7;
/** Width the flag list keeps for its other columns; each environment column takes about 7 rem. */
const FIXED_COLUMNS_PX = 720;
const ENVIRONMENT_COLUMN_PX = 112;

/** How many environment columns fit beside the others at the window's width (at least one). */
function useFittingColumns(): number {
  const fit = () =>
    Math.max(1, Math.floor((window.innerWidth - FIXED_COLUMNS_PX) / ENVIRONMENT_COLUMN_PX));
  const [count, setCount] = useState(fit);
  useEffect(() => {
    const onResize = () => setCount(fit());
    window.addEventListener('resize', onResize);
    return () => window.removeEventListener('resize', onResize);
  }, []);
  return count;
}

/**
 * Evaluations per day of every flag of the project over the last week, summed over
 * environments and variations: one `GET …/usage` for the whole list (design record 038), asked
 * for only once the flags are shown, so that it never delays them (design record 048).
 */
function useWeeklyUsage(
  org: string,
  project: string,
  enabled: boolean,
): Map<string, number[]> | undefined {
  const usage = useProjectUsage(org, project, {
    interval: 'day',
    buckets: SPARKLINE_DAYS,
    enabled,
  });
  const data = usage.data;
  // The same map until the counts change, so that the rows it feeds are not rendered again.
  return useMemo(
    () =>
      data &&
      new Map(
        data.flags.map((flag) => [
          flag.flagKey,
          data.buckets.map((_, day) =>
            flag.environments
              .flatMap((environment) => environment.variations)
              .reduce((sum, variation) => sum + (variation.counts[day] ?? 0), 0),
          ),
        ]),
      ),
    [data],
  );
}

/** The API's orders (`sort`); it sorts before paging, so every page follows the order. */
const SORTS = {
  key: 'Key',
  updated: 'Recently changed',
  created: 'Newest',
} as const;
type Sort = keyof typeof SORTS;

const TYPES = ['Boolean', 'String', 'Number', 'Json'] as const;
type FlagType = (typeof TYPES)[number] | '';
type Status = '' | 'on' | 'off';
type LifecycleStatus = '' | 'Stale' | 'Dead';

/**
 * Journey 2, "find a flag": every filter and the sort go to the API (`GET …/flags`), which applies
 * them before paging; favourites are sent as `keys`. Paging follows the API's cursors.
 */
export function FlagList({ org, project }: { org: string; project: string }) {
  const [search, setSearch] = useState('');
  const [tag, setTag] = useState('');
  const [archived, setArchived] = useState(false);
  const [expired, setExpired] = useState(false);
  const [favouritesOnly, setFavouritesOnly] = useState(false);
  const [mine, setMine] = useState(false);
  const [type, setType] = useState<FlagType>('');
  const [lifecycle, setLifecycle] = useState<LifecycleStatus>('');
  const { environments, environment: chosenEnvironment } = usePlace();
  const [pickedEnvironment, setStatusEnvironment] = useState('');
  // Until one is picked, the environment chosen in the header (environments load after mount).
  const statusEnvironment = pickedEnvironment || chosenEnvironment || environments[0]?.key || '';
  const [status, setStatus] = useState<Status>('');
  const [sort, setSort] = useState<Sort>('key');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const { favourites, toggle } = useFavourites(org, project);
  const fitting = useFittingColumns();
  const [pickedColumns, setPickedColumns] = useState<string[] | null>(null);
  // Until chosen, the environments that fit, in the project's order.
  const columns: Environment[] = useMemo(
    () =>
      pickedColumns
        ? environments.filter((e) => pickedColumns.includes(e.key ?? ''))
        : environments.slice(0, fitting),
    [environments, pickedColumns, fitting],
  );
  const q = useDeferredValue(search.trim());
  const cursor = cursors[cursors.length - 1];
  const favouriteKeys = favouritesOnly ? [...favourites].sort().join(',') : null;
  const statusFilter =
    status && statusEnvironment ? { environment: statusEnvironment, enabled: status === 'on' } : {};

  const flagsQuery = queryOptions({
    queryKey: queryKeys.flagList(org, project, {
      q,
      tag,
      archived,
      expired,
      mine,
      type,
      lifecycle,
      statusFilter,
      favouriteKeys,
      sort,
      cursor,
    }),
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
              ...(mine ? { owner: 'me' } : {}),
              ...(type ? { type } : {}),
              ...(lifecycle ? { lifecycle } : {}),
              ...statusFilter,
              ...(favouriteKeys !== null ? { keys: favouriteKeys } : {}),
              sort,
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      ),
  });
  // Sent while rendering, before the effects in which queries send their requests (the frame's
  // own among them): the rows are the page's first paint, so the server answers theirs first
  // (design record 050).
  usePrefetchQuery(flagsQuery);
  const changedFormat = useChangedFormat();
  const flags = useQuery({ ...flagsQuery, placeholderData: keepPreviousData });
  // One mutation and one confirmation for every switch of the list (lighter rows).
  const switching = useToggleMutation(org, project);
  const confirmed = useConfirmedToggle(switching.mutate);

  const usage = useWeeklyUsage(org, project, flags.isSuccess);

  function filtered<T>(set: (value: T) => void) {
    return (value: T) => {
      set(value);
      setCursors([undefined]);
    };
  }

  const items = flags.data?.items ?? [];
  const canCreate = flags.data?._actions['create']?.allowed ?? false;
  const canToggle = flags.data?._actions['toggle'];
  const paged = cursors.length > 1 || Boolean(flags.data?.next_cursor);
  // No filter chosen: an empty list is an empty project, not a search that found nothing.
  const unfiltered =
    !q &&
    !tag.trim() &&
    !archived &&
    !expired &&
    !mine &&
    !type &&
    !lifecycle &&
    !status &&
    favouriteKeys === null;

  return (
    <>
      <div className="page-heading">
        <h1>Flags</h1>
        {canCreate && <CreateFlagDialog org={org} project={project} />}
      </div>
      <search className="filters" aria-label="Filter flags">
        <label>
          Search flags
          <TextField.Root
            type="search"
            value={search}
            placeholder="Key or name"
            onChange={(event) => filtered(setSearch)(event.target.value)}
          />
        </label>
        <label>
          Tag
          <TextField.Root value={tag} onChange={(event) => filtered(setTag)(event.target.value)} />
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
            onChange={(event) => filtered(setFavouritesOnly)(event.target.checked)}
          />
          Favourites only
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={mine}
            onChange={(event) => filtered(setMine)(event.target.checked)}
          />
          Mine
        </label>
        <label>
          Type
          <select
            value={type}
            onChange={(event) => filtered(setType)(event.target.value as FlagType)}
          >
            <option value="">Any type</option>
            {TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Flag status
          <select
            value={status}
            onChange={(event) => filtered(setStatus)(event.target.value as Status)}
          >
            <option value="">On or off</option>
            <option value="on">On</option>
            <option value="off">Off</option>
          </select>
        </label>
        <label>
          Status in environment
          <select
            value={statusEnvironment}
            onChange={(event) => filtered(setStatusEnvironment)(event.target.value)}
          >
            <option value="">Choose an environment</option>
            {environments.map((environment) => (
              <option key={environment.id} value={environment.key ?? ''}>
                {environment.name ?? environment.key}
              </option>
            ))}
          </select>
        </label>
        <label>
          Lifecycle
          <select
            value={lifecycle}
            onChange={(event) => filtered(setLifecycle)(event.target.value as LifecycleStatus)}
          >
            <option value="">Any</option>
            <option value="Stale">Stale</option>
            <option value="Dead">Dead</option>
          </select>
        </label>
        <label>
          Sort by
          <select value={sort} onChange={(event) => filtered(setSort)(event.target.value as Sort)}>
            {Object.entries(SORTS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </search>
      {environments.length > columns.length || pickedColumns ? (
        <details className="column-chooser">
          <summary>
            Environment columns ({columns.length} of {environments.length})
          </summary>
          <fieldset>
            <legend className="visually-hidden">Environments shown as columns</legend>
            {environments.map((environment) => (
              <label key={environment.id} className="check">
                <input
                  type="checkbox"
                  checked={columns.includes(environment)}
                  onChange={(event) => {
                    const keys = columns.map((c) => c.key ?? '');
                    const key = environment.key ?? '';
                    setPickedColumns(
                      event.target.checked ? [...keys, key] : keys.filter((k) => k !== key),
                    );
                  }}
                />
                {environment.name ?? environment.key}
              </label>
            ))}
          </fieldset>
        </details>
      ) : null}
      {flags.isError && <p role="alert">{flags.error.message}</p>}
      <table className="flags">
        <caption className="visually-hidden">Flags in {project}</caption>
        <thead>
          <tr>
            <th scope="col">
              <span className="visually-hidden">Favourite</span>
            </th>
            <th scope="col">Flag</th>
            {columns.map((environment) => (
              <th scope="col" key={environment.id}>
                {environment.name ?? environment.key}
              </th>
            ))}
            <th scope="col">Evaluations, 7 days</th>
            <th scope="col">References in code</th>
            <th scope="col">Type</th>
            <th scope="col">Tags</th>
            <th scope="col">Changed</th>
          </tr>
        </thead>
        <tbody>
          {items.map((flag) => (
            <FlagRow
              key={flag.id}
              org={org}
              project={project}
              flag={flag}
              columns={columns}
              favourite={favourites.has(flag.key)}
              onFavourite={toggle}
              canToggle={canToggle}
              switching={
                switching.variables?.flag === flag.key
                  ? {
                      environmentId: switching.variables.environment.id,
                      pending: switching.isPending,
                      error: switching.error,
                    }
                  : null
              }
              request={confirmed.request}
              counts={usage && (usage.get(flag.key) ?? NO_EVALUATIONS)}
              changedFormat={changedFormat}
            />
          ))}
        </tbody>
      </table>
      {confirmed.dialog}
      {flags.isSuccess &&
        items.length === 0 &&
        (unfiltered ? (
          <p>
            This project has no flags yet.
            {canCreate && ' Create the first one with “New flag”, at the top of the page.'}
          </p>
        ) : (
          <p>No flags match.</p>
        ))}
      {paged && (
        <nav aria-label="Pages" className="pager">
          <Button
            type="button"
            variant="soft"
            color="gray"
            disabled={cursors.length === 1}
            onClick={() => setCursors(cursors.slice(0, -1))}
          >
            Previous page
          </Button>
          <Button
            type="button"
            variant="soft"
            color="gray"
            disabled={!flags.data?.next_cursor}
            onClick={() => setCursors([...cursors, flags.data?.next_cursor ?? undefined])}
          >
            Next page
          </Button>
        </nav>
      )}
    </>
  );
}

/**
 * References on the repositories' default branches (flag-cleanup contract, section 4): a number,
 * or "unknown" while no repository of the project was ever scanned (unknown is not zero).
 */
function CodeReferenceCount({ count }: { count: number | null }) {
  if (count === null)
    return <span title="No repository of this project has been scanned yet">unknown</span>;
  return <>{count}</>;
}

/** The Sparkline of a flag with no evaluations in the week. */
const NO_EVALUATIONS: number[] = Array<number>(SPARKLINE_DAYS).fill(0);

/**
 * How a flag's last change is shown: what `Date.prototype.toLocaleString` shows, with a formatter
 * made once. The first date a page formats loads the locale's data (tens of milliseconds in
 * Chromium), so the list makes it on its first render, while its flags are still being fetched,
 * rather than when the rows render (design record 050).
 */
function useChangedFormat(): Intl.DateTimeFormat {
  return useMemo(
    () =>
      new Intl.DateTimeFormat(undefined, {
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      }),
    [],
  );
}

/**
 * One flag's row. Memoized, and every prop stays the same object while the row's content does,
 * so that the list rendering again (its frame's requests answered, a filter typed, a switch
 * toggled, the week's counts arriving) renders only the rows that changed (design record 050).
 */
const FlagRow = memo(function FlagRow(props: {
  org: string;
  project: string;
  flag: FlagSummary;
  columns: Environment[];
  favourite: boolean;
  onFavourite: (flagKey: string) => void;
  canToggle: ToggleAllowed;
  /** The list's toggle when it concerns this flag: in which environment, its state. */
  switching: { environmentId: string; pending: boolean; error: Error | null } | null;
  request: (toggle: Toggle) => void;
  /** Evaluations per day, or undefined until the week's usage has arrived. */
  counts: number[] | undefined;
  changedFormat: Intl.DateTimeFormat;
}) {
  const { org, project, flag, favourite, switching } = props;
  return (
    <tr>
      <td>
        <IconButton
          type="button"
          variant="ghost"
          color={favourite ? undefined : 'gray'}
          aria-pressed={favourite}
          aria-label={`Favourite ${flag.key}`}
          onClick={() => props.onFavourite(flag.key)}
        >
          {favourite ? '★' : '☆'}
        </IconButton>
      </td>
      <td>
        <Link href={`/orgs/${org}/projects/${project}/flags/${flag.key}`}>
          {flag.name ?? flag.key}
        </Link>
        <div className="hint">
          <code>{flag.key}</code>
          {flag.clientSideVisible && ' · client-side'}
          {flag.isArchived && ' · archived'}
          {flag.isExpired && ' · expired'}
        </div>
      </td>
      {props.columns.map((environment) => {
        const toggled = switching?.environmentId === environment.id ? switching : null;
        return (
          <td key={environment.id}>
            <ListToggle
              flag={flag}
              environment={environment}
              enabled={
                flag.environments.find((e) => e.environmentKey === environment.key)?.isEnabled ??
                false
              }
              allowed={
                flag.isArchived
                  ? { allowed: false, reason: 'The flag is archived.' }
                  : props.canToggle
              }
              pending={toggled?.pending ?? false}
              error={toggled?.error ?? null}
              request={props.request}
            />
          </td>
        );
      })}
      <td>{props.counts && <Sparkline counts={props.counts} />}</td>
      <td>
        <CodeReferenceCount count={flag.codeReferences} />
      </td>
      <td>{flag.type}</td>
      <td>{flag.tags.join(', ')}</td>
      <td>
        <time dateTime={flag.updatedAt}>
          {props.changedFormat.format(new Date(flag.updatedAt))}
        </time>
      </td>
    </tr>
  );
});
