import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ValidateFunction } from 'ajv';
import type { FastifyBaseLogger } from 'fastify';
import Router from 'find-my-way';
import { parseJsonBody } from '../http/json-body.js';
import { logRequest, logsDebug } from '../http/logging.js';
import { checkJsonLimits } from '../http/request-limits.js';
import { NO_SNIFF } from '../http/response-headers.js';
import { compressedAnswer, COMPRESS_FROM_BYTES } from './answer-compression.js';
import { BROWSER_CALL_HEADERS } from './cors.js';
import { problemBody, problemFor } from './problem.js';

/**
 * An answer whose status and headers the route chooses (OFREP bulk's ETag, 304 and compression):
 * sent with them, its `content-length`, the lane's `nosniff` and, for browsers, CORS headers.
 * `headers` is a flat list of names and values, without `content-length`.
 */
export interface LeanReply {
  status: number;
  headers: readonly string[];
  body: string | Buffer | null;
}

type LeanAnswer = string | Buffer | LeanReply;

/** One `POST` route of the evaluation API or OFREP that the lean lane serves (design record 030). */
export interface LeanRoute {
  /** The full path, e.g. `/v1/sdk/evaluate`. */
  path: string;
  /** The route's body schema, compiled by the same validator compiler as the Fastify route's. */
  validate: ValidateFunction;
  /**
   * The answer to a valid body, at once or later: JSON text or bytes (a 200 the lane compresses
   * when large), or a {@link LeanReply}.
   * @throws (or rejects with) any error the route's {@link failure} maps
   */
  answer(request: IncomingMessage, body: unknown): LeanAnswer | Promise<LeanAnswer>;
  /**
   * The answer to an error the route threw, or to a body that is not valid JSON (the parser's
   * error) or not valid (an error with `validation`), as the Fastify route's error handler words
   * it. Without it, the evaluation API's problem body ({@link problemFor}).
   */
  failure?: (error: unknown, log: FastifyBaseLogger) => LeanReply;
  /** Records an answered request's duration in seconds, as the route's metrics hook does. */
  observe(status: number, seconds: number): void;
}

/** What the lane needs from the node around it. */
export interface LeanLaneOptions {
  /** Larger declared bodies go to Fastify, which refuses them with its 413 (bytes). */
  bodyLimit: number;
  /** False once shutdown has begun: every request goes to Fastify, which answers 503. */
  accepting: () => boolean;
  log: FastifyBaseLogger;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';
/** `application/json`, with parameters or none: what SDKs send. Other JSON types go to Fastify. */
const PLAIN_JSON = /^application\/json\s*(?:;|$)/i;

/**
 * The lean lane (design record 030): the node's request listener. It serves the evaluation
 * routes SDKs call tens of thousands of times a second outside Fastify's request lifecycle, with
 * the parts Fastify is built from — `find-my-way` routing, `secure-json-parse`, the routes' own
 * compiled Ajv validators — and hands every other request to Fastify (`fallback`) untouched.
 *
 * It takes only the common case: a `POST` with a declared `Content-Length` within the body limit,
 * `Content-Type: application/json` and no `Content-Encoding`, while the node accepts requests.
 * Anything else (chunked or empty bodies, other media types, shutdown) reaches the same route in
 * Fastify, which answers it as before; so every answer the lane gives is one Fastify's route
 * would give, and the routes stay declared in Fastify for OpenAPI.
 */
export function leanLane(
  routes: readonly LeanRoute[],
  options: LeanLaneOptions,
  fallback: RequestListener,
): RequestListener {
  const router = Router({
    defaultRoute: (request, response) => fallback(request, response),
  });
  for (const route of routes) {
    router.on('POST', route.path, (request, response) => {
      if (takes(request, options)) serve(route, request, response, options.log);
      else fallback(request, response);
    });
  }
  return (request, response) => {
    router.lookup(request, response);
  };
}

/** Whether the lane serves `request`, decided before its body is read. */
function takes(request: IncomingMessage, options: LeanLaneOptions): boolean {
  const { headers } = request;
  const length = Number(headers['content-length']);
  return (
    options.accepting() &&
    length > 0 &&
    length <= options.bodyLimit &&
    headers['transfer-encoding'] === undefined &&
    headers['content-encoding'] === undefined &&
    PLAIN_JSON.test(headers['content-type'] ?? '')
  );
}

/** Reads, parses and validates the body, answers, and records the duration. */
function serve(
  route: LeanRoute,
  request: IncomingMessage,
  response: ServerResponse,
  log: FastifyBaseLogger,
): void {
  const started = performance.now();
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.once('end', () => {
    const done = (status: number) => {
      const elapsed = performance.now() - started;
      route.observe(status, elapsed / 1000);
      // Answered evaluations are logged at debug only: the hot path skips the call at info.
      if (status >= 400 || logsDebug(log)) logRequest(log, request, route.path, status, elapsed);
    };
    let answer: ReturnType<LeanRoute['answer']>;
    try {
      // Bodies this small nearly always arrive in one chunk.
      const text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))?.toString() ?? '';
      answer = route.answer(request, validBody(route, text));
    } catch (error) {
      done(sendFailure(route, request, response, error, log));
      return;
    }
    // Sending stays outside the `try`: a failure there must not write a second set of headers.
    if (answer instanceof Promise) {
      answer.then(
        (body) => done(send(request, response, body)),
        (error: unknown) => done(sendFailure(route, request, response, error, log)),
      );
    } else {
      done(send(request, response, answer));
    }
  });
}

/** A body that is not JSON; Fastify closes the connection after answering one. */
class UnparsableBody extends Error {}

/**
 * The parsed body, as the node's JSON parser and Fastify's validator leave it.
 * @throws the errors they throw: the parser's for a body that is not JSON (wrapped in
 *   {@link UnparsableBody}), JsonLimitExceeded, or a validation error with `validation`
 */
function validBody(route: LeanRoute, text: string): unknown {
  let body: unknown;
  try {
    body = parseJsonBody(text);
  } catch (error) {
    throw new UnparsableBody('unparsable body', { cause: error });
  }
  checkJsonLimits(body);
  if (!route.validate(body)) {
    throw Object.assign(new Error('body validation failed'), {
      validation: route.validate.errors,
      validationContext: 'body',
    });
  }
  return body;
}

/**
 * Sends an answer: JSON text or bytes as a 200, compressed when large and the client accepts it,
 * or a route's {@link LeanReply}; returns its status.
 */
function send(request: IncomingMessage, response: ServerResponse, answer: LeanAnswer): number {
  if (typeof answer !== 'string' && !Buffer.isBuffer(answer))
    return sendReply(request, response, answer);
  const { body, encoding } = compressedAnswer(request, answer);
  // A flat list of names and values is the cheapest form of headers for Node to write.
  const headers = [
    'content-type',
    JSON_TYPE,
    'content-length',
    String(Buffer.byteLength(body)),
    ...NO_SNIFF,
  ];
  if (answer.length >= COMPRESS_FROM_BYTES) headers.push('vary', 'accept-encoding');
  if (encoding !== undefined) headers.push('content-encoding', encoding);
  if (request.headers.origin !== undefined) headers.push(...BROWSER_CALL_HEADERS);
  response.writeHead(200, headers);
  response.end(body);
  return 200;
}

/** Sends a route's reply with the lane's own headers; returns its status. */
function sendReply(request: IncomingMessage, response: ServerResponse, reply: LeanReply): number {
  const headers = [...reply.headers, ...NO_SNIFF];
  if (reply.body !== null) headers.push('content-length', String(Buffer.byteLength(reply.body)));
  if (request.headers.origin !== undefined) headers.push(...BROWSER_CALL_HEADERS);
  response.writeHead(reply.status, headers);
  response.end(reply.body ?? undefined);
  return reply.status;
}

/**
 * Sends what `error` is answered with: the route's {@link LeanRoute.failure}, or the evaluation
 * API's problem body. Returns its status.
 */
function sendFailure(
  route: LeanRoute,
  request: IncomingMessage,
  response: ServerResponse,
  error: unknown,
  log: FastifyBaseLogger,
): number {
  const unparsable = error instanceof UnparsableBody;
  const cause = unparsable ? error.cause : error;
  const reply = route.failure ? route.failure(cause, log) : problemReply(request, cause, log);
  // Fastify closes the connection after a body it could not parse, as the client may send more.
  return sendReply(
    request,
    response,
    unparsable ? { ...reply, headers: [...reply.headers, 'connection', 'close'] } : reply,
  );
}

/** The evaluation API's answer to `error`: the problem body it maps to. */
function problemReply(request: IncomingMessage, error: unknown, log: FastifyBaseLogger): LeanReply {
  const problem = problemFor(error, log);
  const headers = ['content-type', PROBLEM_TYPE];
  if (problem.retryAfterSeconds !== undefined)
    headers.push('retry-after', String(problem.retryAfterSeconds));
  return {
    status: problem.status,
    headers,
    body: JSON.stringify(problemBody(problem, request.url ?? '')),
  };
}
