import { Button } from '@radix-ui/themes';
import { queryOptions, usePrefetchQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useId, useMemo, useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { api, unwrap } from '../api/client';
import { forgetToken } from '../api/token';
import type { Environment } from '../api/types';
import { useToReview } from './change-requests/queries';
import { CommandBar } from './CommandBar';
import { useLiveUpdates } from '../api/live';
import { Logo } from './Logo';
import '../change-requests.css';
import { lastProjectKey } from './people/organization';
import {
  projectPages,
  useAdministrationPages,
  useOrganizationPages,
  type ConsolePage,
} from './pages';
import { queryKeys } from '../api/query-keys';

interface Place {
  org: string;
  project: string;
  environments: Environment[];
  /**
   * The environment every page shows: the address's `?env=`, else the one last shown (kept per
   * project in localStorage), else the first (design record 058).
   */
  environment: string | null;
}

const PlaceContext = createContext<Place | null>(null);
const NO_ENVIRONMENTS: Environment[] = [];

/** Where the person is: organization, project, its environments and the chosen one. */
export function usePlace(): Place {
  const place = useContext(PlaceContext);
  if (!place) throw new Error('usePlace outside <Shell>');
  return place;
}

/** Environments marked critical ask for confirmation before a change (design record 025). */
export function isCritical(environment: Pick<Environment, 'critical'>): boolean {
  return environment.critical;
}

/**
 * The signed-in frame: a side navigation with the organization, project and environment
 * switchers, the command bar, the pages (those the person's role may use) and sign-out; below
 * 48rem it hides behind a "Menu" button and closes when a page opens.
 */
export function Shell(props: { org: string; project: string; children: React.ReactNode }) {
  const { org, project } = props;
  const [location, navigate] = useLocation();
  const search = useSearch();
  const queryClient = useQueryClient();
  const storageKey = `vexil.environment.${org}/${project}`;
  const [chosen, choose] = useState(() => localStorage.getItem(storageKey));
  const [menuOpen, setMenuOpen] = useState(false);
  const sidebarId = useId();
  useLiveUpdates(org);
  useEffect(() => setMenuOpen(false), [location]);
  useEffect(() => sessionStorage.setItem(lastProjectKey(org), project), [org, project]);
  const administration = useAdministrationPages(org, project);
  const toReview = useToReview(org, project);
  const organization = useOrganizationPages(org);
  const home = `/orgs/${org}/projects/${project}/flags`;

  const orgs = useQuery({
    queryKey: queryKeys.orgs(),
    queryFn: () => unwrap(api.GET('/api/v1/orgs')),
  });
  const projects = useQuery({
    queryKey: queryKeys.projects(org),
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}/projects', { params: { path: { org } } })),
  });
  const environmentsQuery = queryOptions({
    queryKey: queryKeys.environments(org, project),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/environments', {
          params: { path: { org, project }, query: { limit: 200 } },
        }),
      ),
  });
  // Pages show the environments in their first paint (the flag list's columns), so they are
  // asked for while rendering, before the effects in which the frame's other queries send their
  // requests (design record 050).
  usePrefetchQuery(environmentsQuery);
  const environments = useQuery(environmentsQuery);
  const environmentList = environments.data?.items ?? NO_ENVIRONMENTS;
  // The address is the one source of truth: the sidebar, the flag page's tabs and the
  // per-environment pages (SDK keys) all read this; a remembered choice only fills an address
  // that names none.
  const requested = new URLSearchParams(search).get('env');
  const environment =
    environmentList.find((e) => e.key === requested)?.key ??
    environmentList.find((e) => e.key === chosen)?.key ??
    environmentList[0]?.key ??
    null;
  useEffect(() => {
    if (requested === null || !environmentList.some((e) => e.key === requested)) return;
    localStorage.setItem(storageKey, requested);
    choose(requested);
  }, [requested, environmentList, storageKey]);

  // The same object until the place changes: every page under the frame reads it, and the frame
  // renders again as each of its own requests is answered, which must not render the page again
  // (the flag list's rows render once their request is answered, not once per frame request).
  const place = useMemo(
    () => ({ org, project, environments: environmentList, environment }),
    [org, project, environmentList, environment],
  );

  // Ends the session on the server too (and clears its cookies); a pasted token is forgotten.
  async function signOut() {
    forgetToken();
    await api.POST('/auth/logout').catch(() => undefined);
    queryClient.clear();
    navigate('/sign-in');
  }

  return (
    <PlaceContext.Provider value={place}>
      <div className="frame">
        <header className="topbar">
          <Brand href={home} />
          <Button
            variant="soft"
            color="gray"
            aria-expanded={menuOpen}
            aria-controls={sidebarId}
            onClick={() => setMenuOpen(!menuOpen)}
          >
            Menu
          </Button>
        </header>
        <aside id={sidebarId} className={menuOpen ? 'sidebar open' : 'sidebar'}>
          <Brand href={home} />
          <nav aria-label="Context" className="switchers">
            <label>
              Organization
              <select
                value={org}
                onChange={(event) => navigate(`/orgs/${event.target.value}/projects`)}
              >
                {(orgs.data?.items ?? [{ slug: org, name: org }]).map((o) => (
                  <option key={o.slug} value={o.slug}>
                    {o.name}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Project
              <select
                value={project}
                onChange={(event) => navigate(`/orgs/${org}/projects/${event.target.value}/flags`)}
              >
                {(projects.data?.items ?? [{ key: project, name: project }]).map((p) => (
                  <option key={p.key} value={p.key}>
                    {p.name}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Environment
              <select
                value={environment ?? ''}
                onChange={(event) =>
                  navigate(withEnvironment(location, search, event.target.value), {
                    replace: true,
                  })
                }
              >
                {environmentList.map((e) => (
                  <option key={e.id} value={e.key ?? ''}>
                    {e.name ?? e.key}
                  </option>
                ))}
              </select>
            </label>
          </nav>
          <CommandBar org={org} project={project} />
          <nav aria-label="Sections" className="pages">
            <NavLinks pages={projectPages(org, project, toReview.data?.items.length)} />
            <p className="nav-group">Administer</p>
            <NavLinks pages={administration} />
            <p className="nav-group">Organization</p>
            <NavLinks pages={organization} />
          </nav>
          <div className="sidebar-foot">
            <Button variant="soft" color="gray" onClick={() => void signOut()}>
              Sign out
            </Button>
          </div>
        </aside>
        <main className="page">{props.children}</main>
      </div>
    </PlaceContext.Provider>
  );
}

/** The address `location?search` with its `env` set to `environment`. */
function withEnvironment(location: string, search: string, environment: string): string {
  const query = new URLSearchParams(search);
  query.set('env', environment);
  return `${location}?${query.toString()}`;
}

function Brand(props: { href: string }) {
  return (
    <Link href={props.href} className="brand">
      <Logo />
      Vexil
    </Link>
  );
}

/** Links to pages; the one open (or one of its sub-pages) is marked as the current page. */
function NavLinks(props: { pages: readonly ConsolePage[] }) {
  const [location] = useLocation();
  return props.pages.map((page) => (
    <Link
      key={page.path}
      href={page.path}
      aria-current={
        location === page.path || location.startsWith(`${page.path}/`) ? 'page' : undefined
      }
    >
      {page.label}
      {page.count && ' '}
      {page.count && (
        <span className="nav-count">
          {page.count.value}
          <span className="visually-hidden"> {page.count.of}</span>
        </span>
      )}
    </Link>
  ));
}
