/**
 * Typed errors of the HTTP APIs. Handlers throw an {@link ApiError}; each API has exactly one
 * mapper to its wire shape (management: the error envelope; evaluation: the problem body).
 */

/** Every management error code the service emits, with its reference entry (served at `/docs/errors`). */
export const ERROR_CODES = {
  bad_request: {
    status: 400,
    title: 'Bad request',
    text: 'The handler refused the request; the message says why.',
  },
  validation_failed: {
    status: 400,
    title: 'Validation failed',
    text: 'The body, query or path is invalid. `fields` maps each offending field to one sentence saying what it must be; `message` names them all.',
  },
  malformed_json: {
    status: 400,
    title: 'Malformed JSON',
    text: 'The request body is not valid JSON.',
  },
  FLAG_RECENTLY_EVALUATED: {
    status: 400,
    title: 'Flag recently evaluated',
    text: 'Archiving was refused because live traffic still evaluates the flag. Pass `force=true` to archive anyway.',
  },
  FLAG_STILL_REFERENCED: {
    status: 400,
    title: 'Flag still referenced',
    text: 'Archiving was refused because code on a default branch still reads the flag (its code references; `fields.places` names the first 10). Remove it from code first (`vexil cleanup`), or pass `force=true` to archive anyway.',
  },
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    text: 'The bearer credential or session is missing, invalid, expired or revoked.',
  },
  sso_required: {
    status: 403,
    title: 'Single sign-on required',
    text: 'The organization requires single sign-on and this credential did not come through its identity provider. Sign in with the connection in `connection_id`.',
  },
  csrf_rejected: {
    status: 403,
    title: 'Cross-site request refused',
    text: 'A change signed in by the session cookie must come from the console: send `Origin`, or the `vexil_csrf` cookie value in `X-CSRF-Token`.',
  },
  sign_in_disabled: {
    status: 403,
    title: 'Sign-in method disabled',
    text: 'This way of signing in is switched off on this instance or for this connection.',
  },
  sso_failed: {
    status: 400,
    title: 'Single sign-on failed',
    text: 'The identity provider sign-in could not be completed; the message says why. Start again.',
  },
  invitation_used: {
    status: 410,
    title: 'Invitation already used',
    text: 'The invitation link has been accepted already; each link works once.',
  },
  invitation_revoked: {
    status: 410,
    title: 'Invitation revoked',
    text: 'The invitation was withdrawn. Ask an Admin of the organization for a new one.',
  },
  invitation_expired: {
    status: 410,
    title: 'Invitation expired',
    text: 'The invitation link is past its expiry. Ask an Admin of the organization for a new one.',
  },
  forbidden: {
    status: 403,
    title: 'Forbidden',
    text: "The caller's role is too low for this operation.",
  },
  own_access: {
    status: 403,
    title: 'Own access',
    text: 'Nobody changes their own role or project allowlist: ask another Admin (or Owner).',
  },
  not_author: {
    status: 403,
    title: 'Not the author',
    text: 'Only the author of a change request edits or submits it; only the author or an Admin applies, schedules or cancels it; the author never reviews it.',
  },
  people_only: {
    status: 403,
    title: 'People only',
    text: 'Change requests are reviewed by people, with their own session or personal access token: a service token or an agent on /mcp may propose and apply, not review.',
  },
  outside_allowlist: {
    status: 403,
    title: 'Outside your allowlist',
    text: 'The caller has a project allowlist, and this reaches beyond it: the whole organization, or a grant wider than its own.',
  },
  not_found: {
    status: 404,
    title: 'Not found',
    text: 'The resource does not exist or is not visible to the caller. `did_you_mean` lists near matches.',
  },
  method_not_allowed: {
    status: 405,
    title: 'Method not allowed',
    text: 'The path exists but not with this method.',
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    text: 'A resource with the same key already exists in this scope, or the resource is in use. `fields` names the field.',
  },
  change_request_required: {
    status: 409,
    title: 'Change request required',
    text: 'The environment requires change requests for changes to what it serves (or, for a segment or variation change, some environment of the project does). `next_actions` names the change-request call that proposes the same change.',
  },
  EXPERIMENT_RUNNING: {
    status: 409,
    title: 'Experiment running',
    text: "An experiment runs on the flag's fallthrough in this environment: its fallthrough and its variations cannot change until the experiment is stopped. Turning the flag off stays allowed.",
  },
  change_request_conflict: {
    status: 409,
    title: 'Change request in conflict',
    text: 'A change of the request was written against a revision its target no longer has, or its target is gone or archived; nothing was applied. `fields` names each change in conflict. Update the changes (new `baseRevision`) and have them approved again.',
  },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency key reused',
    text: 'The Idempotency-Key was already used with a different request body.',
  },
  idempotency_key_in_use: {
    status: 409,
    title: 'Idempotency key in use',
    text: 'A request with the same Idempotency-Key is still being processed. Retry shortly.',
  },
  plan_limit_reached: {
    status: 403,
    title: 'Plan limit reached',
    text: "The organization's plan does not allow more of this resource.",
  },
  payload_too_large: {
    status: 413,
    title: 'Payload too large',
    text: 'The request body is larger than the endpoint accepts.',
  },
  request_timeout: {
    status: 408,
    title: 'Request timeout',
    text: 'The request was not received in time; the connection is closed. Send it again.',
  },
  headers_too_large: {
    status: 431,
    title: 'Request header fields too large',
    text: 'The request line and headers together exceed 16 KiB, for example a very long query string. Send less in the URL and headers (bodies take more).',
  },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    text: 'Send `application/json`, `text/json` or `application/*+json`.',
  },
  rate_limited: {
    status: 429,
    title: 'Rate limited',
    text: 'Too many requests. Wait `retry_after` seconds (also in `Retry-After`).',
  },
  service_unavailable: {
    status: 503,
    title: 'Service unavailable',
    text: 'The database cannot be reached just now; nothing was changed. Retry after `retry_after` seconds (also in `Retry-After`). Evaluations keep being served meanwhile.',
  },
  internal_error: {
    status: 500,
    title: 'Internal error',
    text: 'An unexpected error. It has been logged; the request changed nothing.',
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Extra envelope members (spec: Error envelope). */
export interface ErrorDetail {
  fields?: Record<string, string[]>;
  retryAfter?: number;
  didYouMean?: string[];
  nextActions?: { method: string; path: string }[];
  connectionId?: string;
  /** Overrides the code's usual status (e.g. `sso_required` is 403 by design). */
  status?: number;
}

/** An error with an HTTP meaning. */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly detail: ErrorDetail = {},
  ) {
    super(message);
    this.status = detail.status ?? ERROR_CODES[code].status;
  }
}

/** A 400 `validation_failed` for one field. */
export function invalidField(field: string, problem: string): ApiError {
  return new ApiError('validation_failed', `${field}: ${problem}`, {
    fields: { [field]: [problem] },
  });
}

/** A 409 `conflict` naming the field whose value is taken. */
export function duplicateKey(field: string, value: string, scope: string): ApiError {
  return new ApiError('conflict', `A ${scope} with ${field} "${value}" already exists.`, {
    fields: { [field]: ['already exists'] },
  });
}

/** Seconds a client should wait before retrying while the database is unavailable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** A 503 `service_unavailable` with `Retry-After`: the database cannot be reached (design record 019). */
export function databaseUnavailable(): ApiError {
  return new ApiError(
    'service_unavailable',
    'The database is unavailable; nothing was changed. Retry shortly.',
    { retryAfter: DATABASE_RETRY_AFTER_SECONDS },
  );
}
