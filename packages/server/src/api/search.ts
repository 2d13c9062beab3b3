import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { Type } from 'typebox';

/** The `q` parameter of list routes that search by key or name (flags, segments). */
export const SearchText = Type.String({ maxLength: 200 });

/**
 * A `where` condition: the row's `key` or `name` contains `q`, ignoring case. LIKE's own
 * wildcards (`%`, `_`, `\`) are dropped from `q`, so they match nothing special. The columns are
 * unqualified: use it on a query whose only `key` and `name` are the listed resource's.
 */
export function keyOrNameContains(q: string): RawBuilder<SqlBool> {
  const pattern = `%${q.toLowerCase().replace(/[%_\\]/g, '')}%`;
  return sql<SqlBool>`(lower(key) like ${pattern} or lower(name) like ${pattern})`;
}
