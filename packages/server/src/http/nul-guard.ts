import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ApiError, invalidField } from '../errors.js';

const NUL = '\u0000';
const PROBLEM = 'must not contain the NUL character (U+0000)';

/** A value met on the walk, with the name it has in its parent (the path is built on a find). */
interface Visit {
  value: unknown;
  name: string;
  parent: Visit | null;
}

function pathOf(visit: Visit | null): string {
  const names: string[] = [];
  for (let at = visit; at?.parent; at = at.parent) names.push(at.name);
  return names.reverse().join('.');
}

/**
 * The path of the first string (or property name) in `value` that holds a NUL, or null.
 * Iterative and linear in the value's size: a body nested thousands of levels deep neither
 * overflows the stack nor costs a copy of its path per level (issue 38).
 */
function nulPath(value: unknown): string | null {
  const stack: Visit[] = [{ value, name: '', parent: null }];
  for (let visit = stack.pop(); visit; visit = stack.pop()) {
    const current = visit.value;
    if (typeof current === 'string') {
      if (current.includes(NUL)) return pathOf(visit) || 'body';
    } else if (current !== null && typeof current === 'object') {
      for (const [name, member] of Object.entries(current)) {
        if (name.includes(NUL))
          return [pathOf(visit), name.replaceAll(NUL, '\\0')].filter(Boolean).join('.');
        stack.push({ value: member, name, parent: visit });
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
