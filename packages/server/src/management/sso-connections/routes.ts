import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import { clientSecretBinding, failureReason } from '../../auth/oidc.js';
import type { SsoConnectionsTable } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs, type OrgAccess } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes } from '../../api/scope.js';

const MEMBER_ROLES = ['Viewer', 'Member', 'Admin'] as const;
const DOMAIN = '^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63}$';

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  issuer: Type.String({
    format: 'uri',
    pattern: '^https://',
    maxLength: 2000,
    // What a person reads instead of the pattern (ajv-errors; http/validation-messages.ts).
    errorMessage: { pattern: "must be an https:// address (the identity provider's issuer URL)" },
  }),
  clientId: Type.String({ minLength: 1, maxLength: 500 }),
  clientSecret: Type.String({ minLength: 1, maxLength: 2000 }),
  allowedDomains: Type.Array(Type.String({ pattern: DOMAIN }), { uniqueItems: true, maxItems: 50 }),
  defaultRole: Type.Enum(MEMBER_ROLES),
  autoCreateUsers: Type.Boolean(),
  enabled: Type.Boolean(),
};

const ConnectionSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  issuer: Type.String(),
  clientId: Type.String(),
  allowedDomains: Type.Array(Type.String()),
  defaultRole: Type.String(),
  autoCreateUsers: Type.Boolean(),
  enabled: Type.Boolean(),
  callbackUrl: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  _actions: ActionsSchema,
});

const ConnectionParams = Type.Object({ org: Type.String(), id: Type.String() });

/** What a connection's events record as changed: everything but the client secret. */
function connectionSettings(row: SsoConnectionsTable) {
  return {
    name: row.name,
    issuer: row.issuer,
    clientId: row.client_id,
    allowedDomains: JSON.parse(row.allowed_domains) as string[],
    defaultRole: row.default_role,
    autoCreateUsers: row.auto_create_users === 1,
    enabled: row.enabled === 1,
  };
}

function connectionBody(services: Services, scope: OrgAccess, row: SsoConnectionsTable) {
  return {
    id: row.id,
    ...connectionSettings(row),
    callbackUrl: `${services.config.publicUrl}/auth/sso/callback`,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    _actions: actionsFor(scope.role, {
      update: { role: 'Owner' },
      delete: {
        role: 'Owner',
        blockedBy:
          scope.org.sso_required === 1 && scope.org.sso_connection_id === row.id
            ? 'the organization requires sign-in through this connection'
            : null,
      },
    }),
  };
}

async function checkIssuer(services: Services, issuer: string): Promise<void> {
  try {
    await services.identityProviders.check(issuer);
  } catch (error) {
    throw invalidField('issuer', `OpenID Connect discovery failed: ${failureReason(error)}`);
  }
}

/** The entity of a connection's events (`sso_connection.*`, design record 032). */
function connectionEntity(row: SsoConnectionsTable) {
  return { type: 'sso_connection', id: row.id, key: null };
}

async function findConnection(services: Services, scope: OrgAccess, id: string) {
  const row = await services.db
    .selectFrom('sso_connections')
    .selectAll()
    .where('organization_id', '=', scope.org.id)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row)
    throw new ApiError('not_found', `SSO connection "${id}" was not found.`, {
      nextActions: [{ method: 'GET', path: `/api/v1/orgs/${scope.org.slug}/sso-connections` }],
    });
  return row;
}

/**
 * An organization's OpenID Connect connections (people-and-sign-in.md, Sign-in). Owner only. The
 * client secret is write-only and sealed at rest. The first connection becomes the org's
 * `ssoConnectionId`, the one `/auth/sso/{org}` signs in through.
 */
export function registerSsoConnectionRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/sso-connections',
    'Owner',
    {
      wholeOrganization: true,
      schema: {
        tags: ['sso'],
        params: Type.Object({ org: Type.String() }),
        body: Type.Object(
          {
            name: fields.name,
            issuer: fields.issuer,
            clientId: fields.clientId,
            clientSecret: fields.clientSecret,
            allowedDomains: Type.Optional(fields.allowedDomains),
            defaultRole: Type.Optional(fields.defaultRole),
            autoCreateUsers: Type.Optional(fields.autoCreateUsers),
            enabled: Type.Optional(fields.enabled),
          },
          { additionalProperties: false },
        ),
        response: { 201: ConnectionSchema },
      },
    },
    async (scope, request, reply) => {
      await checkIssuer(services, request.body.issuer);
      const now = services.clock.now().toISOString();
      const id = uuid();
      const row: SsoConnectionsTable = {
        id,
        organization_id: scope.org.id,
        name: request.body.name,
        issuer: request.body.issuer,
        client_id: request.body.clientId,
        client_secret: services.signingSecrets.seal(
          clientSecretBinding(id),
          request.body.clientSecret,
        ),
        allowed_domains: JSON.stringify(request.body.allowedDomains ?? []),
        default_role: request.body.defaultRole ?? 'Viewer',
        auto_create_users: request.body.autoCreateUsers ? 1 : 0,
        enabled: request.body.enabled === false ? 0 : 1,
        created_at: now,
        updated_at: now,
      };
      await mutateAs(services, scope, async (m) => {
        await m.trx.insertInto('sso_connections').values(row).execute();
        await m.trx
          .updateTable('organizations')
          .set({ sso_connection_id: id })
          .where('id', '=', scope.org.id)
          .where('sso_connection_id', 'is', null)
          .execute();
        await m.emit({
          type: 'sso_connection.created',
          entity: connectionEntity(row),
          description: `SSO connection "${row.name}" (${row.issuer}) created`,
        });
      });
      return reply.status(201).send(connectionBody(services, scope, row));
    },
  );

  route.get(
    '/orgs/:org/sso-connections',
    'Owner',
    {
      schema: {
        tags: ['sso'],
        params: Type.Object({ org: Type.String() }),
        querystring: PageQuery,
        response: { 200: pagedSchema(ConnectionSchema) },
      },
    },
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('sso_connections')
          .selectAll()
          .where('organization_id', '=', scope.org.id),
        request.query,
      );
      return {
        items: rows.map((row) => connectionBody(services, scope, row)),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, { create: { role: 'Owner' } }),
      };
    },
  );

  route.get(
    '/orgs/:org/sso-connections/:id',
    'Owner',
    { schema: { tags: ['sso'], params: ConnectionParams, response: { 200: ConnectionSchema } } },
    async (scope, request) =>
      connectionBody(services, scope, await findConnection(services, scope, request.params.id)),
  );

  route.patch(
    '/orgs/:org/sso-connections/:id',
    'Owner',
    {
      wholeOrganization: true,
      schema: {
        tags: ['sso'],
        params: ConnectionParams,
        body: Type.Object(
          {
            name: Type.Optional(fields.name),
            issuer: Type.Optional(fields.issuer),
            clientId: Type.Optional(fields.clientId),
            clientSecret: Type.Optional(fields.clientSecret),
            allowedDomains: Type.Optional(fields.allowedDomains),
            defaultRole: Type.Optional(fields.defaultRole),
            autoCreateUsers: Type.Optional(fields.autoCreateUsers),
            enabled: Type.Optional(fields.enabled),
          },
          { additionalProperties: false },
        ),
        response: { 200: ConnectionSchema },
      },
    },
    async (scope, request) => {
      const before = await findConnection(services, scope, request.params.id);
      const body = request.body;
      if (body.issuer !== undefined && body.issuer !== before.issuer)
        await checkIssuer(services, body.issuer);
      const after: SsoConnectionsTable = {
        ...before,
        name: body.name ?? before.name,
        issuer: body.issuer ?? before.issuer,
        client_id: body.clientId ?? before.client_id,
        client_secret:
          body.clientSecret !== undefined
            ? services.signingSecrets.seal(clientSecretBinding(before.id), body.clientSecret)
            : before.client_secret,
        allowed_domains:
          body.allowedDomains !== undefined
            ? JSON.stringify(body.allowedDomains)
            : before.allowed_domains,
        default_role: body.defaultRole ?? before.default_role,
        auto_create_users:
          body.autoCreateUsers !== undefined
            ? body.autoCreateUsers
              ? 1
              : 0
            : before.auto_create_users,
        enabled: body.enabled !== undefined ? (body.enabled ? 1 : 0) : before.enabled,
        updated_at: services.clock.now().toISOString(),
      };
      await mutateAs(services, scope, async (m) => {
        await m.trx.updateTable('sso_connections').set(after).where('id', '=', before.id).execute();
        const changes = diffProperties(connectionSettings(before), connectionSettings(after));
        // The secret itself never appears in an event: only that it was replaced.
        if (body.clientSecret !== undefined)
          changes.push({ property: 'ClientSecret', from: null, to: '(replaced)' });
        await m.emit({
          type: 'sso_connection.updated',
          entity: connectionEntity(after),
          changes,
          description: `SSO connection "${after.name}" updated`,
        });
      });
      return connectionBody(services, scope, after);
    },
  );

  route.delete(
    '/orgs/:org/sso-connections/:id',
    'Owner',
    { wholeOrganization: true, schema: { tags: ['sso'], params: ConnectionParams } },
    async (scope, request, reply) => {
      const row = await findConnection(services, scope, request.params.id);
      if (scope.org.sso_required === 1 && scope.org.sso_connection_id === row.id)
        throw new ApiError(
          'conflict',
          'The organization requires sign-in through this connection: switch ssoRequired off or choose another connection first.',
        );
      await mutateAs(services, scope, async (m) => {
        await m.trx
          .updateTable('organizations')
          .set({ sso_connection_id: null })
          .where('id', '=', scope.org.id)
          .where('sso_connection_id', '=', row.id)
          .execute();
        // Its sessions and links go with it (foreign keys); its tokens are revoked.
        await m.trx
          .updateTable('api_tokens')
          .set({ revoked_at: m.now })
          .where('sso_connection_id', '=', row.id)
          .where('revoked_at', 'is', null)
          .execute();
        await m.trx.deleteFrom('sso_connections').where('id', '=', row.id).execute();
        await m.emit({
          type: 'sso_connection.deleted',
          entity: connectionEntity(row),
          description: `SSO connection "${row.name}" deleted`,
        });
      });
      return reply.status(204).send();
    },
  );
}
