import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { problemBody, ProblemError } from '../evaluation/problem.js';
import { docsUrl, type ErrorEnvelope } from '../http/envelope.js';
import { ApiError } from '../errors.js';

/** What Node's HTTP parser reports with a request it refuses (`clientError`). */
interface ClientError extends Error {
  code?: string;
}

/** The path of the request line in what was received (`GET /api/v1/… HTTP/1.1`), or ''. */
function requestPath(rawPacket: unknown): string {
  if (!Buffer.isBuffer(rawPacket)) return '';
  const line = rawPacket.subarray(0, 8192).toString('latin1').split('\r\n', 1)[0] ?? '';
  return line.split(' ')[1] ?? '';
}

/** The refusal of a request the parser could not read: its status code and the reason. */
function refusalOf(error: ClientError): ApiError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        'headers_too_large',
        'The request line and headers are larger than the server reads (16 KiB); a query string this long is one way.',
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', 'The request was not received in time.');
    default:
      return new ApiError(
        'bad_request',
        'The request is not valid HTTP (a byte not allowed in the URL or a header, or a malformed request line).',
      );
  }
}

/** The body of `refusal` in the shape of the API `path` belongs to, with its media type. */
function bodyFor(publicUrl: string, path: string, refusal: ApiError): [string, string] {
  if (path.startsWith('/api/') || path.startsWith('/auth/')) {
    const envelope: ErrorEnvelope = {
      error: refusal.code,
      message: refusal.message,
      docs_url: docsUrl(publicUrl, refusal.code),
      fields: {},
    };
    return ['application/json; charset=utf-8', JSON.stringify(envelope)];
  }
  if (path.startsWith('/ofrep/'))
    return ['application/json; charset=utf-8', JSON.stringify({ errorDetails: refusal.message })];
  const title = STATUS_CODES[refusal.status] ?? 'Bad Request';
  const problem = new ProblemError(refusal.status, title, refusal.message);
  return ['application/problem+json; charset=utf-8', JSON.stringify(problemBody(problem, path))];
}

/**
 * Fastify's `clientErrorHandler` (design record 035): answers a request Node's HTTP parser
 * refused — a raw byte not allowed in the URL, a request line and headers over Node's
 * `maxHeaderSize` (431), a request not received in time (408), anything else malformed (400) —
 * in the shape of the API its path belongs to: the management envelope (`/api/`, `/auth/`),
 * OFREP's error (`/ofrep/`), or the evaluation API's problem body (everything else). The request
 * reaches no route, so the answer is written to the socket, which is then closed.
 */
export function clientErrorHandler(publicUrl: string) {
  return function (this: { log: FastifyBaseLogger }, error: ClientError, socket: Socket): void {
    // A reset connection has nobody to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const refusal = refusalOf(error);
    this.log.debug({ err: error }, 'request refused by the HTTP parser');
    if (socket.writable) {
      const [type, body] = bodyFor(
        publicUrl,
        requestPath((error as { rawPacket?: unknown }).rawPacket),
        refusal,
      );
      socket.write(
        `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\n` +
          `Content-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}
