import type { Services } from '../services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids inside a recorded value (a rollout's JSON names its variations by id). */
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

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
        item.changes.flatMap((change) => [
          ...(change.from?.match(UUIDS) ?? []),
          ...(change.to?.match(UUIDS) ?? []),
        ]),
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
  const keyOf = (value: string | null) =>
    value === null ? undefined : UUID.test(value) ? keys.get(value) : inWords(value, keys);
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

/**
 * A recorded value holding ids in words: a rollout (`[{"variationId":…,"weight":1000},…]`, as
 * release plans and default-serve changes record it) as "true 1%, false 99%" by variation key;
 * undefined for a value without known ids.
 */
function inWords(value: string, keys: ReadonlyMap<string, string>): string | undefined {
  const ids = value.match(UUIDS);
  if (!ids?.some((id) => keys.has(id))) return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    if (
      Array.isArray(parsed) &&
      parsed.every(
        (w: unknown) =>
          typeof w === 'object' &&
          w !== null &&
          typeof (w as { variationId?: unknown }).variationId === 'string' &&
          typeof (w as { weight?: unknown }).weight === 'number',
      )
    )
      return (parsed as { variationId: string; weight: number }[])
        .map((w) => `${keys.get(w.variationId) ?? w.variationId} ${w.weight / 1000}%`)
        .join(', ');
  } catch {
    // Not JSON: the ids are named where they stand.
  }
  return value.replace(UUIDS, (id) => keys.get(id) ?? id);
}
