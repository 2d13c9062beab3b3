import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/** Anything shaped like a Vexil credential or webhook signing secret (design record 004). */
const CREDENTIAL = /\b(vxl_(?:pat|svc|srv|cli|ses|inv)|whsec)_[A-Za-z0-9_+/=-]+/g;
/** Query parameters that carry a credential, e.g. `sdkKey` on `GET /v1/client/stream`. */
const SECRET_PARAMETER = /([?&][^=&#]*(?:key|token|secret)[^=&#]*=)[^&#]*/gi;

/** The request URL as it may be logged: credentials in the path or query replaced. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMETER, '$1[redacted]').replace(CREDENTIAL, '$1_[redacted]');
}

/**
 * The service's pino options (SECURITY.md, Secrets in logs). Fastify's request serializer logs
 * the URL but no headers; ours also strips credentials from the URL (EventSource clients must
 * put their SDK key in the query string), and `redact` keeps `Authorization` and `X-API-Key`
 * out should a log line ever include request headers.
 * @param stream where log lines go (tests capture them); standard output when omitted.
 */
export function loggerOptions(
  level: string,
  stream?: NodeJS.WritableStream,
): FastifyServerOptions['logger'] {
  return {
    level,
    ...(stream ? { stream } : {}),
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
        remotePort: request.socket?.remotePort,
      }),
    },
  };
}
