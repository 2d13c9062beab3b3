import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ApiError, invalidField } from './errors.js';

const NUL = '\u0000';
const PROBLEM = 'must not contain the NUL character (U+0000)';

/**
 * The path of the first string (or property name) in `value` that holds a NUL, or null.
 * Iterative, so a body nested thousands of levels deep cannot overflow the stack.
 */
function nulPath(value: unknown): string | null {
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [] }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const { value: current, path } = item;
    if (typeof current === 'string') {
      if (current.includes(NUL)) return path.join('.') || 'body';
    } else if (current !== null && typeof current === 'object') {
      for (const [name, member] of Object.entries(current)) {
        if (name.includes(NUL)) return [...path, name.replaceAll(NUL, '\\0')].join('.');
        stack.push({ value: member, path: [...path, name] });
      }
    }
  }
  return null;
}

/**
 * A management `preValidation` hook: refuses NUL characters in the URL and in body strings.
 * PostgreSQL `text` cannot store U+0000, so without this check such input reached the database
 * and failed there as a 500 (found by `http/hardening.test.ts`); SQLite would store it.
 * Fails the request (through `done`) with ApiError 400 `bad_request` for `%00` in the path or
 * query, 400 `validation_failed` naming the body field otherwise.
 */
export function rejectNulCharacters(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  if (/%00/.test(request.url)) {
    done(new ApiError('bad_request', `The URL ${PROBLEM} (%00).`));
    return;
  }
  const field = nulPath(request.body);
  done(field === null ? undefined : invalidField(field, PROBLEM));
}
