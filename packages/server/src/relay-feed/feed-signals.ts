import type { WrittenEvent } from '../events/hub.js';
import type { EventType } from '../events/types.js';

/** Where committed credential changes are announced to every node's relay feeds. */
export interface RelayFeedAnnouncer {
  environmentAccessChanged(environmentId: string): void;
  relayKeyRevoked(relayKeyId: string): void;
}

/** Events that change what a feed sends without changing a configuration version. */
const ANNOUNCED: ReadonlySet<EventType> = new Set([
  'environment.created',
  'sdk_key.created',
  'sdk_key.deleted',
]);

/**
 * An event-hub subscriber (design record 018) that announces, once the mutation commits, what
 * the relay feeds follow besides configurations (design record 045): an environment created
 * (sent to the feeds that cover it), an SDK key created or revoked (the environment's key hashes
 * are sent again), and a relay key revoked (its feeds close). Wired by the composition root to the node bus, which tells the other nodes.
 */
export function announceToRelayFeeds(
  announcer: RelayFeedAnnouncer,
): (written: WrittenEvent) => void {
  return ({ event, afterCommit }) => {
    const { type, environmentId } = event;
    if (ANNOUNCED.has(type) && environmentId !== null)
      afterCommit(() => announcer.environmentAccessChanged(environmentId));
    else if (type === 'relay_key.revoked')
      afterCommit(() => announcer.relayKeyRevoked(event.entity.id));
  };
}
