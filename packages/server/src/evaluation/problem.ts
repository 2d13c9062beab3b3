import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from '../http/envelope.js';
import { ApiError } from '../errors.js';
import { notAnSdkKeyDetail, SdkAuthFailure } from './sdk-authenticator.js';

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

/** Seconds a client should wait when a configuration cannot be loaded. */
const RETRY_AFTER_SECONDS = 5;

/** An SDK key refusal as the evaluation API words it. */
function refusalProblem(failure: SdkAuthFailure): ProblemError {
  switch (failure.refusal) {
    case 'MissingKey':
      return new ProblemError(401, 'Unauthorized', 'Send an SDK key in the Authorization header.');
    case 'InvalidKey':
      return new ProblemError(401, 'Unauthorized', 'The SDK key is not valid or has been revoked.');
    case 'NotAnSdkKey':
      return new ProblemError(401, 'Unauthorized', notAnSdkKeyDetail(failure));
    case 'WrongKeyType':
      return new ProblemError(
        403,
        'Forbidden',
        `This endpoint needs a ${failure.needed === 'ServerSide' ? 'server-side' : 'client-side'} SDK key.`,
      );
    case 'EnvironmentGone':
      return new ProblemError(
        401,
        'Unauthorized',
        'The SDK key belongs to an environment that no longer exists.',
      );
    case 'ConfigurationUnavailable':
      return new ProblemError(
        503,
        'Service Unavailable',
        'The flag configuration is temporarily unavailable.',
        {},
        RETRY_AFTER_SECONDS,
      );
  }
}

/**
 * The problem `error` is answered with (spec: Evaluation API problem body). Logs what an operator
 * must see: an unavailable configuration or database, and every other 5xx.
 */
export function problemFor(error: unknown, log: FastifyBaseLogger): ProblemError {
  if (error instanceof ProblemError) return error;
  if (error instanceof SdkAuthFailure) {
    if (!error.refusesKey) log.error({ err: error.cause }, 'environment configuration unavailable');
    return refusalProblem(error);
  }
  const apiError = error instanceof ApiError ? error : toApiError(error);
  const unavailable = apiError.code === 'service_unavailable';
  if (unavailable) log.warn({ err: error }, 'evaluation refused: database unavailable');
  else if (apiError.status >= 500) log.error({ err: error }, 'evaluation request failed');
  return new ProblemError(
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

/** The RFC 9457 body of `problem`, answered at `url` (its query string is left out). */
export function problemBody(problem: ProblemError, url: string): Record<string, unknown> {
  return {
    type: 'about:blank',
    title: problem.title,
    status: problem.status,
    detail: problem.message,
    instance: url.split('?')[0],
    ...problem.extra,
  };
}

/** The evaluation API's one error mapper: RFC 9457 problem bodies, never the management envelope. */
export function problemErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const problem = problemFor(error, request.log);
  if (problem.retryAfterSeconds !== undefined)
    void reply.header('retry-after', String(problem.retryAfterSeconds));
  return reply
    .status(problem.status)
    .type('application/problem+json')
    .send(problemBody(problem, request.url));
}
