import type { EventSourceMessage } from 'eventsource-parser';
import { inSpan } from './spans.js';

/** Feed events that change what the relay holds; the others (`hello`, `ready`…) get no span. */
const SYNCED = new Set(['environment', 'patch', 'keys', 'removed']);

/** The environment a feed event is about, read without parsing the whole event. */
const ENVIRONMENT_ID = /"environmentId"\s*:\s*"([^"]+)"/;

/**
 * Applies one event of the relay's upstream feed (design record 045) inside a span
 * `relay.sync <event>` carrying the environment id: an environment's new configuration or what
 * changed in it, its SDK keys, or its removal.
 */
export function traceFeedEvent<T>(
  message: EventSourceMessage,
  apply: () => Promise<T>,
): Promise<T> {
  const event = message.event ?? 'message';
  if (!SYNCED.has(event)) return apply();
  const environmentId = ENVIRONMENT_ID.exec(message.data.slice(0, 512))?.[1];
  return inSpan(
    `relay.sync ${event}`,
    {
      'vexil.relay.event': event,
      ...(environmentId === undefined ? {} : { 'vexil.environment_id': environmentId }),
    },
    apply,
  );
}
