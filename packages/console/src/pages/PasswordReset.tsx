import { useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import { Field } from '../components/Field';
import { NewPasswordField } from '../components/people/NewPasswordField';
import { useFormMutation } from '../components/useFormMutation';

/**
 * "Forgot password?" (design record 034): asks for a reset link by e-mail. The answer is the same
 * whether or not the address has an account, and so is what this page says.
 */
export function ForgotPassword() {
  const [email, setEmail] = useState('');
  const request = useFormMutation({
    messageAt: 'email',
    mutationFn: () => unwrap(api.POST('/auth/password-reset', { body: { email: email.trim() } })),
  });
  return (
    <main className="sign-in">
      <h1>Reset your password</h1>
      {request.isSuccess ? (
        <p role="status">
          If {email.trim()} has an account, an e-mail with a link to choose a new password is on its
          way. The link works once, for a limited time. Nothing arriving? Ask the person who runs
          Vexil: resetting needs e-mail set up.
        </p>
      ) : (
        <form onSubmit={request.submit}>
          <Field
            label="E-mail"
            type="email"
            autoComplete="username"
            required
            value={email}
            error={request.problemAt('email')}
            onChange={(event) => setEmail(event.target.value)}
          />
          <button type="submit" disabled={request.isPending}>
            Send reset link
          </button>
        </form>
      )}
      <p>
        <Link href="/sign-in">Back to sign-in</Link>
      </p>
    </main>
  );
}

/** The reset secret from the link `/reset-password#token=vxl_pwr_…`. */
function resetToken(): string | null {
  return new URLSearchParams(window.location.hash.slice(1)).get('token');
}

/** The page a reset link opens: a new password, then sign-in with it (every session ended). */
export function ResetPassword() {
  const token = resetToken();
  const [newPassword, setNewPassword] = useState('');
  const complete = useFormMutation({
    messageAt: 'newPassword',
    mutationFn: () =>
      unwrap(
        api.POST('/auth/password-reset/complete', { body: { token: token ?? '', newPassword } }),
      ),
  });
  if (!token)
    return (
      <main className="sign-in">
        <h1>Choose a new password</h1>
        <p role="alert">This address carries no reset link: open the whole link from the e-mail.</p>
      </main>
    );
  return (
    <main className="sign-in">
      <h1>Choose a new password</h1>
      {complete.isSuccess ? (
        <p role="status">
          Your password is changed, and every session that was signed in has ended.{' '}
          <Link href="/sign-in">Sign in</Link> with the new password.
        </p>
      ) : (
        <form onSubmit={complete.submit}>
          {complete.problemAt('token') && (
            <p className="field-error" role="alert">
              This link {complete.problemAt('token')}:{' '}
              <Link href="/forgot-password">ask for a new one</Link>.
            </p>
          )}
          <NewPasswordField
            label="New password"
            value={newPassword}
            error={complete.problemAt('newPassword')}
            onChange={setNewPassword}
          />
          <button type="submit" disabled={complete.isPending}>
            Set new password
          </button>
        </form>
      )}
    </main>
  );
}
