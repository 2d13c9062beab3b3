import type { Socket } from 'node:net';
import {
  LogController,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';

/** Anything shaped like a Vexil credential or webhook signing secret (design record 004). */
const CREDENTIAL = /\b(vxl_(?:pat|svc|srv|cli|ses|inv)|whsec)_[A-Za-z0-9_+/=-]+/g;
/** Query parameters that carry a credential, e.g. `sdkKey` on `GET /v1/client/stream`. */
const SECRET_PARAMETER = /([?&][^=&#]*(?:key|token|secret)[^=&#]*=)[^&#]*/gi;

/** The request URL as it may be logged: credentials in the path or query replaced. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMETER, '$1[redacted]').replace(CREDENTIAL, '$1_[redacted]');
}

/**
 * The service's pino options (SECURITY.md, Secrets in logs). Request log lines hold the method,
 * the route and the URL with credentials stripped (EventSource clients must put their SDK key in
 * the query string), never headers; `redact` keeps `Authorization` and `X-API-Key` out should a
 * log line ever include them. Lines are JSON, or pretty-printed (`pino-pretty`) for a person when
 * standard output is a terminal.
 * @param stream where log lines go (tests capture them); standard output when omitted.
 */
export function loggerOptions(
  level: string,
  stream?: NodeJS.WritableStream,
): FastifyServerOptions['logger'] {
  return {
    level,
    ...(stream
      ? { stream }
      : process.stdout.isTTY
        ? {
            transport: {
              target: 'pino-pretty',
              options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
            },
          }
        : {}),
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'headers.authorization',
        'headers["x-api-key"]',
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: redactUrl(request.url),
        host: request.host,
        remoteAddress: request.ip,
        // As in Fastify's own serializer: a request may come without a socket.
        remotePort: (request.socket as Socket | undefined)?.remotePort,
      }),
    },
  };
}

/** The SDK-facing APIs: the evaluation API (`/v1`) and OFREP (`/ofrep/v1`). */
const EVALUATION_PATH = /^\/(?:ofrep\/)?v1\//;

/**
 * One log line per request, when it completes: `method`, `route` (the matched route pattern, null
 * when none matched), `url` (credentials stripped), `statusCode` and `durationMs` — at `info`
 * ("request completed"), or at `error` with `err` when sending failed ("request errored").
 * Answered requests of the evaluation APIs, which SDKs call tens of thousands of times a second,
 * are not logged: at `info` the line would cost more than the evaluation itself. Their failures
 * still are (their error handlers log 5xx answers, and a failure while sending is logged here).
 */
export class RequestLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (!error && EVALUATION_PATH.test(request.url)) return;
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      url: redactUrl(request.url),
      statusCode: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}
