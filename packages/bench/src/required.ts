/**
 * `value`, which the benchmark's own set-up guarantees (a spawned process's pid, an element of a
 * non-empty list); throws naming `what` when that guarantee is broken.
 */
export function required<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`bench: no ${what}`);
  return value;
}
