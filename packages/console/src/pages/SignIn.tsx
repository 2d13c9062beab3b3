import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { ApiProblem, api, unwrap } from '../api/client';
import { forgetToken, saveToken } from '../api/token';

/**
 * Sign-in with a pasted personal access or service token (`vexil bootstrap` prints one), checked
 * with `GET /me` before it is kept. E-mail, password and SSO arrive with "People and sign-in".
 */
export function SignIn() {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();

  async function signIn(event: React.SyntheticEvent) {
    event.preventDefault();
    saveToken(token.trim());
    try {
      await unwrap(api.GET('/api/v1/me'));
      queryClient.clear();
      navigate('/');
    } catch (error) {
      forgetToken();
      setProblem(error instanceof ApiProblem ? error.message : 'Vexil could not be reached.');
    }
  }

  return (
    <main className="sign-in">
      <h1>Sign in to Vexil</h1>
      <form onSubmit={(event) => void signIn(event)}>
        <label htmlFor="token">Access token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          required
          value={token}
          aria-invalid={problem !== null}
          aria-describedby="token-help"
          onChange={(event) => setToken(event.target.value)}
        />
        <p id="token-help" className={problem ? 'field-error' : 'hint'}>
          {problem ?? (
            <>
              A personal access token or service token; <code>npx vexil bootstrap</code> prints the
              first one.
            </>
          )}
        </p>
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}
