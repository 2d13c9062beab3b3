import type { ServerResponse } from 'node:http';
import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { openEventStream, PING, sseFrame } from '../../evaluation/streaming.js';
import type { LiveChange, LiveFeed } from '../../events/live-feed.js';
import type { Services } from '../../services.js';
import type { OrgAccess } from '../../api/access.js';
import { mayRead } from '../../api/reach.js';
import { scopedRoutes } from '../../api/scope.js';

/**
 * How long one stream lives before the server ends it (ms). The client reconnects at once and is
 * authenticated again, so a revoked token or a lost role stops receiving within this bound.
 */
const STREAM_LIFETIME_MS = 10 * 60_000;

/** Whether the caller may hear of `change`: its organization, and its project allowlist if any. */
export function mayHear(scope: OrgAccess, change: LiveChange): boolean {
  return change.organizationId === scope.org.id && mayRead(scope, change.project?.id ?? null);
}

/**
 * `GET /api/v1/orgs/{org}/events/stream` (Viewer; design record 026): Server-Sent Events, one
 * `change` event per committed management change in the organization (data: a
 * {@link LiveChange} as JSON, id: the event id), on this node or any other; `: ping` comments as
 * heartbeats. A `ready` event is sent first, so a client knows it is listening.
 */
export function registerLiveRoutes(app: App, services: Services, feed: LiveFeed): void {
  const route = scopedRoutes(app, services);
  const open = new Set<ServerResponse>();
  app.addHook('preClose', (done) => {
    for (const response of open) response.end();
    done();
  });

  route.get(
    '/orgs/:org/events/stream',
    'Viewer',
    {
      schema: {
        tags: ['events'],
        summary: 'Live management changes (Server-Sent Events)',
        description:
          'A `ready` event, then a `change` event (data: JSON with `id`, `type`, `occurredAt`, ' +
          '`organizationId`, `project`, `environment`, `entity` {type, id, key} and `child`) for ' +
          'every change committed in the organization, by anyone, on any node. A caller with a ' +
          "project allowlist hears only of its projects. No change's data is included: re-read " +
          'what you show. The server ends a stream after 10 minutes; reconnect.',
        params: Type.Object({ org: Type.String() }),
        produces: ['text/event-stream'],
      },
    },
    async (scope, request, reply) => {
      const response = openEventStream(reply);
      open.add(response);
      response.write(sseFrame('ready', '{}'));
      const unsubscribe = feed.subscribe((change) => {
        if (mayHear(scope, change) && !response.writableEnded)
          response.write(sseFrame('change', JSON.stringify(change), change.id));
      });
      const heartbeat = setInterval(() => {
        if (!response.writableEnded) response.write(PING);
      }, services.config.streamHeartbeatMs);
      const lifetime = setTimeout(() => response.end(), STREAM_LIFETIME_MS);
      heartbeat.unref();
      lifetime.unref();
      response.on('close', () => {
        unsubscribe();
        clearInterval(heartbeat);
        clearTimeout(lifetime);
        open.delete(response);
      });
      request.log.debug('management event stream opened');
      return reply;
    },
  );
}
