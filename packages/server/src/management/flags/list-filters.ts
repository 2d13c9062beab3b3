import { sql, type SelectQueryBuilder } from 'kysely';
import { Type, type Static } from 'typebox';
import type { FlagsTable, Schema } from '../../db/schema.js';
import { invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import type { ProjectScope } from '../../api/scope.js';
import { findRemovalCandidates } from './removal-candidates.js';
import { FlagTypeSchema } from './schemas.js';

/** Most keys `keys` accepts (a favourites list); more is a 400. */
const MAX_KEYS = 200;

/**
 * The flag list's filters beyond the spec's (design record 026): each narrows the query in SQL,
 * before paging, so a page is never short because of a filter.
 */
export const FlagListFilters = Type.Object({
  type: Type.Optional(FlagTypeSchema),
  environment: Type.Optional(
    Type.String({ description: 'An environment key; with `enabled`, flags on (or off) there.' }),
  ),
  enabled: Type.Optional(
    Type.Boolean({ description: 'With `environment`: flags on (true) or off (false) there.' }),
  ),
  lifecycle: Type.Optional(
    Type.Enum(['Stale', 'Dead'], {
      description: 'Removal candidates of that status only (docs/lifecycle.md).',
    }),
  ),
  owner: Type.Optional(
    Type.String({
      description: "A member's user id, or `me` for the calling user's flags.",
      maxLength: 64,
    }),
  ),
  keys: Type.Optional(
    Type.String({
      description: `Comma-separated flag keys (at most ${String(MAX_KEYS)}), e.g. a person's favourites.`,
      maxLength: 20_000,
    }),
  ),
  sort: Type.Optional(
    Type.Enum(['key', 'updated', 'created'], {
      description:
        'Order of the list: `key` ascending, `updated` or `created` newest first. Default: creation order, oldest first.',
    }),
  ),
});
export type FlagListFilters = Static<typeof FlagListFilters>;

type FlagQuery = SelectQueryBuilder<Schema, 'flags', FlagsTable>;

/** How `paginate` orders the list for `sort`. */
export function flagListOrder(sort: FlagListFilters['sort']) {
  switch (sort) {
    case 'key':
      return { sortColumn: 'key', sortValue: (row: FlagsTable) => row.key };
    case 'updated':
      return {
        sortColumn: 'updated_at',
        sortValue: (row: FlagsTable) => row.updated_at,
        direction: 'desc' as const,
      };
    case 'created':
      return {
        sortColumn: 'created_at',
        sortValue: (row: FlagsTable) => row.created_at,
        direction: 'desc' as const,
      };
    case undefined:
      return {};
  }
}

/**
 * Narrows a project's flag list by {@link FlagListFilters}.
 * @throws ApiError invalid_field for an unknown environment, `enabled` without `environment`,
 *   `owner=me` from a service token, or too many `keys`.
 */
export async function applyFlagListFilters(
  services: Services,
  scope: ProjectScope,
  filters: FlagListFilters,
  query: FlagQuery,
): Promise<FlagQuery> {
  let narrowed = query;
  if (filters.type) narrowed = narrowed.where('type', '=', filters.type);
  if (filters.enabled !== undefined && filters.environment === undefined)
    throw invalidField('environment', 'is required with enabled');
  if (filters.environment !== undefined) {
    const environment = await services.db
      .selectFrom('environments')
      .select('id')
      .where('project_id', '=', scope.project.id)
      .where('key', '=', filters.environment)
      .executeTakeFirst();
    if (!environment)
      throw invalidField('environment', `no environment "${filters.environment}" in this project`);
    if (filters.enabled !== undefined) {
      const enabled = filters.enabled ? 1 : 0;
      narrowed = narrowed.where('id', 'in', (eb) =>
        eb
          .selectFrom('flag_environments')
          .select('flag_id')
          .where('environment_id', '=', environment.id)
          .where('is_enabled', '=', enabled),
      );
    }
  }
  if (filters.owner !== undefined) {
    if (filters.owner === 'me' && scope.caller.type !== 'user')
      throw invalidField('owner', '"me" needs a person: a service token owns no flags');
    narrowed = narrowed.where(
      'owner_user_id',
      '=',
      filters.owner === 'me' ? scope.caller.id : filters.owner,
    );
  }
  if (filters.keys !== undefined) {
    const keys = filters.keys.split(',').filter((key) => key !== '');
    if (keys.length > MAX_KEYS) throw invalidField('keys', `at most ${String(MAX_KEYS)} keys`);
    narrowed = keys.length
      ? narrowed.where('key', 'in', keys)
      : narrowed.where(sql<boolean>`1 = 0`);
  }
  if (filters.lifecycle) {
    const candidates = await findRemovalCandidates(services, scope.project.id, 'stale');
    const keys = candidates.filter((c) => c.status === filters.lifecycle).map((c) => c.key);
    narrowed = keys.length
      ? narrowed.where('key', 'in', keys)
      : narrowed.where(sql<boolean>`1 = 0`);
  }
  return narrowed;
}
