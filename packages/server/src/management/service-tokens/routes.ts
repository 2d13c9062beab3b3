import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ROLES } from '../../auth/roles.js';
import { SHOWN_ONCE_WARNING } from '../../auth/secrets.js';
import { issueToken, tokenSummary } from '../../auth/tokens.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import { checkProjectIds, mutateAs } from '../../api/access.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { TokenCreatedSchema, TokenSummarySchema, futureDate } from './schemas.js';
import { activeCredentialsInSql, checkGrant } from '../../api/reach.js';
import { scopedRoutes } from '../../api/scope.js';

const OrgParams = Type.Object({ org: Type.String() });

/** Service tokens of an organization (design record 004). Admin only. */
export function registerServiceTokenRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/service-tokens',
    'Admin',
    {
      schema: {
        tags: ['tokens'],
        params: OrgParams,
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            role: Type.Enum(ROLES),
            projectIds: Type.Optional(
              Type.Union([
                Type.Array(Type.String(), { minItems: 1, uniqueItems: true }),
                Type.Null(),
              ]),
            ),
            expiresAt: Type.Optional(
              Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: TokenCreatedSchema },
      },
    },
    async (scope, request, reply) => {
      const role = request.body.role;
      const projectIds = request.body.projectIds ?? null;
      checkGrant(scope, { role, projectIds });
      if (projectIds) await checkProjectIds(services, scope, projectIds);
      const now = services.clock.now();
      const expiresAt = futureDate(request.body.expiresAt ?? null, now);
      const { row, token } = await mutateAs(services, scope, async (m) => {
        const issued = await issueToken(m.trx, {
          kind: 'service',
          organizationId: scope.org.id,
          role,
          projectScope: projectIds,
          name: request.body.name,
          expiresAt,
          now: m.now,
        });
        await m.emit({
          type: 'api_token.created',
          entity: { type: 'api_token', id: issued.row.id, key: null },
          description: `Service token "${request.body.name}" (${role}) created`,
        });
        return issued;
      });
      return reply.status(201).send({ ...tokenSummary(row), token, warning: SHOWN_ONCE_WARNING });
    },
  );

  route.get(
    '/orgs/:org/service-tokens',
    'Admin',
    {
      schema: {
        tags: ['tokens'],
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(TokenSummarySchema) },
      },
    },
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('api_tokens')
          .selectAll()
          .where('kind', '=', 'service')
          .where(activeCredentialsInSql(services.dialect, scope)),
        request.query,
      );
      return { items: rows.map(tokenSummary), next_cursor: nextCursor, _actions: {} };
    },
  );

  route.delete(
    '/orgs/:org/service-tokens/:tokenId',
    'Admin',
    {
      schema: {
        tags: ['tokens'],
        params: Type.Object({ org: Type.String(), tokenId: Type.String() }),
      },
    },
    async (scope, request, reply) => {
      await mutateAs(services, scope, async (m) => {
        const row = await m.trx
          .updateTable('api_tokens')
          .set({ revoked_at: m.now })
          .where('id', '=', request.params.tokenId)
          .where('kind', '=', 'service')
          .where(activeCredentialsInSql(services.dialect, scope))
          .returning(['id', 'name'])
          .executeTakeFirst();
        if (!row)
          throw new ApiError(
            'not_found',
            `Service token "${request.params.tokenId}" was not found.`,
          );
        await m.emit({
          type: 'api_token.deleted',
          entity: { type: 'api_token', id: row.id, key: null },
          description: `Service token "${row.name}" revoked`,
        });
      });
      return reply.status(204).send();
    },
  );
}
