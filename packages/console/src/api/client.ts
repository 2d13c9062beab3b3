import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';
import { readToken } from './token';

/**
 * The management API's error envelope (spec: Errors; docs/api.md), thrown by {@link unwrap} so
 * pages can show the message next to the control it concerns.
 */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, string[]>,
    readonly didYouMean: string[],
  ) {
    super(message);
  }

  /** The first problem reported for `field` (dotted path as the API names it), if any. */
  field(field: string): string | undefined {
    return this.fields[field]?.[0];
  }
}

interface Envelope {
  error?: string;
  message?: string;
  fields?: Record<string, string[]>;
  did_you_mean?: string[];
}

/** The readable cookie holding the session's CSRF token (design record 022). */
const CSRF_COOKIE = 'vexil_csrf';

/** The session's CSRF token from its readable cookie; null when no session was started here. */
export function csrfToken(): string | null {
  const entry = document.cookie.split('; ').find((c) => c.startsWith(`${CSRF_COOKIE}=`));
  return entry ? decodeURIComponent(entry.slice(CSRF_COOKIE.length + 1)) : null;
}

/**
 * A pasted token goes as a bearer credential. Otherwise the browser sends the session cookie
 * (same origin), and a change also carries the CSRF token as `X-CSRF-Token`: browsers send
 * `Origin` anyway, the header is the double-submit fallback for those that do not (design
 * record 022).
 */
const authorize: Middleware = {
  onRequest({ request }) {
    const token = readToken();
    if (token) request.headers.set('Authorization', `Bearer ${token}`);
    else if (request.method !== 'GET' && request.method !== 'HEAD') {
      const csrf = csrfToken();
      if (csrf) request.headers.set('X-CSRF-Token', csrf);
    }
    return request;
  },
};

/** The typed management API client: paths and bodies come from the committed openapi.json. */
export const api = createClient<paths>({ baseUrl: '/' });
api.use(authorize);

/**
 * The body of a successful answer, or an {@link ApiProblem} carrying the error envelope.
 * @throws ApiProblem
 */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const envelope = (error ?? {}) as Envelope;
  throw new ApiProblem(
    response.status,
    envelope.error ?? 'error',
    envelope.message ?? `${response.status} ${response.statusText}`,
    envelope.fields ?? {},
    envelope.did_you_mean ?? [],
  );
}
