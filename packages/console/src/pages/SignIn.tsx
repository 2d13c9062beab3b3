import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { ApiProblem, api, unwrap } from '../api/client';
import { forgetToken, saveToken } from '../api/token';
import { Field } from '../components/Field';
import { PasswordForm } from '../components/people/PasswordForm';
import { FirstRun } from './FirstRun';
import { queryKeys } from '../api/query-keys';
import { useFormMutation } from '../components/useFormMutation';

const SSO_ORG_KEY = 'vexil.sso-org';

/**
 * What the page says when a single sign-on came back refused: the server's callback sends the
 * browser here with `?error=<reason>` (design record 024). An unknown reason reads as the last.
 */
const SSO_REFUSALS: Readonly<Record<string, string>> = {
  sso_expired: 'That single sign-on was already used or took too long. Start again.',
  sso_other_browser:
    'That single sign-on was not started in this browser, or took too long. Start it again here.',
  sso_provider_error:
    'Your identity provider did not sign you in (refused or cancelled). Try again.',
  sso_answer_refused:
    "Your identity provider's answer could not be verified. Try again, or tell an Admin of your organization.",
  sso_provider_unreachable: 'Your identity provider could not be reached. Try again in a moment.',
  sso_disabled: "Your organization's single sign-on is turned off. Ask an Admin.",
  sso_domain_not_allowed:
    "Your e-mail address is not in a domain your organization's single sign-on accepts.",
  sso_email_unverified: 'Your identity provider has not verified your e-mail address.',
  sso_not_member: 'You are not a member of this organization yet. Ask an Admin for an invitation.',
  sso_account_exists:
    'Your e-mail address already has a Vexil account that this single sign-on is not linked to. Sign in with your password, then sign in with SSO again to link them.',
  sso_failed: 'Single sign-on did not work. Try again.',
};

/**
 * Sign-in (console.md journey 1; design record 022): e-mail and password, the organization's
 * single sign-on, or a pasted personal access or service token for those who prefer one. On an
 * instance without an organization, the first-run setup instead.
 */
export function SignIn() {
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const [usingToken, setUsingToken] = useState(false);
  const refusal = new URLSearchParams(useSearch()).get('error');
  const signedIn = () => {
    queryClient.clear();
    navigate('/');
  };
  // A fresh instance offers its first-run setup instead (design record 040).
  const setup = useQuery({
    queryKey: queryKeys.setup(),
    queryFn: () => unwrap(api.GET('/auth/setup')),
  });
  if (setup.data?.required) return <FirstRun onSignedIn={signedIn} />;

  return (
    <main className="sign-in">
      <h1>Sign in to Vexil</h1>
      <PasswordForm submitLabel="Sign in" onSignedIn={signedIn} />
      <p>
        <Link href="/forgot-password">Forgot password?</Link>
      </p>
      <section aria-labelledby="sso-heading">
        <h2 id="sso-heading">Single sign-on</h2>
        {refusal !== null && <p role="alert">{SSO_REFUSALS[refusal] ?? SSO_REFUSALS.sso_failed}</p>}
        <SingleSignOn />
      </section>
      <section aria-label="API token">
        <button
          type="button"
          className="quiet"
          aria-expanded={usingToken}
          aria-controls="token-sign-in"
          onClick={() => setUsingToken(!usingToken)}
        >
          Use an API token
        </button>
        <div id="token-sign-in" hidden={!usingToken}>
          {usingToken && <TokenForm onSignedIn={signedIn} />}
        </div>
      </section>
    </main>
  );
}

/**
 * "Sign in with SSO" for an organization: the start is tried first without following the
 * redirect, so that an organization without a connection is said here, at the field, rather
 * than on a JSON page; then the browser goes to the identity provider.
 */
function SingleSignOn() {
  const [org, setOrg] = useState(() => localStorage.getItem(SSO_ORG_KEY) ?? '');
  const start = useFormMutation({
    mutationFn: async () => {
      const url = `/auth/sso/${encodeURIComponent(org.trim())}`;
      const response = await fetch(url, { redirect: 'manual' });
      if (response.type !== 'opaqueredirect') {
        const envelope = (await response.json().catch(() => ({}))) as { message?: string };
        throw new Error(envelope.message ?? `${response.status} ${response.statusText}`);
      }
      localStorage.setItem(SSO_ORG_KEY, org.trim());
      forgetToken();
      window.location.assign(url);
    },
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        start.mutate();
      }}
    >
      <Field
        label="Organization"
        hint="Its short name, as in the console's addresses (/orgs/acme)."
        required
        value={org}
        error={start.error?.message}
        onChange={(event) => setOrg(event.target.value)}
      />
      <button type="submit" className="quiet" disabled={start.isPending}>
        Sign in with SSO
      </button>
    </form>
  );
}

/** A pasted token, checked with `GET /me` before it is kept in localStorage. */
function TokenForm(props: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const check = useFormMutation({
    mutationFn: async () => {
      saveToken(token.trim());
      try {
        await unwrap(api.GET('/api/v1/me'));
      } catch (error) {
        forgetToken();
        throw error;
      }
    },
    onSuccess: props.onSignedIn,
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        check.mutate();
      }}
    >
      <Field
        label="Access token"
        type="password"
        autoComplete="off"
        required
        value={token}
        hint="A personal access token or service token; npx vexil bootstrap prints the first one."
        error={
          check.error
            ? check.error instanceof ApiProblem
              ? check.error.message
              : 'Vexil could not be reached.'
            : undefined
        }
        onChange={(event) => setToken(event.target.value)}
      />
      <button type="submit" disabled={check.isPending}>
        Sign in with token
      </button>
    </form>
  );
}
