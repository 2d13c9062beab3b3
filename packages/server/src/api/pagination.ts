import type { SelectQueryBuilder } from 'kysely';
import { Type, type Static } from 'typebox';
import { invalidField } from '../errors.js';

/** Page size when `limit` is omitted, and its maximum (design record 001). */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});
export type PageQuery = Static<typeof PageQuery>;

/** The paged result shape (spec: Paged result). */
export function pagedSchema<T extends object>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
    _actions: Type.Record(
      Type.String(),
      Type.Object({ allowed: Type.Boolean(), reason: Type.Union([Type.String(), Type.Null()]) }),
    ),
  });
}

type Position = [string | number, string];

function decodeCursor(cursor: string): Position {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(value) && value.length === 2 && typeof value[1] === 'string')
      return value as Position;
  } catch {
    // fall through to the validation error
  }
  throw invalidField('cursor', 'is not a cursor returned by this endpoint');
}

/**
 * Keyset pagination: rows ordered by `sortColumn` (then by `id` to break ties), in `direction`.
 * Cursors are opaque (base64url of the last row's position) and stable under inserts.
 */
export async function paginate<DB, TB extends keyof DB, Row extends { id: string }>(
  query: SelectQueryBuilder<DB, TB, Row>,
  page: PageQuery,
  options: {
    sortColumn?: string;
    sortValue?: (row: Row) => string | number;
    direction?: 'asc' | 'desc';
    idColumn?: string;
  } = {},
): Promise<{ rows: Row[]; nextCursor: string | null }> {
  const limit = page.limit ?? DEFAULT_PAGE_SIZE;
  const direction = options.direction ?? 'asc';
  const idColumn = options.idColumn ?? 'id';
  const sortColumn = options.sortColumn ?? idColumn;
  const comparison = direction === 'asc' ? '>' : '<';
  // Kysely's column references are checked against the table types; these names come from the
  // calling module, which owns the query, so the dynamic reference is sound.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let q = query as SelectQueryBuilder<any, any, Row>;
  if (page.cursor) {
    const [sortValue, id] = decodeCursor(page.cursor);
    q =
      sortColumn === idColumn
        ? q.where(idColumn, comparison, id)
        : q.where((eb) =>
            eb.or([
              eb(sortColumn, comparison, sortValue),
              eb.and([eb(sortColumn, '=', sortValue), eb(idColumn, comparison, id)]),
            ]),
          );
  }
  if (sortColumn !== idColumn) q = q.orderBy(sortColumn, direction);
  const rows = await q
    .orderBy(idColumn, direction)
    .limit(limit + 1)
    .execute();
  if (rows.length <= limit) return { rows, nextCursor: null };
  rows.length = limit;
  const last = rows[limit - 1];
  if (!last) return { rows, nextCursor: null };
  const position: Position = [options.sortValue ? options.sortValue(last) : last.id, last.id];
  return { rows, nextCursor: Buffer.from(JSON.stringify(position)).toString('base64url') };
}
