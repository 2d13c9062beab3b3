import { useQuery } from '@tanstack/react-query';
import { Redirect, Route, Switch } from 'wouter';
import { ApiProblem, api, unwrap } from './api/client';
import { forgetToken } from './api/token';
import { FirstProjectForm } from './components/FirstProjectForm';
import { OrgShell } from './components/people/OrgShell';
import { Shell } from './components/Shell';
import { AcceptInvitation } from './pages/AcceptInvitation';
import { Account } from './pages/Account';
import { FlagList } from './pages/FlagList';
import { FlagPage } from './pages/FlagPage';
import { Members } from './pages/Members';
import { OrgSettings } from './pages/OrgSettings';
import { RemovalCandidates } from './pages/RemovalCandidates';
import { SignIn } from './pages/SignIn';
import { ForgotPassword, ResetPassword } from './pages/PasswordReset';
import { AuditLog } from './pages/admin/AuditLog';
import { Environments } from './pages/admin/Environments';
import { RelayKeys } from './pages/admin/RelayKeys';
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
      <Route path="/invitations/accept" component={AcceptInvitation} />
      <Route path="/forgot-password" component={ForgotPassword} />
      <Route path="/reset-password" component={ResetPassword} />
      <Route path="/orgs/:org/members">
        {(params) => (
          <Signed>
            <OrgShell org={params.org}>
              <Members org={params.org} />
            </OrgShell>
          </Signed>
        )}
      </Route>
      <Route path="/orgs/:org/settings">
        {(params) => (
          <Signed>
            <OrgShell org={params.org}>
              <OrgSettings org={params.org} />
            </OrgShell>
          </Signed>
        )}
      </Route>
      <Route path="/orgs/:org/account">
        {(params) => (
          <Signed>
            <OrgShell org={params.org}>
              <Account org={params.org} />
            </OrgShell>
          </Signed>
        )}
      </Route>
      <Route path={`${PROJECT}/flags/:flag/:section?`}>
        {(params) => (
          <InShell {...params}>
            <FlagPage
              org={params.org}
              project={params.project}
              flag={params.flag}
              section={params.section}
            />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/flags`}>
        {(params) => (
          <InShell {...params}>
            <FlagList org={params.org} project={params.project} />
          </InShell>
        )}
      </Route>
      <Route path={`${PROJECT}/removal-candidates`}>
        {(params) => (
          <InShell {...params}>
            <RemovalCandidates org={params.org} project={params.project} />
          </InShell>
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
      <Route path={`${PROJECT}/relay-keys`}>
        {(params) => (
          <InShell {...params}>
            <RelayKeys {...params} />
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

/**
 * Pages for signed-in people: whoever `GET /me` does not recognise (no session cookie, an
 * ended session, a revoked token) goes to the sign-in page.
 */
function Signed({ children }: { children: React.ReactNode }) {
  const me = useQuery({
    queryKey: ['me'],
    refetchInterval: false,
    queryFn: () => unwrap(api.GET('/api/v1/me')),
  });
  if (me.isPending) return <p role="status">Loading…</p>;
  if (me.error instanceof ApiProblem && me.error.status === 401) {
    forgetToken();
    return <Redirect to="/sign-in" />;
  }
  return children;
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
  if (!target.data.project) return <FirstProjectForm org={target.data.org} />;
  return <Redirect to={`/orgs/${target.data.org}/projects/${target.data.project}/flags`} />;
}
