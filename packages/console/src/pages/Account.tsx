import { Button } from '@radix-ui/themes';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import { ActionsTableHead } from '../components/ActionsTableHead';
import { ConfirmButton } from '../components/ConfirmButton';
import { Field } from '../components/Field';
import { NewPasswordField } from '../components/people/NewPasswordField';
import { LastUsed } from '../components/LastUsed';
import { when } from '../components/people/organization';
import { SecretOnce } from '../components/SecretOnce';
import { useFormMutation } from '../components/useFormMutation';
import { queryKeys } from '../api/query-keys';

/**
 * One's own account (console.md journey 1): who one is signed in as, a password change (design
 * record 034), the sessions one has open (revoke any; revoking this one signs out) and personal
 * access tokens (the secret shown once).
 */
export function Account(props: { org: string }) {
  const { org } = props;
  const me = useQuery({ queryKey: queryKeys.me(), queryFn: () => unwrap(api.GET('/api/v1/me')) });
  const userId = me.data?.type === 'user' ? me.data.id : null;
  const membership = useQuery({
    queryKey: queryKeys.member(org, userId),
    enabled: userId !== null,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/members/{userId}', {
          params: { path: { org, userId: userId ?? '' } },
        }),
      ),
  });
  const role = me.data?.role ?? membership.data?.role;
  return (
    <>
      <div className="page-heading">
        <h1>Your account</h1>
      </div>
      {me.data && (
        <p>
          Signed in as <strong>{me.data.name ?? me.data.email ?? me.data.id}</strong>
          {me.data.email && me.data.name ? ` (${me.data.email})` : ''}
          {role ? `, ${role} of ${org}` : ''}.
        </p>
      )}
      {me.data?.type === 'service_token' ? (
        <p className="hint">
          This console is signed in with a service token: it has no sessions or personal tokens.
        </p>
      ) : (
        <>
          <ChangePassword />
          <Sessions />
          <PersonalTokens />
        </>
      )}
    </>
  );
}

/** `POST /me/password`: the other sessions end, so the list below is read again. */
function ChangePassword() {
  const queryClient = useQueryClient();
  const [currentPassword, setCurrentPassword] = useState('');
  const [newPassword, setNewPassword] = useState('');
  const change = useFormMutation({
    messageAt: 'currentPassword',
    mutationFn: () =>
      unwrap(api.POST('/api/v1/me/password', { body: { currentPassword, newPassword } })),
    onSuccess: () => {
      setCurrentPassword('');
      setNewPassword('');
      void queryClient.invalidateQueries({ queryKey: queryKeys.mySessions() });
    },
  });
  return (
    <section aria-labelledby="password-heading">
      <h2 id="password-heading">Password</h2>
      <form aria-label="Change password" onSubmit={change.submit}>
        <Field
          label="Current password"
          type="password"
          autoComplete="current-password"
          required
          value={currentPassword}
          error={change.problemAt('currentPassword')}
          onChange={(event) => setCurrentPassword(event.target.value)}
        />
        <NewPasswordField
          label="New password"
          value={newPassword}
          error={change.problemAt('newPassword')}
          onChange={setNewPassword}
        />
        <button type="submit" disabled={change.isPending}>
          Change password
        </button>
      </form>
      {change.isSuccess && (
        <p role="status">Password changed. Your other sessions have ended; this one goes on.</p>
      )}
    </section>
  );
}

function Sessions() {
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const sessions = useQuery({
    queryKey: queryKeys.mySessions(),
    queryFn: () => unwrap(api.GET('/api/v1/me/sessions')),
  });
  const revoke = useFormMutation({
    mutationFn: (id: string) =>
      unwrap(api.DELETE('/api/v1/me/sessions/{id}', { params: { path: { id } } })),
    onSuccess: (_, id) => {
      if (sessions.data?.items.find((s) => s.id === id)?.current) {
        queryClient.clear();
        navigate('/sign-in');
      } else void queryClient.invalidateQueries({ queryKey: queryKeys.mySessions() });
    },
  });
  const items = sessions.data?.items ?? [];
  return (
    <section aria-labelledby="sessions-heading">
      <h2 id="sessions-heading">Sessions</h2>
      {sessions.isSuccess && items.length === 0 && (
        <p className="hint">No browser sessions: this console is signed in with a token.</p>
      )}
      {revoke.error && <p className="field-error">{revoke.error.message}</p>}
      {items.length > 0 && (
        <table>
          <ActionsTableHead columns={['Browser', 'Signed in', 'Last used', 'Ends']} />
          <tbody>
            {items.map((session) => (
              <tr key={session.id}>
                <td>
                  {session.userAgent ?? 'Unknown browser'}
                  {session.ip ? ` from ${session.ip}` : ''}
                  {session.ssoConnectionId ? ' (single sign-on)' : ''}
                  {session.current && (
                    <>
                      {' '}
                      <span className="badge">This session</span>
                    </>
                  )}
                </td>
                <td>{when(session.createdAt)}</td>
                <td>{when(session.lastSeenAt)}</td>
                <td>{when(session.expiresAt)}</td>
                <td>
                  <ConfirmButton
                    label={session.current ? 'Sign out' : 'Revoke'}
                    ariaLabel={
                      session.current
                        ? 'Sign out of this session'
                        : `Revoke session signed in ${when(session.createdAt)}`
                    }
                    title={session.current ? 'Sign out of this session?' : 'Revoke this session?'}
                    description="The browser using it is signed out at its next request."
                    confirm={session.current ? 'Sign out' : 'Revoke session'}
                    onConfirm={() => revoke.mutate(session.id)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function PersonalTokens() {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState('');
  const tokens = useQuery({
    queryKey: queryKeys.myTokens(),
    queryFn: () => unwrap(api.GET('/api/v1/me/tokens')),
  });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: queryKeys.myTokens() });
  const create = useFormMutation({
    messageAt: 'name',
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/me/tokens', {
          body: {
            name: name.trim(),
            ...(expiry ? { expiresAt: new Date(`${expiry}T00:00:00Z`).toISOString() } : {}),
          },
        }),
      ),
    onSuccess: () => {
      setName('');
      setExpiry('');
      refresh();
    },
  });
  const revoke = useFormMutation({
    mutationFn: (tokenId: string) =>
      unwrap(api.DELETE('/api/v1/me/tokens/{tokenId}', { params: { path: { tokenId } } })),
    onSuccess: refresh,
  });
  const items = tokens.data?.items ?? [];
  return (
    <section aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">Personal access tokens</h2>
      <p className="hint">
        For scripts and CI: a token acts as you, with your role in each organization.
      </p>
      <form className="row" aria-label="New personal access token" onSubmit={create.submit}>
        <Field
          label="Token name"
          required
          value={name}
          error={create.problemAt('name')}
          onChange={(event) => setName(event.target.value)}
        />
        <Field
          label="Expires on"
          type="date"
          hint="Empty: never expires."
          value={expiry}
          error={create.problemAt('expiresAt')}
          onChange={(event) => setExpiry(event.target.value)}
        />
        <Button type="submit" disabled={create.isPending}>
          Create token
        </Button>
      </form>
      {create.data && (
        <SecretOnce
          label={`Token ${create.data.name}`}
          secret={create.data.token}
          warning="Copy it now: Vexil keeps only its hash and will not show it again."
        />
      )}
      {revoke.error && <p className="field-error">{revoke.error.message}</p>}
      {items.length > 0 && (
        <table>
          <ActionsTableHead columns={['Name', 'Ends in', 'Last used', 'Expires']} />
          <tbody>
            {items.map((token) => (
              <tr key={token.id}>
                <td>{token.name}</td>
                <td>
                  <code>…{token.lastFourCharacters}</code>
                </td>
                <td>
                  <LastUsed at={token.lastUsedAt} />
                </td>
                <td>{token.expiresAt ? when(token.expiresAt) : 'never'}</td>
                <td>
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={`Revoke token ${token.name}`}
                    title={`Revoke token ${token.name}?`}
                    description="Scripts using it are refused from their next request."
                    confirm="Revoke token"
                    onConfirm={() => revoke.mutate(token.id)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
