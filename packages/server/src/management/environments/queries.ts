import type { Selectable } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Mutation } from '../../db/mutate.js';
import type { EnvironmentsTable } from '../../db/schema.js';
import { conflictOn } from '../../db/unique.js';
import type { KeyedRef } from '../../events/types.js';
import { defaultOffVariation, initialConfiguration } from '../flags/configuration.js';

/**
 * Inserts an environment, gives every flag of the project its initial (disabled) configuration
 * there, and emits `environment.created`.
 */
export async function insertEnvironment(
  m: Mutation,
  project: KeyedRef,
  input: {
    key: string;
    name: string | null;
    color: string | null;
    sortOrder: number;
    critical: boolean;
  },
): Promise<EnvironmentsTable> {
  const environment: EnvironmentsTable = {
    id: uuid(),
    project_id: project.id,
    key: input.key,
    name: input.name,
    color: input.color,
    sort_order: input.sortOrder,
    critical: input.critical ? 1 : 0,
    change_requests_required: 0,
    change_request_approvals: 1,
    change_request_emergency_off: 1,
    version: 1,
    created_at: m.now,
    updated_at: m.now,
  };
  await m.trx
    .insertInto('environments')
    .values(environment)
    .execute()
    .catch(conflictOn('key', input.key, 'environment'));
  const variations = await m.trx
    .selectFrom('variations')
    .innerJoin('flags', 'flags.id', 'variations.flag_id')
    .select(['variations.flag_id', 'variations.id', 'variations.value', 'flags.type'])
    .where('flags.project_id', '=', project.id)
    .orderBy('variations.flag_id')
    .orderBy('variations.sort_order')
    .execute();
  // Each flag keeps the off variation it has in the project's first environment (design record 021).
  const configurations = await m.trx
    .selectFrom('flag_environments')
    .innerJoin('environments', 'environments.id', 'flag_environments.environment_id')
    .select(['flag_environments.flag_id', 'flag_environments.off_variation_id'])
    .where('environments.project_id', '=', project.id)
    .orderBy('environments.sort_order', 'desc')
    .orderBy('environments.id', 'desc')
    .execute();
  const offVariationIds = new Map(
    configurations.map((configuration) => [configuration.flag_id, configuration.off_variation_id]),
  );
  const byFlag = new Map<string, typeof variations>();
  for (const variation of variations) {
    const list = byFlag.get(variation.flag_id) ?? [];
    list.push(variation);
    byFlag.set(variation.flag_id, list);
  }
  const rows = [...byFlag].flatMap(([flagId, flagVariations]) => {
    const [first] = flagVariations;
    if (!first) return [];
    const offVariationId =
      offVariationIds.get(flagId) ?? (defaultOffVariation(first.type, flagVariations) ?? first).id;
    return [initialConfiguration(flagId, environment.id, first.id, offVariationId, m.now)];
  });
  if (rows.length > 0) await m.trx.insertInto('flag_environments').values(rows).execute();
  await m.emit({
    type: 'environment.created',
    project,
    environment,
    entity: { type: 'environment', id: environment.id, key: environment.key },
    description: `Environment "${environment.key}" created`,
  });
  return environment;
}

/**
 * Updates the environment's columns named in `values` and returns it as stored. The caller emits
 * `environment.updated` with its description of the change.
 */
export function updateEnvironment(
  m: Mutation,
  environmentId: string,
  values: Partial<
    Pick<
      EnvironmentsTable,
      | 'name'
      | 'color'
      | 'sort_order'
      | 'critical'
      | 'change_requests_required'
      | 'change_request_approvals'
      | 'change_request_emergency_off'
    >
  >,
): Promise<Selectable<EnvironmentsTable>> {
  return m.trx
    .updateTable('environments')
    .set({ ...values, updated_at: m.now })
    .where('id', '=', environmentId)
    .returningAll()
    .executeTakeFirstOrThrow();
}
