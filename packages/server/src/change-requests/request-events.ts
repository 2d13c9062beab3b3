import type { Mutation } from '../db/mutate.js';
import type { Actor, EventType, KeyedRef } from '../events/types.js';
import type { Author, ChangeRequestRow } from './store.js';

/** The event actor of the schedule applying a request: its author, who wrote the changes. */
export function authorActor(row: ChangeRequestRow): Actor {
  const author = JSON.parse(row.author) as Author;
  return 'userId' in author ? author : { userId: author.tokenId, email: null, name: author.name };
}

/** Where a request's events happen: its project and environment. */
export interface RequestWhere {
  project: KeyedRef;
  environment: KeyedRef;
}

/** Emits one of a request's events, described as `Change request #n "title" <verb>`. */
export async function emitRequestEvent(
  m: Mutation,
  type: EventType,
  row: ChangeRequestRow,
  where: RequestWhere,
  verb: string,
): Promise<void> {
  await m.emit({
    type,
    project: where.project,
    environment: where.environment,
    entity: { type: 'change_request', id: row.id, key: String(row.number) },
    changeRequest: { id: row.id, number: row.number },
    description: `Change request #${row.number} "${row.title}" ${verb}`,
  });
}

/** The events of entering `state` from `draft` or an edit: opened, then approved or scheduled. */
export async function emitEntered(
  m: Mutation,
  row: ChangeRequestRow,
  where: RequestWhere,
): Promise<void> {
  await emitRequestEvent(m, 'change_request.opened', row, where, 'opened');
  if (row.state === 'approved' || row.state === 'scheduled')
    await emitRequestEvent(
      m,
      'change_request.approved',
      row,
      where,
      'approved (no approval required)',
    );
  if (row.state === 'scheduled')
    await emitRequestEvent(
      m,
      'change_request.scheduled',
      row,
      where,
      `scheduled for ${row.apply_at}`,
    );
}
