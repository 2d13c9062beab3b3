/**
 * Regular expressions for `MatchesRegex`, compiled with re2js: RE2 syntax, linear-time matching,
 * so a hostile pattern or attribute cannot stall evaluation. RE2 is also what the Go and other
 * SDKs have, which keeps every SDK matching the same way.
 */
import { RE2JS } from 're2js';

/** A compiled pattern, or why it failed to compile. */
export type RegexCompilation = { ok: true; regex: RE2JS } | { ok: false; problem: string };

// Configurations are recompiled on every change but their patterns rarely change, so compiled
// patterns are shared between compilations. Bounded so that a stream of distinct patterns cannot
// grow memory without limit.
const CACHE_LIMIT = 10_000;
const cache = new Map<string, RegexCompilation>();

// Syntax that other regex dialects have and RE2 deliberately lacks.
const UNSUPPORTED_SYNTAX = /\(\?<?[=!]|\\[1-9]|\\k</;

/** Compiles an RE2 pattern (cached). Never throws. */
export function compileRegex(pattern: string): RegexCompilation {
  const cached = cache.get(pattern);
  if (cached !== undefined) return cached;
  let result: RegexCompilation;
  try {
    result = { ok: true, regex: RE2JS.compile(pattern) };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    const hint = UNSUPPORTED_SYNTAX.test(pattern)
      ? ' RE2 does not support lookahead, lookbehind or backreferences.'
      : '';
    result = { ok: false, problem: `${detail}.${hint}` };
  }
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(pattern, result);
  return result;
}
