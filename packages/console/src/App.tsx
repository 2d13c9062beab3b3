import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense } from 'react';
import { Link, Redirect, Route, Switch } from 'wouter';
import { ApiProblem, api, csrfToken, unwrap } from './api/client';
import { forgetToken, readToken } from './api/token';
import { FirstProjectForm } from './components/FirstProjectForm';
import { OrgShell } from './components/people/OrgShell';
import { Shell } from './components/Shell';
import { FlagList } from './pages/FlagList';
import { SignIn } from './pages/SignIn';
import { queryKeys } from './api/query-keys';

/**
 * Pages other than the flag list (where a project opens) and sign-in load when first opened, so
 * that the script a browser runs before the flag list's first paint holds only what it shows
 * (design record 048).
 */
const AcceptInvitation = lazy(() =>
  import('./pages/AcceptInvitation').then((m) => ({ default: m.AcceptInvitation })),
);
const Account = lazy(() => import('./pages/Account').then((m) => ({ default: m.Account })));
const FlagPage = lazy(() => import('./pages/FlagPage').then((m) => ({ default: m.FlagPage })));
const Members = lazy(() => import('./pages/Members').then((m) => ({ default: m.Members })));
const OrgSettings = lazy(() =>
  import('./pages/OrgSettings').then((m) => ({ default: m.OrgSettings })),
);
const Experiments = lazy(() =>
  import('./pages/Experiments').then((m) => ({ default: m.Experiments })),
);
const ExperimentPage = lazy(() =>
  import('./pages/ExperimentPage').then((m) => ({ default: m.ExperimentPage })),
);
const Metrics = lazy(() => import('./pages/Metrics').then((m) => ({ default: m.Metrics })));
const RemovalCandidates = lazy(() =>
  import('./pages/RemovalCandidates').then((m) => ({ default: m.RemovalCandidates })),
);
const ForgotPassword = lazy(() =>
  import('./pages/PasswordReset').then((m) => ({ default: m.ForgotPassword })),
);
const ResetPassword = lazy(() =>
  import('./pages/PasswordReset').then((m) => ({ default: m.ResetPassword })),
);
const AuditLog = lazy(() =>
  import('./pages/admin/AuditLog').then((m) => ({ default: m.AuditLog })),
);
const Environments = lazy(() =>
  import('./pages/admin/Environments').then((m) => ({ default: m.Environments })),
);
const SdkKeys = lazy(() => import('./pages/admin/SdkKeys').then((m) => ({ default: m.SdkKeys })));
const SegmentPage = lazy(() =>
  import('./pages/admin/Segments').then((m) => ({ default: m.SegmentPage })),
);
const Segments = lazy(() =>
  import('./pages/admin/Segments').then((m) => ({ default: m.Segments })),
);
const WebhookPage = lazy(() =>
  import('./pages/admin/WebhookPage').then((m) => ({ default: m.WebhookPage })),
);
const ChangeRequestPage = lazy(() =>
  import('./pages/ChangeRequestPage').then((m) => ({ default: m.ChangeRequestPage })),
);
const ChangeRequests = lazy(() =>
  import('./pages/ChangeRequests').then((m) => ({ default: m.ChangeRequests })),
);
const RelayKeys = lazy(() =>
  import('./pages/admin/RelayKeys').then((m) => ({ default: m.RelayKeys })),
);
const Webhooks = lazy(() =>
  import('./pages/admin/Webhooks').then((m) => ({ default: m.Webhooks })),
);

const PROJECT = '/orgs/:org/projects/:project';

/** Client-side routes; the server answers each of them with index.html (design record 023). */
export function App() {
  return (
    <Suspense fallback={<Loading />}>
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
        <Route path={`${PROJECT}/flags/:flag/experiments/:env/:experiment`}>
          {(params) => (
            <InShell {...params}>
              <ExperimentPage {...params} />
            </InShell>
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
        <Route path={`${PROJECT}/change-requests/:number`}>
          {(params) => (
            <InShell {...params}>
              <ChangeRequestPage {...params} />
            </InShell>
          )}
        </Route>
        <Route path={`${PROJECT}/change-requests`}>
          {(params) => (
            <InShell {...params}>
              <ChangeRequests org={params.org} project={params.project} />
            </InShell>
          )}
        </Route>
        <Route path={`${PROJECT}/experiments`}>
          {(params) => (
            <InShell {...params}>
              <Experiments org={params.org} project={params.project} />
            </InShell>
          )}
        </Route>
        <Route path={`${PROJECT}/metrics`}>
          {(params) => (
            <InShell {...params}>
              <Metrics org={params.org} project={params.project} />
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
        <Route path={PROJECT}>
          {(params) => <Redirect to={`/orgs/${params.org}/projects/${params.project}/flags`} />}
        </Route>
        <Route path="/orgs/:org/projects">
          {(params) => (
            <Signed>
              <FirstProject org={params.org} />
            </Signed>
          )}
        </Route>
        <Route path="/">
          <Signed>
            <FirstProject />
          </Signed>
        </Route>
        <Route path="/orgs/:org">
          {(params) => (
            <Signed>
              <FirstProject org={params.org} />
            </Signed>
          )}
        </Route>
        <Route component={NotFound} />
      </Switch>
    </Suspense>
  );
}

/**
 * An address the console does not know (a typo, an old link): said, with the way on, rather than
 * a silent redirect to the flag list.
 */
function NotFound() {
  return (
    <main className="sign-in">
      <h1>Page not found</h1>
      <p role="alert">
        The console has no page at <code>{window.location.pathname}</code>. Check the address, or go
        to <Link href="/">your flags</Link>.
      </p>
    </main>
  );
}

function Loading() {
  return <p role="status">Loading…</p>;
}

/** A signed-in page inside the Shell of its organization and project. */
function InShell(props: { org: string; project: string; children: React.ReactNode }) {
  return (
    <Signed>
      <Shell org={props.org} project={props.project}>
        <Suspense fallback={<Loading />}>{props.children}</Suspense>
      </Shell>
    </Signed>
  );
}

/**
 * Pages for signed-in people: whoever `GET /me` does not recognise (no session cookie, an
 * ended session, a revoked token) goes to the sign-in page. With a credential to try (a pasted
 * token, a session's CSRF cookie) the page renders at once, so that its own requests go out
 * beside `GET /me` rather than after it (design record 048).
 */
function Signed({ children }: { children: React.ReactNode }) {
  // Without a credential to try, `GET /me` could only answer 401 (an error in the browser's
  // console on every signed-out visit): go to sign-in without asking.
  const credential = readToken() !== null || csrfToken() !== null;
  const me = useQuery({
    queryKey: queryKeys.me(),
    refetchInterval: false,
    enabled: credential,
    queryFn: () => unwrap(api.GET('/api/v1/me')),
  });
  if (!credential) return <Redirect to="/sign-in" />;
  if (me.error instanceof ApiProblem && me.error.status === 401) {
    forgetToken();
    return <Redirect to="/sign-in" />;
  }
  return children;
}

/** The first project of the given organization, or of the first one the caller belongs to. */
function FirstProject(props: { org?: string }) {
  const target = useQuery({
    queryKey: queryKeys.firstProject(props.org),
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
