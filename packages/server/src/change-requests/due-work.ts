import type { Services } from '../services.js';
import type { DueWork } from '../schedules/due-work.js';
import { inSpan } from '../telemetry/spans.js';
import { applyScheduled } from './scheduled-apply.js';

/** The most scheduled requests one pass applies; the rest wait a second for the next pass. */
const BATCH = 50;

/**
 * Applies scheduled change requests whose `applyAt` has come (spec: change requests, section 3):
 * each in its own transaction that claims it from `scheduled`, so that one node applies it,
 * once, whichever nodes pass at the same time, and an overdue request is applied on the first
 * pass after a restart.
 */
export function scheduledChangeRequests(services: Pick<Services, 'db' | 'events'>): DueWork {
  return {
    name: 'scheduled change requests',
    async run(now) {
      const due = await services.db
        .selectFrom('change_requests')
        .select('id')
        .where('state', '=', 'scheduled')
        .where('apply_at', '<=', now.toISOString())
        .orderBy('apply_at')
        .limit(BATCH)
        .execute();
      let done = 0;
      for (const { id } of due)
        if (
          (await inSpan('change_request.apply', { 'vexil.change_request.id': id }, () =>
            applyScheduled(services, id, now),
          )) !== 'skipped'
        )
          done += 1;
      return done;
    },
  };
}
