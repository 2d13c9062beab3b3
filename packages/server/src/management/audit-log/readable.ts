import type { Services } from '../../services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A recorded change as the audit log and a flag's history show it. */
export interface ReadableChange {
  property: string;
  from: string | null;
  to: string | null;
  /** The key of the variation, flag, segment or environment that `from` names by id. */
  fromKey?: string;
  toKey?: string;
}

/**
 * The changes with the keys of the ids they hold (`DefaultVariationId` before and after as
 * variation keys), so a person reads names, never ids (design record 038). Ids are resolved at
 * read time within the organization, one query per kind of entity; an id whose entity is gone
 * keeps no key, and the webhook payloads keep carrying ids as the spec says.
 */
export async function withKeys<T extends { changes: ReadableChange[] }>(
  services: Services,
  organizationId: string,
  items: T[],
): Promise<T[]> {
  const ids = [
    ...new Set(
      items.flatMap((item) =>
        item.changes
          .flatMap((change) => [change.from, change.to])
          .filter((v) => UUID.test(v ?? '')),
      ),
    ),
  ] as string[];
  if (ids.length === 0) return items;
  const { db } = services;
  const inOrg = db
    .selectFrom('projects')
    .select('id')
    .where('organization_id', '=', organizationId);
  const found = await Promise.all([
    db
      .selectFrom('variations')
      .innerJoin('flags', 'flags.id', 'variations.flag_id')
      .select(['variations.id', 'variations.key'])
      .where('variations.id', 'in', ids)
      .where('flags.project_id', 'in', inOrg)
      .execute(),
    ...(['flags', 'segments', 'environments'] as const).map((table) =>
      db
        .selectFrom(table)
        .select(['id', 'key'])
        .where('id', 'in', ids)
        .where('project_id', 'in', inOrg)
        .execute(),
    ),
  ]);
  const keys = new Map(found.flat().map((row) => [row.id, row.key]));
  const keyOf = (value: string | null) => (value === null ? undefined : keys.get(value));
  return items.map((item) => ({
    ...item,
    changes: item.changes.map((change) => {
      const fromKey = keyOf(change.from);
      const toKey = keyOf(change.to);
      return {
        ...change,
        ...(fromKey === undefined ? {} : { fromKey }),
        ...(toKey === undefined ? {} : { toKey }),
      };
    }),
  }));
}
