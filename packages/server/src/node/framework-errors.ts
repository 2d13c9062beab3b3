import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError, problemErrorHandler } from '../evaluation/problem.js';
import { managementErrorHandler } from '../http/envelope.js';
import { ApiError } from '../errors.js';

/**
 * Answers the errors Fastify raises before routing — a path that is not valid percent-encoded
 * UTF-8 (`FST_ERR_BAD_URL`) or a path segment over 100 characters (`FST_ERR_MAX_PARAM_LENGTH`) —
 * as 400s in the shape of the API the path belongs to (management envelope, OFREP error, or
 * problem body), instead of Fastify's own shape. Such requests reach no route, so they carry no
 * rate-limit headers.
 */
export function frameworkErrorHandler(publicUrl: string) {
  const management = managementErrorHandler(publicUrl);
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const message =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'A path segment is longer than 100 characters.'
        : 'The URL is not valid percent-encoded UTF-8.';
    const path = request.raw.url ?? '';
    if (path.startsWith('/api/')) {
      void management(new ApiError('bad_request', message), request, reply);
    } else if (path.startsWith('/ofrep/')) {
      void reply.status(400).type('application/json').send({ errorDetails: message });
    } else {
      void problemErrorHandler(new ProblemError(400, 'Bad Request', message), request, reply);
    }
  };
}
