import { useQuery } from '@tanstack/react-query';
import { Redirect, Route, Switch } from 'wouter';
import { api, unwrap } from './api/client';
import { readToken } from './api/token';
import { Shell } from './components/Shell';
import { FlagList } from './pages/FlagList';
import { FlagPage } from './pages/FlagPage';
import { RemovalCandidates } from './pages/RemovalCandidates';
import { SignIn } from './pages/SignIn';
import { AuditLog } from './pages/admin/AuditLog';
import { Environments } from './pages/admin/Environments';
import { SdkKeys } from './pages/admin/SdkKeys';
import { SegmentPage, Segments } from './pages/admin/Segments';
import { WebhookPage } from './pages/admin/WebhookPage';
import { Webhooks } from './pages/admin/Webhooks';

const PROJECT = '/orgs/:org/projects/:project';

/** Client-side routes; the server answers each of them with index.html (design record 023). */
export function App() {
  return (
    <Switch>
      <Route path="/sign-in" component={SignIn} />
      <Route path={`${PROJECT}/flags/:flag`}>
        {(params) => (
          <Signed>
            <Shell org={params.org} project={params.project}>
              <FlagPage org={params.org} project={params.project} flag={params.flag} />
            </Shell>
          </Signed>
        )}
      </Route>
      <Route path={`${PROJECT}/flags`}>
        {(params) => (
          <Signed>
            <Shell org={params.org} project={params.project}>
              <FlagList org={params.org} project={params.project} />
            </Shell>
          </Signed>
        )}
      </Route>
      <Route path={`${PROJECT}/removal-candidates`}>
        {(params) => (
          <Signed>
            <Shell org={params.org} project={params.project}>
              <RemovalCandidates org={params.org} project={params.project} />
            </Shell>
          </Signed>
        )}
      </Route>
      <Route path={`${PROJECT}/environments`}>
        {(params) => (
          <InShell {...params}>
            <Environments {...params} />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/segments/:segment`}>
        {(params) => (
          <InShell {...params}>
            <SegmentPage {...params} />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/segments`}>
        {(params) => (
          <InShell {...params}>
            <Segments {...params} />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/sdk-keys`}>
        {(params) => (
          <InShell {...params}>
            <SdkKeys {...params} />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/webhooks/:id`}>
        {(params) => (
          <InShell {...params}>
            <WebhookPage {...params} />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/webhooks`}>
        {(params) => (
          <InShell {...params}>
            <Webhooks {...params} />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/audit-log`}>
        {(params) => (
          <InShell {...params}>
            <AuditLog org={params.org} />
          </InShell>
        )}
      </Route>
      <Route path="/orgs/:org/projects">
        {(params) => (
          <Signed>
            <FirstProject org={params.org} />
          </Signed>
        )}
      </Route>
      <Route>
        <Signed>
          <FirstProject />
        </Signed>
      </Route>
    </Switch>
  );
}

/** A signed-in page inside the Shell of its organization and project. */
function InShell(props: { org: string; project: string; children: React.ReactNode }) {
  return (
    <Signed>
      <Shell org={props.org} project={props.project}>
        {props.children}
      </Shell>
    </Signed>
  );
}

function Signed({ children }: { children: React.ReactNode }) {
  return readToken() ? children : <Redirect to="/sign-in" />;
}

/** The first project of the given organization, or of the first one the caller belongs to. */
function FirstProject(props: { org?: string }) {
  const target = useQuery({
    queryKey: ['first-project', props.org],
    refetchInterval: false,
    queryFn: async () => {
      const org = props.org ?? (await unwrap(api.GET('/api/v1/orgs'))).items[0]?.slug;
      if (!org) return null;
      const projects = await unwrap(
        api.GET('/api/v1/orgs/{org}/projects', { params: { path: { org } } }),
      );
      return { org, project: projects.items[0]?.key ?? null };
    },
  });
  if (target.isPending) return <p role="status">Loading…</p>;
  if (target.isError) return <Redirect to="/sign-in" />;
  if (!target.data) return <p>You do not belong to any organization yet.</p>;
  if (!target.data.project)
    return <p>Organization {target.data.org} has no project yet: create one through the API.</p>;
  return <Redirect to={`/orgs/${target.data.org}/projects/${target.data.project}/flags`} />;
}
