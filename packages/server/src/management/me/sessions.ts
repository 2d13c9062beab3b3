import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes } from '../../api/scope.js';

const SessionSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  current: Type.Boolean(),
  ssoConnectionId: Type.Union([Type.String(), Type.Null()]),
  userAgent: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  lastSeenAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

/** The caller's own browser sessions: list and revoke (people-and-sign-in.md, Sign-in). */
export function registerMySessionRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/me/sessions',
    'user',
    {
      schema: {
        tags: ['me'],
        querystring: PageQuery,
        response: { 200: pagedSchema(SessionSchema) },
      },
    },
    async ({ caller }, request) => {
      const now = services.clock.now();
      const idleSince = new Date(now.getTime() - services.config.signIn.sessionIdleMs);
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('sessions')
          .selectAll()
          .where('user_id', '=', caller.id)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', now.toISOString())
          .where('last_seen_at', '>', idleSince.toISOString())
          .$if(caller.ssoConnectionId !== null, (qb) =>
            qb.where('sso_connection_id', '=', caller.ssoConnectionId),
          ),
        request.query,
      );
      return {
        items: rows.map((row) => ({
          id: row.id,
          current: caller.via === 'session' && caller.tokenId === row.id,
          ssoConnectionId: row.sso_connection_id,
          userAgent: row.user_agent,
          ip: row.ip,
          createdAt: row.created_at,
          lastSeenAt: row.last_seen_at,
          expiresAt: row.expires_at,
        })),
        next_cursor: nextCursor,
        _actions: {},
      };
    },
  );

  route.delete(
    '/me/sessions/:id',
    'user',
    { schema: { tags: ['me'], params: Type.Object({ id: Type.String() }) } },
    async ({ caller }, request, reply) => {
      const revoked = await services.db
        .updateTable('sessions')
        .set({ revoked_at: services.clock.now().toISOString() })
        .where('id', '=', request.params.id)
        .where('user_id', '=', caller.id)
        .where('revoked_at', 'is', null)
        .$if(caller.ssoConnectionId !== null, (qb) =>
          qb.where('sso_connection_id', '=', caller.ssoConnectionId),
        )
        .returning('id')
        .executeTakeFirst();
      if (!revoked)
        throw new ApiError('not_found', `Session "${request.params.id}" was not found.`, {
          nextActions: [{ method: 'GET', path: '/api/v1/me/sessions' }],
        });
      return reply.status(204).send();
    },
  );
}
