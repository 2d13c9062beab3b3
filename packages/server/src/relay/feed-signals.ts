import type { WrittenEvent } from '../events/hub.js';

/** Where committed credential changes are announced to every node's relay feeds. */
export interface RelayFeedAnnouncer {
  sdkKeysChanged(environmentId: string): void;
  relayKeyRevoked(relayKeyId: string): void;
}

/**
 * An event-hub subscriber (design record 018) that announces, once the mutation commits, what
 * the relay feeds follow besides configurations (design record 045): an SDK key created or
 * revoked (the environment's key hashes are sent again) and a relay key revoked (its feeds
 * close). Wired by the composition root to the node bus, which tells the other nodes.
 */
export function announceToRelayFeeds(
  announcer: RelayFeedAnnouncer,
): (written: WrittenEvent) => void {
  return ({ event, afterCommit }) => {
    const { type, environmentId } = event;
    if ((type === 'sdk_key.created' || type === 'sdk_key.deleted') && environmentId !== null)
      afterCommit(() => announcer.sdkKeysChanged(environmentId));
    else if (type === 'relay_key.revoked')
      afterCommit(() => announcer.relayKeyRevoked(event.entity.id));
  };
}
