import fastifyCors from '@fastify/cors';
import type { App } from '../http/app-instance.js';

const ALLOWED_ORIGIN = '*';
const EXPOSED_HEADERS = ['ETag', 'Retry-After', 'X-Vexil-Stream-Id', 'X-Vexil-Stream-Updated'];
/**
 * The CORS headers of an answer to a request that sent an `Origin` (those @fastify/cors adds with
 * a fixed origin), as a flat list of names and values. Only such requests get them, as with Go's
 * rs/cors: browsers send `Origin` on every cross-origin request, and server SDKs, which make most
 * of the calls, never read them. Two more headers on every answer cost server evaluate 12–19% of
 * its throughput (design record 016).
 */
export const BROWSER_CALL_HEADERS = [
  'access-control-allow-origin',
  ALLOWED_ORIGIN,
  'access-control-expose-headers',
  EXPOSED_HEADERS.join(', '),
] as const;

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
  // Set in onRequest as @fastify/cors does, so that error answers (validation, authentication,
  // 404) carry them too.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers.origin !== undefined) {
      const [originName, origin, exposeName, expose] = BROWSER_CALL_HEADERS;
      void reply.header(originName, origin).header(exposeName, expose);
    }
    done();
  });
}
