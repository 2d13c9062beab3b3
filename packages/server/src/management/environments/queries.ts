import type { Selectable } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Mutation } from '../../db/mutate.js';
import type { EnvironmentsTable, ProjectsTable } from '../../db/schema.js';
import { conflictOn } from '../../db/unique.js';
import type { Services } from '../../services.js';
import { isUuid, notFound, type OrgAccess } from '../access.js';
import { initialConfiguration } from '../flags/configuration.js';

/**
 * Resolves `{env}` (key or id) inside a project.
 * @throws ApiError 404 with near keys in `did_you_mean`.
 */
export async function requireEnvironment(
  services: Services,
  access: OrgAccess,
  project: ProjectsTable,
  envRef: string,
): Promise<Selectable<EnvironmentsTable>> {
  const environment = await services.db
    .selectFrom('environments')
    .selectAll()
    .where('project_id', '=', project.id)
    .where(isUuid(envRef) ? 'id' : 'key', '=', envRef)
    .executeTakeFirst();
  if (environment) return environment;
  const keys = await services.db
    .selectFrom('environments')
    .select('key')
    .where('project_id', '=', project.id)
    .execute();
  throw notFound(
    'Environment',
    envRef,
    keys.map((row) => row.key),
    { method: 'GET', path: `/api/v1/orgs/${access.org.slug}/projects/${project.key}/environments` },
  );
}

/**
 * Inserts an environment, gives every flag of the project its initial (disabled) configuration
 * there, and emits `environment.created`.
 */
export async function insertEnvironment(
  m: Mutation,
  projectId: string,
  input: { key: string; name: string | null; color: string | null; sortOrder: number },
): Promise<EnvironmentsTable> {
  const environment: EnvironmentsTable = {
    id: uuid(),
    project_id: projectId,
    key: input.key,
    name: input.name,
    color: input.color,
    sort_order: input.sortOrder,
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
    .select(['variations.flag_id', 'variations.id'])
    .where('flags.project_id', '=', projectId)
    .orderBy('variations.flag_id')
    .orderBy('variations.sort_order')
    .execute();
  const byFlag = new Map<string, string[]>();
  for (const variation of variations) {
    const list = byFlag.get(variation.flag_id) ?? [];
    list.push(variation.id);
    byFlag.set(variation.flag_id, list);
  }
  const rows = [...byFlag].map(([flagId, variationIds]) =>
    initialConfiguration(flagId, environment.id, variationIds, m.now),
  );
  if (rows.length > 0) await m.trx.insertInto('flag_environments').values(rows).execute();
  await m.emit({
    type: 'environment.created',
    projectId,
    environmentId: environment.id,
    entity: { type: 'environment', id: environment.id },
    description: `Environment "${environment.key}" created`,
  });
  return environment;
}
