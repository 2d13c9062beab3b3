import { mutate, type Mutation } from '../db/mutate.js';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import { writeChanges } from './changes.js';
import type { Change } from './kinds.js';
import { authorActor, emitRequestEvent } from './request-events.js';
import type { ChangeRequestRow } from './store.js';

/**
 * Applies a scheduled request whose time has come, exactly once however many nodes try: the
 * apply's transaction claims it with a conditional update from `scheduled`. When the changes
 * cannot apply (a conflict, a target gone or archived), nothing is written and the request
 * becomes `failed` with `failure`, and `change_request.failed` is emitted.
 * @returns what happened: `applied`, `failed`, or `skipped` when another node claimed it first
 *   (or it was unscheduled, edited or cancelled meanwhile)
 * @throws what the database throws (the next pass tries again)
 */
export async function applyScheduled(
  services: Pick<Services, 'db' | 'events'>,
  id: string,
  now: Date,
): Promise<'applied' | 'failed' | 'skipped'> {
  const row = await services.db
    .selectFrom('change_requests')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row || row.state !== 'scheduled') return 'skipped';
  const project = await services.db
    .selectFrom('projects')
    .selectAll()
    .where('id', '=', row.project_id)
    .executeTakeFirstOrThrow();
  const scope = {
    organizationId: row.organization_id,
    actor: authorActor(row),
    now,
    events: services.events,
  };
  const claim = (m: Mutation, values: Partial<ChangeRequestRow>) =>
    m.trx
      .updateTable('change_requests')
      .set({ ...values, updated_at: m.now })
      .where('id', '=', row.id)
      .where('state', '=', 'scheduled')
      .where('apply_at', '<=', now.toISOString())
      .returningAll()
      .executeTakeFirst();
  const environmentOf = (m: Mutation) =>
    m.trx
      .selectFrom('environments')
      .select(['id', 'key'])
      .where('id', '=', row.environment_id)
      .executeTakeFirstOrThrow();
  try {
    return await mutate(
      services.db,
      { ...scope, changeRequest: { id: row.id, number: row.number } },
      async (m) => {
        const applied = await claim(m, {
          state: 'applied',
          applied_at: m.now,
          applied_by: JSON.stringify({ service: 'schedule' }),
        });
        if (!applied) return 'skipped' as const;
        // The claimed row's changes, not those read before the claim: what was approved when the
        // request was last scheduled.
        const diff = await writeChanges(
          m,
          project,
          row.environment_id,
          JSON.parse(applied.changes) as Change[],
        );
        // What the request changed, as it was when applied, is kept with it (its detail's diff).
        await m.trx
          .updateTable('change_requests')
          .set({ applied_diff: JSON.stringify(diff) })
          .where('id', '=', applied.id)
          .execute();
        await emitRequestEvent(
          m,
          'change_request.applied',
          applied,
          { project, environment: await environmentOf(m) },
          'applied on schedule',
        );
        return 'applied' as const;
      },
    );
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return mutate(services.db, scope, async (m) => {
      const failed = await claim(m, {
        state: 'failed',
        failure: JSON.stringify({ code: error.code, message: error.message }),
      });
      if (!failed) return 'skipped' as const;
      await emitRequestEvent(
        m,
        'change_request.failed',
        failed,
        { project, environment: await environmentOf(m) },
        `failed: ${error.message}`,
      );
      return 'failed' as const;
    });
  }
}
