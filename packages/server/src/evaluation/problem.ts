import type { FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from '../http/envelope.js';
import { ApiError } from '../http/errors.js';

/** An evaluation API error (spec: Evaluation API problem body). */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
  }
}

/** The evaluation API's one error mapper: RFC 9457 problem bodies, never the management envelope. */
export function problemErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  let problem: ProblemError;
  if (error instanceof ProblemError) {
    problem = error;
  } else {
    const apiError = error instanceof ApiError ? error : toApiError(error);
    const unavailable = apiError.code === 'service_unavailable';
    if (unavailable) request.log.warn({ err: error }, 'evaluation refused: database unavailable');
    else if (apiError.status >= 500) request.log.error({ err: error }, 'evaluation request failed');
    problem = new ProblemError(
      apiError.status,
      unavailable
        ? 'Service Unavailable'
        : apiError.status >= 500
          ? 'Internal Server Error'
          : apiError.code === 'validation_failed'
            ? 'Invalid request'
            : apiError.message,
      apiError.message,
      apiError.detail.fields ? { errors: apiError.detail.fields } : {},
      apiError.detail.retryAfter,
    );
  }
  if (problem.retryAfterSeconds !== undefined)
    void reply.header('retry-after', String(problem.retryAfterSeconds));
  return reply
    .status(problem.status)
    .type('application/problem+json')
    .send({
      type: 'about:blank',
      title: problem.title,
      status: problem.status,
      detail: problem.message,
      instance: request.url.split('?')[0],
      ...problem.extra,
    });
}
