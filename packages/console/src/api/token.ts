// A pasted personal access or service token ("Use an API token") lives in localStorage until
// sign-out; password and SSO sign-in use the session cookie instead (design records 022, 023).
const KEY = 'vexil.token';

export function readToken(): string | null {
  return localStorage.getItem(KEY);
}

export function saveToken(token: string): void {
  localStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  localStorage.removeItem(KEY);
}
