import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { ApiProblem, api, csrfToken, unwrap } from '../api/client';
import { readToken } from '../api/token';
import { Field } from '../components/Field';
import { NewPasswordField } from '../components/people/NewPasswordField';
import { PasswordForm } from '../components/people/PasswordForm';
import { queryKeys } from '../api/query-keys';
import { useFormMutation } from '../components/useFormMutation';

/** The invitation secret from the link `/invitations/accept#token=vxl_inv_…` (design record 022). */
function invitationToken(): string | null {
  return new URLSearchParams(window.location.hash.slice(1)).get('token');
}

/**
 * Accepting an invitation from its link (console.md journey 1). Signed in: accept as oneself.
 * Otherwise: a new person chooses a name and password (and is signed in), or someone with an
 * account signs in first and then accepts.
 */
export function AcceptInvitation() {
  const token = invitationToken();
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  // Only with a credential to try: signed out, `GET /me` would only answer 401.
  const credential = readToken() !== null || csrfToken() !== null;
  const me = useQuery({
    queryKey: queryKeys.me(),
    refetchInterval: false,
    retry: false,
    enabled: credential,
    queryFn: () => unwrap(api.GET('/api/v1/me')),
  });
  // What the link is for, read before anything is accepted; a dead link answers 404.
  const invitation = useQuery({
    queryKey: queryKeys.invitation(token ?? ''),
    refetchInterval: false,
    retry: false,
    enabled: token !== null,
    queryFn: () =>
      unwrap(api.GET('/api/v1/invitations/{token}', { params: { path: { token: token ?? '' } } })),
  });
  const accept = useFormMutation({
    mutationFn: (newcomer: { name: string; password: string } | null) =>
      unwrap(api.POST('/api/v1/invitations/accept', { body: { token: token ?? '', ...newcomer } })),
    onSuccess: (accepted) => {
      queryClient.clear();
      navigate(`/orgs/${accepted.organization.slug}/projects`);
    },
  });

  if (!token)
    return (
      <main className="sign-in">
        <h1>Accept an invitation</h1>
        <p role="alert">This address carries no invitation: open the whole link you were given.</p>
      </main>
    );
  if ((credential && me.isPending) || invitation.isPending) return <p role="status">Loading…</p>;
  if (invitation.isError)
    return (
      <main className="sign-in">
        <h1>Accept an invitation</h1>
        <p role="alert">{invitation.error.message}</p>
      </main>
    );
  const { organization, role, email } = invitation.data;
  const problem = accept.error instanceof ApiProblem ? accept.error : null;
  const signedInAs = me.data?.type === 'user' ? (me.data.email ?? me.data.id) : null;

  return (
    <main className="sign-in">
      <h1>Accept an invitation</h1>
      <p>
        You are invited to join <strong>{organization.name}</strong> as {role}.
      </p>
      <p>The invitation is for {email}.</p>
      {problem && Object.keys(problem.fields).length === 0 && (
        <p className="field-error" role="alert">
          {problem.message}
        </p>
      )}
      {signedInAs ? (
        <>
          <p>You are signed in as {signedInAs}.</p>
          <button type="button" disabled={accept.isPending} onClick={() => accept.mutate(null)}>
            Accept invitation
          </button>
        </>
      ) : (
        <>
          <NewAccount
            problem={problem}
            pending={accept.isPending}
            onSubmit={(newcomer) => accept.mutate(newcomer)}
          />
          <section aria-labelledby="existing-heading">
            <h2 id="existing-heading">Already have an account?</h2>
            <p className="hint">Sign in, then accept the invitation as yourself.</p>
            <PasswordForm submitLabel="Sign in and accept" onSignedIn={() => accept.mutate(null)} />
          </section>
        </>
      )}
    </main>
  );
}

function NewAccount(props: {
  problem: ApiProblem | null;
  pending: boolean;
  onSubmit: (newcomer: { name: string; password: string }) => void;
}) {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  return (
    <section aria-labelledby="new-heading">
      <h2 id="new-heading">New to Vexil?</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          props.onSubmit({ name: name.trim(), password });
        }}
      >
        <Field
          label="Your name"
          required
          autoComplete="name"
          value={name}
          error={props.problem?.field('name')}
          onChange={(event) => setName(event.target.value)}
        />
        <NewPasswordField
          label="Choose a password"
          value={password}
          error={props.problem?.field('password')}
          onChange={setPassword}
        />
        <button type="submit" disabled={props.pending}>
          Create account and accept
        </button>
      </form>
    </section>
  );
}
