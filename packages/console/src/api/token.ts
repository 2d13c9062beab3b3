// The pasted personal access or service token lives in localStorage until sign-out, until
// "People and sign-in" brings session cookies (design record 023).
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
