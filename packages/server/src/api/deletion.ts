import type { Mutation } from '../db/mutate.js';
import type { KeyedRef } from '../events/types.js';
import { ApiError } from '../errors.js';

/** The project-level resources that other configuration refers to by key or id. */
const DELETABLE = {
  flag: { table: 'flags', event: 'flag.deleted', label: 'Flag' },
  segment: { table: 'segments', event: 'segment.deleted', label: 'Segment' },
} as const;

/**
 * Deletes a flag or a segment unless something still refers to it, then marks the project's
 * SDK configuration changed and emits `flag.deleted` or `segment.deleted`. Run it inside the
 * mutation so that `refusal` is read next to the delete and a reference added meanwhile cannot
 * slip past it.
 * @param refusal the conflict message naming what still refers to the resource, or null
 * @throws ApiError 409 `conflict` with that message; nothing is deleted.
 */
export async function deleteUnlessReferenced(
  m: Mutation,
  target: { kind: keyof typeof DELETABLE; id: string; key: string; project: KeyedRef },
  refusal: () => Promise<string | null>,
): Promise<void> {
  const reason = await refusal();
  if (reason !== null) throw new ApiError('conflict', reason);
  const { table, event, label } = DELETABLE[target.kind];
  await m.trx.deleteFrom(table).where('id', '=', target.id).execute();
  await m.touchProject(target.project.id, 'describes');
  await m.emit({
    type: event,
    project: target.project,
    // Its row is gone already: design record 026 has a deletion's key null.
    entity: { type: target.kind, id: target.id, key: null },
    description: `${label} "${target.key}" deleted`,
  });
}
