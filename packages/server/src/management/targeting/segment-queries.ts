import type { Selectable } from 'kysely';
import { v7 as uuid } from 'uuid';
import type { Mutation } from '../../db/mutate.js';
import type { SegmentsTable } from '../../db/schema.js';
import { conflictOn } from '../../db/unique.js';
import type { KeyedRef } from '../../events/types.js';

/** A segment's own columns, as a create writes them and an update may change them. */
export type SegmentValues = Omit<
  SegmentsTable,
  'id' | 'project_id' | 'version' | 'created_at' | 'updated_at'
>;

/**
 * Inserts a segment of the project, touches the project and emits `segment.created`.
 * @throws ApiError 409 `conflict` on `key` when the project has a segment of that key.
 */
export async function insertSegment(
  m: Mutation,
  project: KeyedRef,
  values: SegmentValues,
): Promise<SegmentsTable> {
  const segment: SegmentsTable = {
    id: uuid(),
    project_id: project.id,
    ...values,
    version: 1,
    created_at: m.now,
    updated_at: m.now,
  };
  await m.trx
    .insertInto('segments')
    .values(segment)
    .execute()
    .catch(conflictOn('key', values.key, 'segment'));
  await m.touchProject(project.id, 'describes');
  await m.emit({
    type: 'segment.created',
    project,
    entity: { type: 'segment', id: segment.id, key: segment.key },
    description: `Segment "${segment.key}" created`,
  });
  return segment;
}

/**
 * Updates the segment's columns named in `values`, bumps its version, touches its project and
 * returns the segment as stored. The caller emits `segment.updated` with its description of the
 * change.
 * @throws ApiError 409 `conflict` on `key` when a new key is another segment's.
 */
export async function updateSegment(
  m: Mutation,
  segment: Pick<SegmentsTable, 'id' | 'key' | 'project_id'>,
  values: Partial<SegmentValues>,
): Promise<Selectable<SegmentsTable>> {
  const updated = await m.trx
    .updateTable('segments')
    .set((eb) => ({ ...values, version: eb('version', '+', 1), updated_at: m.now }))
    .where('id', '=', segment.id)
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch(conflictOn('key', values.key ?? segment.key, 'segment'));
  // Its key, name and description describe a segment; its conditions decide who is in it.
  const serves = values.conditions !== undefined || values.condition_logic !== undefined;
  await m.touchProject(segment.project_id, serves ? 'serves' : 'describes');
  return updated;
}
