import type { FastifyInstance } from 'fastify';
import { distance } from 'fastest-levenshtein';
import Router, { type HTTPMethod } from 'find-my-way';
import { ApiError } from '../errors.js';

/** A request that matched no route of its scope. */
export interface Unmatched {
  method: string;
  /** The request path, without its query string. */
  path: string;
  /** The methods the path accepts; empty when no route has this path. */
  allowed: readonly string[];
  /** Paths of the scope's routes near `path` (a typo in a static segment), nearest first. */
  near: () => string[];
}

/**
 * Answers requests that match no route of `scope` (spec: Errors): when the path exists with
 * other methods, `refusal` is thrown for a 405 and the `Allow` header is set; otherwise for a 404.
 * Fastify answers both with its not-found handler, so the scope's routes are mirrored, as they
 * are registered, in a router of their own that can be asked about any method.
 * Call before the scope's routes are registered: only later routes are seen.
 * @param refusal the error the scope's error handler maps to its wire shape; by default the
 *   management API's `method_not_allowed` and `not_found` (with `did_you_mean`)
 */
export function answerUnmatchedRequests(
  scope: FastifyInstance,
  refusal: (unmatched: Unmatched) => Error = managementRefusal,
): void {
  const routes = Router();
  const methods = new Set<HTTPMethod>();
  const patterns = new Set<string>();
  scope.addHook('onRoute', (route) => {
    for (const method of [route.method].flat() as HTTPMethod[]) {
      // Fastify may announce a path twice for one method (its automatic HEAD routes).
      if (routes.hasRoute(method, route.url)) continue;
      routes.on(method, route.url, () => {});
      methods.add(method);
      patterns.add(route.url);
    }
  });
  scope.setNotFoundHandler(async (request, reply) => {
    const [path = ''] = request.url.split('?');
    const allowed = [...methods].filter((method) => routes.find(method, path) !== null);
    if (allowed.length > 0) void reply.header('allow', allowed.join(', '));
    throw refusal({
      method: request.method,
      path,
      allowed,
      near: () => nearPaths(path, patterns),
    });
  });
}

/** The management API's refusals: 405 `method_not_allowed`, or 404 `not_found` with `did_you_mean`. */
function managementRefusal({ method, path, allowed, near }: Unmatched): ApiError {
  if (allowed.length > 0)
    return new ApiError(
      'method_not_allowed',
      `${method} is not allowed on ${path}; it accepts ${allowed.join(', ')}.`,
    );
  const suggestions = near();
  return new ApiError('not_found', `No route ${method} ${path}.`, {
    ...(suggestions.length > 0 ? { didYouMean: suggestions } : {}),
  });
}

/**
 * The route paths within a few typos of `path`, as `path` would read with the typos fixed: the
 * pattern's parameters take the request's values (`/orgs/acme/projetcs` → `/orgs/acme/projects`).
 * A pattern counts when it has as many segments and its static segments differ by at most 2
 * edits in all (or a quarter of their length, for long ones).
 */
function nearPaths(path: string, patterns: Iterable<string>): string[] {
  const segments = path.split('/');
  const near: { path: string; edits: number }[] = [];
  for (const pattern of patterns) {
    const parts = pattern.split('/');
    if (parts.length !== segments.length || parts.some((part) => part.includes('*'))) continue;
    let edits = 0;
    let staticLength = 0;
    const fixed = parts.map((part, i) => {
      const actual = segments[i] ?? '';
      if (part.startsWith(':')) return actual;
      edits += distance(part, actual.toLowerCase());
      staticLength += part.length;
      return part;
    });
    if (edits > 0 && edits <= Math.max(2, staticLength / 4))
      near.push({ path: fixed.join('/'), edits });
  }
  return [...new Set(near.sort((a, b) => a.edits - b.edits).map((entry) => entry.path))].slice(
    0,
    5,
  );
}
