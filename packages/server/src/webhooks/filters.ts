import type { Mutation } from '../db/mutate.js';

/**
 * Removes a deleted project or environment from every subscription's filter; a filter that
 * becomes empty that way disables its subscription (spec: Subscription filtering). Call it after
 * emitting the deletion event, so the affected subscriptions still receive that event.
 */
export async function removeFromSubscriptionFilters(
  m: Mutation,
  column: 'project_ids' | 'environment_ids',
  id: string,
): Promise<void> {
  const subscriptions = await m.trx
    .selectFrom('webhook_subscriptions')
    .select(['id', column])
    .where(column, 'like', `%"${id}"%`)
    .execute();
  for (const subscription of subscriptions) {
    const remaining = (JSON.parse(subscription[column]) as string[]).filter((item) => item !== id);
    const emptied = remaining.length === 0;
    await m.trx
      .updateTable('webhook_subscriptions')
      .set({
        [column]: JSON.stringify(remaining),
        ...(emptied
          ? {
              enabled: 0,
              disabled_reason: `its ${column === 'project_ids' ? 'project' : 'environment'} filter was emptied by a deletion`,
            }
          : {}),
        updated_at: m.now,
      })
      .where('id', '=', subscription.id)
      .execute();
  }
}
