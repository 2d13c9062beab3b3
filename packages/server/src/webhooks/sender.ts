import { performance } from 'node:perf_hooks';
import { request, type Dispatcher } from 'undici';

/** What one HTTP attempt produced: a status code, or an error for transport failures. */
export interface AttemptOutcome {
  statusCode: number | null;
  /** Why no response arrived (refused target, time-out, connection failure); null otherwise. */
  error: string | null;
  /** Wall-clock duration of the attempt in milliseconds. */
  durationMs: number;
}

/** The longest error text kept on an attempt. */
const MAX_ERROR_LENGTH = 500;

function describeError(error: unknown, timeoutMs: number): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError')
      return `timed out after ${timeoutMs} ms`;
    const code = (error as { code?: unknown }).code;
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    const text = `${typeof code === 'string' ? `${code}: ` : ''}${error.message}${cause}`;
    return text.slice(0, MAX_ERROR_LENGTH);
  }
  return String(error).slice(0, MAX_ERROR_LENGTH);
}

/**
 * Sends one webhook attempt: a POST with the given headers and body through `dispatcher` (the
 * SSRF-guarded agent). Redirects are not followed (undici's `request` never follows them, so a
 * 3xx is a failed attempt), the response body is discarded unread (spec: Webhook delivery
 * status), and the whole attempt is bounded by `timeoutMs`. Never throws.
 */
export async function sendAttempt(
  dispatcher: Dispatcher,
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const response = await request(url, {
      method: 'POST',
      headers,
      body,
      dispatcher,
      signal: AbortSignal.timeout(timeoutMs),
    });
    // Never read: a receiver's answer carries nothing Vexil uses, and reading it costs memory.
    response.body.on('error', () => undefined).destroy();
    return { statusCode: response.statusCode, error: null, durationMs: elapsed() };
  } catch (error) {
    return { statusCode: null, error: describeError(error, timeoutMs), durationMs: elapsed() };
  }
}
