import type { Mutation } from '../../db/mutate.js';
import type { ProjectsTable } from '../../db/schema.js';
import { conflictOn } from '../../db/unique.js';

/**
 * Inserts a project (its environments are the caller's) and emits `project.created`.
 * @throws ApiError 409 `conflict` on `key` when the organization has a project of that key.
 */
export async function insertProject(m: Mutation, project: ProjectsTable): Promise<void> {
  await m.trx
    .insertInto('projects')
    .values(project)
    .execute()
    .catch(conflictOn('key', project.key, 'project'));
  await m.emit({
    type: 'project.created',
    project: { id: project.id, key: project.key },
    entity: { type: 'project', id: project.id, key: project.key },
    description: `Project "${project.key}" created`,
  });
}
