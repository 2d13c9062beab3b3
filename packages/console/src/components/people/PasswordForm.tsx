import { Button } from '@radix-ui/themes';
import { useState } from 'react';
import { ApiProblem, api, unwrap } from '../../api/client';
import { forgetToken } from '../../api/token';
import { Field } from '../Field';
import { useFormMutation } from '../useFormMutation';

/**
 * E-mail and password sign-in (`POST /auth/password`): the server sets the session cookie, and
 * a pasted token is forgotten so that the cookie is what the console uses from then on.
 */
export function PasswordForm(props: { submitLabel: string; onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signIn = useFormMutation({
    mutationFn: async () => {
      forgetToken();
      await unwrap(api.POST('/auth/password', { body: { email, password } }));
    },
    onSuccess: props.onSignedIn,
  });
  const problem = signIn.error instanceof ApiProblem ? signIn.error : null;
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        signIn.mutate();
      }}
    >
      <Field
        label="E-mail"
        type="email"
        autoComplete="username"
        required
        value={email}
        error={problem?.field('email')}
        onChange={(event) => setEmail(event.target.value)}
      />
      <Field
        label="Password"
        type="password"
        autoComplete="current-password"
        required
        value={password}
        error={
          problem?.field('password') ??
          (signIn.error && !problem?.field('email') ? signIn.error.message : undefined)
        }
        onChange={(event) => setPassword(event.target.value)}
      />
      <Button type="submit" disabled={signIn.isPending}>
        {props.submitLabel}
      </Button>
    </form>
  );
}
