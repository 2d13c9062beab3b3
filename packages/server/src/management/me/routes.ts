import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { SHOWN_ONCE_WARNING } from '../../auth/secrets.js';
import { issueToken, tokenSummary } from '../../auth/tokens.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { TokenCreatedSchema, TokenSummarySchema, futureDate } from '../service-tokens/schemas.js';
import { scopedRoutes } from '../../api/scope.js';

const MeResponse = Type.Object({
  type: Type.Union([Type.Literal('user'), Type.Literal('service_token')]),
  id: Type.String({ format: 'uuid' }),
  name: Type.Union([Type.String(), Type.Null()]),
  email: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  emailVerified: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  organizationId: Type.Optional(Type.String({ format: 'uuid' })),
  ssoConnectionId: Type.Optional(Type.String({ format: 'uuid' })),
  role: Type.Optional(Type.String()),
  projectScope: Type.Optional(Type.Array(Type.String())),
});

/**
 * `GET /api/v1/me` (spec: Caller identity) and the caller's own personal access tokens under
 * `/api/v1/me/tokens` (design record 004).
 */
export function registerMeRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/me',
    'authenticated',
    { schema: { tags: ['me'], response: { 200: MeResponse } } },
    ({ caller }) => {
      if (caller.type === 'user') {
        return {
          type: 'user' as const,
          id: caller.id,
          name: caller.name,
          email: caller.email,
          emailVerified: caller.emailVerified,
          // Signed in through an SSO connection: the one organization this credential reaches.
          ...(caller.ssoConnectionId && caller.ssoOrganizationId
            ? { organizationId: caller.ssoOrganizationId, ssoConnectionId: caller.ssoConnectionId }
            : {}),
        };
      }
      return {
        type: 'service_token' as const,
        id: caller.id,
        name: caller.name,
        organizationId: caller.organizationId,
        role: caller.role,
        ...(caller.projectScope ? { projectScope: caller.projectScope } : {}),
      };
    },
  );

  route.post(
    '/me/tokens',
    'user',
    {
      schema: {
        tags: ['me'],
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            expiresAt: Type.Optional(
              Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: TokenCreatedSchema },
      },
    },
    async ({ caller }, request, reply) => {
      const now = services.clock.now();
      const expiresAt = futureDate(request.body.expiresAt ?? null, now);
      const { row, token } = await issueToken(services.db, {
        kind: 'personal',
        userId: caller.id,
        ssoConnectionId: caller.ssoConnectionId,
        name: request.body.name,
        expiresAt,
        now: now.toISOString(),
      });
      return reply.status(201).send({ ...tokenSummary(row), token, warning: SHOWN_ONCE_WARNING });
    },
  );

  route.get(
    '/me/tokens',
    'user',
    {
      schema: {
        tags: ['me'],
        querystring: PageQuery,
        response: { 200: pagedSchema(TokenSummarySchema) },
      },
    },
    async ({ caller }, request) => {
      const id = caller.id;
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('api_tokens')
          .selectAll()
          .where('user_id', '=', id)
          .where('kind', '=', 'personal')
          .where('revoked_at', 'is', null)
          .$if(caller.ssoConnectionId !== null, (qb) =>
            qb.where('sso_connection_id', '=', caller.ssoConnectionId),
          ),
        request.query,
      );
      return { items: rows.map(tokenSummary), next_cursor: nextCursor, _actions: {} };
    },
  );

  route.delete(
    '/me/tokens/:tokenId',
    'user',
    { schema: { tags: ['me'], params: Type.Object({ tokenId: Type.String() }) } },
    async ({ caller }, request, reply) => {
      const id = caller.id;
      const result = await services.db
        .updateTable('api_tokens')
        .set({ revoked_at: services.clock.now().toISOString() })
        .where('id', '=', request.params.tokenId)
        .where('user_id', '=', id)
        .where('kind', '=', 'personal')
        .where('revoked_at', 'is', null)
        .$if(caller.ssoConnectionId !== null, (qb) =>
          qb.where('sso_connection_id', '=', caller.ssoConnectionId),
        )
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n)
        throw new ApiError('not_found', `Token "${request.params.tokenId}" was not found.`);
      return reply.status(204).send();
    },
  );
}
