import type { Socket } from 'node:net';
import {
  LogController,
  type FastifyBaseLogger,
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
 * standard output is a terminal: one line each, a request as `GET /api/v1/me 200 3.1 ms`.
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
              options: {
                translateTime: 'SYS:HH:MM:ss.l',
                singleLine: true,
                messageFormat:
                  '{if statusCode}{method} {url} {statusCode} {durationMs} ms: {end}{msg}',
                ignore: `pid,hostname,${REQUEST_LINE_KEYS.join(',')}`,
              },
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

/** What the log line of a completed request holds. */
export interface RequestLine {
  method: string;
  /** The matched route pattern; null when none matched. */
  route: string | null;
  /** The URL with credentials stripped. */
  url: string;
  statusCode: number;
  durationMs: number;
}

/** The members of a request line, which the terminal's format shows in its message. */
const REQUEST_LINE_KEYS: readonly (keyof RequestLine)[] = [
  'method',
  'route',
  'url',
  'statusCode',
  'durationMs',
];

/** Whether `log` writes `debug` lines (its level is `debug` or `trace`). */
export function logsDebug(log: FastifyBaseLogger): boolean {
  return log.level === 'debug' || log.level === 'trace';
}

/**
 * Logs one completed request ("request completed"), or one whose answer could not be sent, at
 * `error` with `err` ("request errored"). Answered requests of the evaluation APIs, which SDKs
 * call tens of thousands of times a second, are logged at `debug`: at `info` the line would cost
 * more than the evaluation itself. Their refusals and failures (4xx, 5xx) are logged at `info`
 * like every other request's.
 * @param duration milliseconds
 */
export function logRequest(
  log: FastifyBaseLogger,
  request: { method?: string; url?: string },
  route: string | null,
  statusCode: number,
  duration: number,
  error?: Error,
): void {
  const url = request.url ?? '';
  const quiet = statusCode < 400 && EVALUATION_PATH.test(url);
  if (quiet && !error && !logsDebug(log)) return;
  const line: RequestLine = {
    method: request.method ?? '',
    route,
    url: redactUrl(url),
    statusCode,
    durationMs: Math.round(duration * 100) / 100,
  };
  if (error) log.error({ ...line, err: error }, 'request errored');
  else if (quiet) log.debug(line, 'request completed');
  else log.info(line, 'request completed');
}

/** One log line per request, when it completes ({@link logRequest}). */
export class RequestLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    logRequest(
      reply.log,
      request,
      request.routeOptions.url ?? null,
      reply.statusCode,
      reply.elapsedTime,
      error ?? undefined,
    );
  }
}
