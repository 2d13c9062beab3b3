import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

const KIB = 1024;

/**
 * The largest body each kind of route reads, in bytes (design record 035): evaluation requests
 * carry a context, flags-as-code documents a whole project, other management bodies one
 * resource. The events endpoints have their own (`EVENTS_BODY_LIMIT_BYTES`).
 */
export const BODY_LIMITS = {
  management: 1024 * KIB,
  evaluation: 64 * KIB,
  document: 4096 * KIB,
} as const;

/**
 * What a JSON body may hold (design record 035): no schema of the API nests deeper or takes a
 * longer array, so a body past these bounds is refused before validation, whose work grows with
 * the body's size.
 */
export const JSON_LIMITS = {
  /** Levels of arrays and objects, the top level being 1. */
  depth: 64,
  /** Items of one array (the largest `maxItems` of any schema: a document's flags). */
  arrayItems: 10_000,
} as const;

/**
 * A body refused for its shape: 400 `validation_failed` on the field `body`. `statusCode` lets
 * the OFREP mapper, which maps Fastify's 4xx errors, answer it as a `PARSE_ERROR`.
 */
export class JsonLimitExceeded extends ApiError {
  readonly statusCode = 400;

  constructor(problem: string) {
    super('validation_failed', `The request body ${problem}.`, { fields: { body: [problem] } });
  }
}

/**
 * Checks a parsed JSON value against {@link JSON_LIMITS} in one walk, linear in its size and
 * iterative (a body's depth never becomes the stack's).
 * @throws JsonLimitExceeded naming the first limit exceeded
 */
export function checkJsonLimits(value: unknown): void {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { value: current, depth } = item;
    if (current === null || typeof current !== 'object') continue;
    if (depth > JSON_LIMITS.depth)
      throw new JsonLimitExceeded(`must not nest more than ${JSON_LIMITS.depth} levels deep`);
    const members = Array.isArray(current) ? current : Object.values(current);
    if (Array.isArray(current) && current.length > JSON_LIMITS.arrayItems)
      throw new JsonLimitExceeded(
        `must not hold an array of more than ${JSON_LIMITS.arrayItems} items`,
      );
    for (const member of members as unknown[]) pending.push({ value: member, depth: depth + 1 });
  }
}

/** A JSON body parser in Fastify's callback form (`getDefaultJsonParser` returns one). */
type JsonParser<Request> = (
  request: Request,
  body: string,
  done: (error: Error | null, value?: unknown) => void,
) => void;

/**
 * Wraps a JSON body parser (Fastify's own, with its prototype-poisoning guard) so that every body
 * it parses is checked with {@link checkJsonLimits} before any hook or validator sees it.
 */
export function limitedJsonParser<Request>(
  parse: JsonParser<Request> | ((request: Request, body: string) => Promise<unknown>),
): JsonParser<Request> {
  // Fastify's own parser takes the callback; its type also admits the promise form.
  const parseWithCallback = parse as JsonParser<Request>;
  return (request, body, done) => {
    parseWithCallback(request, body, (error, value) => {
      if (error) {
        done(error, undefined);
        return;
      }
      try {
        checkJsonLimits(value);
      } catch (refusal) {
        done(refusal as JsonLimitExceeded, undefined);
        return;
      }
      done(null, value);
    });
  };
}

/** Gives every route of `scope` registered from now on `bytes` as its body limit, unless it has its own. */
export function limitBodies(scope: FastifyInstance, bytes: number): void {
  scope.addHook('onRoute', (route) => {
    route.bodyLimit ??= bytes;
  });
}
