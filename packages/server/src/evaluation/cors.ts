import fastifyCors from '@fastify/cors';
import type { App } from '../http/app-instance.js';

const ALLOWED_ORIGIN = '*';
const EXPOSED_HEADERS = ['ETag', 'Retry-After', 'X-Vexil-Stream-Id', 'X-Vexil-Stream-Updated'];
const EXPOSED_HEADERS_VALUE = EXPOSED_HEADERS.join(', ');

/**
 * Browsers call the evaluation API and OFREP directly (client SDKs, the OFREP web provider): any
 * origin may, because client keys are public by design (spec: Authentication rule 6) and no
 * cookie is ever involved. The management API sends no CORS headers.
 */
export async function allowBrowserCalls(app: App): Promise<void> {
  // @fastify/cors answers preflights (its `OPTIONS *` route). Registered in a context of its own,
  // its hook runs for preflights only: on every other request it rebuilt the same two headers
  // (merging options, reading `routeOptions`), a few percent of an evaluation's CPU.
  await app.register(async (preflights) => {
    await preflights.register(fastifyCors, {
      origin: ALLOWED_ORIGIN,
      methods: ['GET', 'POST'],
      allowedHeaders: [
        'Authorization',
        'Content-Type',
        'If-None-Match',
        'Last-Event-ID',
        'X-API-Key',
        'X-Service-Reports-Evaluations',
        'X-Vexil-Stream-Id',
      ],
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: 600,
    });
  });
  // The headers @fastify/cors adds to an actual request with a fixed origin, set in onRequest as
  // it does, so that error answers (validation, authentication, 404) carry them too. Only
  // requests with an `Origin` get them, as with Go's rs/cors: browsers send it on every
  // cross-origin request, and server SDKs, which make most of the calls, never read them. Two
  // more headers on every answer cost server evaluate 12–19% of its throughput (design record 016).
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers.origin !== undefined) {
      void reply
        .header('access-control-allow-origin', ALLOWED_ORIGIN)
        .header('access-control-expose-headers', EXPOSED_HEADERS_VALUE);
    }
    done();
  });
}
