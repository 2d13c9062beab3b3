import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import { Compare } from '../components/Compare';
import { EnvironmentToggle } from '../components/EnvironmentToggle';
import { History } from '../components/History';
import { Lifecycle } from '../components/Lifecycle';
import { UsageChart } from '../components/UsageChart';
import { usePlace } from '../components/Shell';
import { Variations } from '../components/Variations';
import { Targeting } from '../components/targeting/Targeting';

/** One flag: its variations and, per environment, whether it is on (journey 3). */
export function FlagPage({ org, project, flag }: { org: string; project: string; flag: string }) {
  const { environments, environment: chosen } = usePlace();
  const path = { org, project, flag };
  const detail = useQuery({
    queryKey: ['flag', org, project, flag, 'detail'],
    queryFn: () =>
      unwrap(api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}', { params: { path } })),
  });
  const configurations = useQuery({
    queryKey: ['flag', org, project, flag, 'environments'],
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

  return (
    <>
      <nav aria-label="Breadcrumb" className="hint">
        <Link href={`/orgs/${org}/projects/${project}/flags`}>Flags</Link> / {data.key}
      </nav>
      <div className="page-heading">
        <h1>{data.name ?? data.key}</h1>
        <span className="badge">{data.type}</span>
        {data.isArchived && <span className="badge">archived</span>}
      </div>
      <p className="hint">
        <code>{data.key}</code>
        {data.description && ` · ${data.description}`}
      </p>
      <section aria-labelledby="environments-heading">
        <h2 id="environments-heading">Environments</h2>
        <ul className="environments">
          {environments.map((environment) => {
            const configuration = configurations.data?.find(
              (c) => c.environmentId === environment.id,
            );
            return (
              <li key={environment.id}>
                {configuration && (
                  <EnvironmentToggle
                    org={org}
                    project={project}
                    flag={data.key ?? flag}
                    environment={environment}
                    configuration={configuration}
                  />
                )}
              </li>
            );
          })}
        </ul>
      </section>
      <section aria-labelledby="targeting-heading">
        <h2 id="targeting-heading">Targeting</h2>
        {configurations.data && (
          <Targeting
            org={org}
            project={project}
            flag={data}
            environments={environments}
            configurations={configurations.data}
            initial={chosen}
          />
        )}
      </section>
      <Variations org={org} project={project} flag={data} />
      {configurations.data && environments.length > 1 && (
        <Compare
          org={org}
          project={project}
          flag={data}
          environments={environments}
          configurations={configurations.data}
        />
      )}
      <UsageChart org={org} project={project} flag={data.key ?? flag} />
      <Lifecycle org={org} project={project} flag={data} />
      <History org={org} flagId={data.id} />
    </>
  );
}
