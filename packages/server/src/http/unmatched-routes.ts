import type { FastifyInstance } from 'fastify';
import Router, { type HTTPMethod } from 'find-my-way';
import { ApiError } from './errors.js';

/**
 * Answers requests that match no route of `scope` (spec: Errors): 405 `method_not_allowed` with
 * an `Allow` header when the path exists with other methods, 404 `not_found` otherwise. Fastify
 * answers both with its not-found handler, so the scope's routes are mirrored, as they are
 * registered, in a router of their own that can be asked about any method.
 * Call before the scope's routes are registered: only later routes are seen.
 */
export function answerUnmatchedRequests(scope: FastifyInstance): void {
  const routes = Router();
  const methods = new Set<HTTPMethod>();
  scope.addHook('onRoute', (route) => {
    for (const method of [route.method].flat() as HTTPMethod[]) {
      // Fastify may announce a path twice for one method (its automatic HEAD routes).
      if (routes.hasRoute(method, route.url)) continue;
      routes.on(method, route.url, () => {});
      methods.add(method);
    }
  });
  scope.setNotFoundHandler(async (request, reply) => {
    const [path = ''] = request.url.split('?');
    const allowed = [...methods].filter((method) => routes.find(method, path) !== null);
    if (allowed.length === 0)
      throw new ApiError('not_found', `No route ${request.method} ${path}.`);
    void reply.header('allow', allowed.join(', '));
    throw new ApiError(
      'method_not_allowed',
      `${request.method} is not allowed on ${path}; it accepts ${allowed.join(', ')}.`,
    );
  });
}
