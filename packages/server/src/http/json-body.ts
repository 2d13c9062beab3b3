import { errorCodes } from 'fastify';
import secureJson from 'secure-json-parse';
import { ApiError } from '../errors.js';

/** Where V8 says a JSON text went wrong: "… in JSON at position 13 (line 2 column 3)". */
const V8_POSITION = /\s+in JSON at position (\d+)(?:\s*\(line \d+ column \d+\))?/;

/**
 * Parses a request body as JSON, refusing `__proto__` and `constructor.prototype` keys as
 * Fastify's own parser does (secure-json-parse).
 * @throws Fastify's `FST_ERR_CTP_EMPTY_JSON_BODY` for an empty body, and ApiError
 *   `malformed_json` (400) naming what is wrong and where, by line and column (1-based)
 */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY();
  try {
    return secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const position = V8_POSITION.exec(reason);
    // A body that ends too early goes wrong at its end.
    const offset = position
      ? Number(position[1])
      : /end of JSON input/.test(reason)
        ? text.length
        : null;
    const where = offset === null ? '' : ` at ${lineAndColumn(text, offset)}`;
    throw new ApiError(
      'malformed_json',
      `The request body is not valid JSON${where}: ${reason.replace(V8_POSITION, '')}.`,
    );
  }
}

/** "line L, column C" of the character at `offset` in `text`. */
function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}
