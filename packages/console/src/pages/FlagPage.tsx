import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import { CodeReferences } from '../components/CodeReferences';
import { Compare } from '../components/Compare';
import { EnvironmentToggle } from '../components/EnvironmentToggle';
import { FlagDetails } from '../components/FlagDetails';
import { History } from '../components/History';
import { Lifecycle } from '../components/Lifecycle';
import { FlagExperiments } from '../components/experiments/FlagExperiments';
import { ReleasePlans } from '../components/release-plan/ReleasePlans';
import { usePlace } from '../components/Shell';
import { Variations } from '../components/Variations';
import { Targeting } from '../components/targeting/Targeting';
import '../flag-pages.css';
import { queryKeys } from '../api/query-keys';

// uPlot loads with the Insights section only, so the other sections' script stays small.
const UsageChart = lazy(() => import('../components/UsageChart'));

/** The flag page's sections, each at its own address (`…/flags/{flag}/{section}`). */
export const FLAG_SECTIONS = {
  targeting: 'Targeting',
  variations: 'Variations',
  release: 'Release plan',
  experiments: 'Experiments',
  insights: 'Insights',
  code: 'Code',
  history: 'History',
  settings: 'Settings',
} as const;
export type FlagSection = keyof typeof FLAG_SECTIONS;

/** A flag page's address: its section, and the environment shown (`?env=`). */
export function flagPath(
  org: string,
  project: string,
  flag: string,
  section: FlagSection = 'targeting',
  environment?: string,
): string {
  const path = `/orgs/${org}/projects/${project}/flags/${flag}/${section}`;
  return environment ? `${path}?env=${encodeURIComponent(environment)}` : path;
}

/**
 * One flag (journeys 3 and 4), in sections people jump between, each addressable; the
 * environment lives in the address too (`?env=`), so a reloaded, bookmarked or shared page shows
 * the same targeting at once, and the sidebar shows the same environment. Without `env`, the
 * environment shown last, else the first (design records 038 and 058). Each section reads only what it shows: at most 5 API requests.
 */
export function FlagPage(props: { org: string; project: string; flag: string; section?: string }) {
  const { org, project, flag } = props;
  // `release-plan`, as the API and the tab's name say it, is the release plan section too.
  const asked = props.section === 'release-plan' ? 'release' : props.section;
  const known = asked === undefined || asked in FLAG_SECTIONS;
  const section: FlagSection = asked && known ? (asked as FlagSection) : 'targeting';
  // The frame reads `?env=` from the address (the sidebar shows the same), else the last shown.
  const { environments, environment: shown } = usePlace();
  const environment = shown ?? '';
  const [, navigate] = useLocation();
  const path = { org, project, flag };
  const detail = useQuery({
    queryKey: queryKeys.flagDetail(org, project, flag),
    queryFn: () =>
      unwrap(api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}', { params: { path } })),
  });
  const configurations = useQuery({
    queryKey: queryKeys.flagEnvironments(org, project, flag),
    enabled:
      section === 'targeting' ||
      section === 'settings' ||
      section === 'release' ||
      section === 'experiments',
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments', {
          params: { path },
        }),
      ),
  });

  if (detail.isError) return <p role="alert">{detail.error.message}</p>;
  if (!detail.data) return <p role="status">Loading…</p>;
  const data = detail.data;
  const key = data.key ?? flag;

  return (
    <>
      <nav aria-label="Breadcrumb" className="hint">
        <Link href={`/orgs/${org}/projects/${project}/flags`}>Flags</Link> / {data.key}
      </nav>
      <div className="page-heading">
        <h1>{data.name ?? data.key}</h1>
        <span className="badge">{data.type}</span>
        {data.isArchived && <span className="badge">archived</span>}
        <span className="badge">
          {data.clientSideVisible ? 'visible to client-side SDKs' : 'server-side SDKs only'}
        </span>
      </div>
      <p className="hint">
        <code>{data.key}</code>
        {data.description && ` · ${data.description}`}
      </p>
      {!known && (
        <p role="alert">
          A flag has no section &ldquo;{props.section}&rdquo;; it has{' '}
          {Object.values(FLAG_SECTIONS).join(', ')}. Targeting is shown.
        </p>
      )}
      <nav aria-label="Flag sections" className="tabs sections">
        {Object.entries(FLAG_SECTIONS).map(([value, label]) => (
          <Link
            key={value}
            href={flagPath(org, project, key, value as FlagSection, environment)}
            aria-current={value === section ? 'page' : undefined}
          >
            {label}
          </Link>
        ))}
      </nav>
      {section === 'targeting' && (
        <section aria-labelledby="targeting-heading">
          <h2 id="targeting-heading">Targeting</h2>
          <ul className="environments" aria-label="On or off per environment">
            {environments.map((e) => {
              const configuration = configurations.data?.find((c) => c.environmentId === e.id);
              return (
                <li key={e.id}>
                  {configuration && (
                    <EnvironmentToggle
                      org={org}
                      project={project}
                      flag={key}
                      environment={e}
                      enabled={configuration.isEnabled}
                      allowed={configuration._actions['toggle']}
                    />
                  )}
                </li>
              );
            })}
          </ul>
          {configurations.data && environment && (
            <Targeting
              org={org}
              project={project}
              flag={data}
              environments={environments}
              configurations={configurations.data}
              environment={environment}
              onEnvironment={(next) =>
                navigate(flagPath(org, project, key, 'targeting', next), { replace: true })
              }
            />
          )}
        </section>
      )}
      {section === 'variations' && <Variations org={org} project={project} flag={data} />}
      {section === 'release' && configurations.data && environment && (
        <ReleasePlans
          org={org}
          project={project}
          flag={data}
          environments={environments}
          configurations={configurations.data}
          environment={environment}
          onEnvironment={(next) =>
            navigate(flagPath(org, project, key, 'release', next), { replace: true })
          }
        />
      )}
      {section === 'experiments' && configurations.data && environment && (
        <FlagExperiments
          org={org}
          project={project}
          flag={data}
          environments={environments}
          configurations={configurations.data}
          environment={environment}
          onEnvironment={(next) =>
            navigate(flagPath(org, project, key, 'experiments', next), { replace: true })
          }
        />
      )}
      {section === 'insights' && (
        <Suspense fallback={<p role="status">Loading…</p>}>
          <UsageChart org={org} project={project} flag={data} />
        </Suspense>
      )}
      {section === 'code' && <CodeReferences org={org} project={project} flag={data} />}
      {section === 'history' && <History org={org} project={project} flag={data} />}
      {section === 'settings' && (
        <>
          <FlagDetails org={org} project={project} flag={data} />
          <Lifecycle org={org} project={project} flag={data} />
          {configurations.data && environments.length > 1 && (
            <Compare
              org={org}
              project={project}
              flag={data}
              environments={environments}
              configurations={configurations.data}
            />
          )}
        </>
      )}
    </>
  );
}
