/**
 * PostgreSQL SQLSTATEs meaning the server cannot serve right now: class 08 (connection
 * exception) and the shutdown / starting-up codes of class 57.
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3])$/;

/** Node socket errors of a database that cannot be reached. */
const UNREACHABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Messages of node-postgres for a connection lost, or not obtained in time. */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout expired|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed)/;

/**
 * Whether `error` says the database could not be reached or dropped the connection (as opposed
 * to a query it refused). Such failures pass: the management API answers them with 503
 * `service_unavailable` and `Retry-After` (design record 019), and the evaluation API serves the
 * configurations it holds.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code } = error as { code?: unknown };
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNREACHABLE_ERRNO.has(code)))
    return true;
  if (UNAVAILABLE_MESSAGE.test(error.message)) return true;
  // Connection failures to several addresses (localhost: ::1 and 127.0.0.1) arrive aggregated.
  if (error instanceof AggregateError) return error.errors.some(isDatabaseUnavailable);
  return false;
}
