import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { marked } from 'marked';
import { isDatabaseUnavailable } from '../db/availability.js';
import { ApiError, databaseUnavailable, ERROR_CODES, type ErrorCode } from '../errors.js';
import { fieldProblems, validationSummary } from './validation-messages.js';

/** The management API error envelope (spec: Error envelope). Null members are omitted. */
export interface ErrorEnvelope {
  error: string;
  message: string;
  docs_url: string;
  fields?: Record<string, string[]>;
  retry_after?: number;
  did_you_mean?: string[];
  next_actions?: { method: string; path: string }[];
  connection_id?: string;
}

/** Turns whatever a handler threw into an {@link ApiError}; unknown errors become 500s. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const problems = fieldProblems(
      fastifyError.validation,
      fastifyError.validationContext ?? 'body',
    );
    // No prototype: a body property named `toString` or `__proto__` is just a field name.
    const fields = Object.create(null) as Record<string, string[]>;
    for (const { field, message } of problems) fields[field] = [message];
    return new ApiError('validation_failed', validationSummary(problems), { fields });
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        'unsupported_media_type',
        'Unsupported content type: send the body as application/json (Content-Type: application/json).',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('validation_failed', 'The request body is empty.', {
        fields: { body: ['is required'] },
      });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('bad_request', 'Invalid Content-Length.');
  }
  if (isDatabaseUnavailable(error)) return databaseUnavailable();
  if (fastifyError instanceof SyntaxError || fastifyError.statusCode === 400) {
    return new ApiError('malformed_json', fastifyError.message);
  }
  return new ApiError('internal_error', 'Internal error.');
}

/** Builds the `docs_url` of an error code. */
export function docsUrl(publicUrl: string, code: ErrorCode): string {
  return `${publicUrl}/docs/errors#${code}`;
}

/** The management API's one error mapper. */
export function managementErrorHandler(publicUrl: string) {
  return (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error);
    // The operation and the underlying code (a SQLSTATE, an errno) name what failed and where.
    const failure = {
      err: error,
      route: `${request.method} ${request.routeOptions.url ?? request.url}`,
      code: (error as { code?: unknown } | undefined)?.code,
    };
    if (apiError.code === 'service_unavailable')
      request.log.warn(failure, 'request refused: database unavailable');
    else if (apiError.status >= 500) request.log.error(failure, 'request failed');
    const { detail } = apiError;
    const body: ErrorEnvelope = {
      error: apiError.code,
      message: apiError.message,
      docs_url: docsUrl(publicUrl, apiError.code),
      fields: detail.fields ?? {},
    };
    if (detail.retryAfter !== undefined) {
      body.retry_after = detail.retryAfter;
      void reply.header('retry-after', String(detail.retryAfter));
    }
    if (detail.didYouMean) body.did_you_mean = detail.didYouMean;
    if (detail.nextActions) body.next_actions = detail.nextActions;
    if (detail.connectionId) body.connection_id = detail.connectionId;
    return reply.status(apiError.status).type('application/json').send(body);
  };
}

/** The HTML reference page every `docs_url` points into; entry texts are Markdown. */
export function errorReferencePage(): string {
  const entries = Object.entries(ERROR_CODES)
    .map(
      ([code, entry]) =>
        `<section id="${code}"><h2><code>${code}</code> — ${entry.status} ${entry.title}</h2><p>${marked.parseInline(entry.text, { async: false })}</p></section>`,
    )
    .join('\n');
  return `<!doctype html><html><head><meta charset="utf-8"><title>Vexil error reference</title></head><body><h1>Vexil management API errors</h1>${entries}</body></html>`;
}
