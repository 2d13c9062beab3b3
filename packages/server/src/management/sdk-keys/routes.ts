import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import { SHOWN_ONCE_WARNING, generateSecret, hashSecret } from '../../auth/secrets.js';
import type { EnvironmentsTable, Role, SdkKeysTable } from '../../db/schema.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs } from '../../api/access.js';
import { ActionsSchema, actionsFor } from '../../api/actions.js';
import { Timestamp, Uuid } from '../../api/fields.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { scopedRoutes } from '../../api/scope.js';

const EnvParams = Type.Object({ org: Type.String(), project: Type.String(), env: Type.String() });
const KeyParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  env: Type.String(),
  keyId: Type.String(),
});
const SDK_KEY_TYPES = ['ClientSide', 'ServerSide'] as const;

const SdkKeyItem = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  type: Type.Enum(SDK_KEY_TYPES),
  lastFourCharacters: Type.String(),
  environmentId: Uuid,
  createdAt: Timestamp,
  lastUsedAt: Type.Union([Timestamp, Type.Null()]),
});

function sdkKeyItem(row: Selectable<SdkKeysTable>) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    type: row.type,
    lastFourCharacters: row.last_four,
    environmentId: row.environment_id,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

function sdkKeyActions(role: Role) {
  return actionsFor(role, { revoke: { role: 'Member' } });
}

/**
 * Resolves an unrevoked SDK key of the environment by id.
 * @throws ApiError 404.
 */
async function requireSdkKey(
  services: Services,
  environment: Pick<EnvironmentsTable, 'id'>,
  keyId: string,
): Promise<Selectable<SdkKeysTable>> {
  const row = await services.db
    .selectFrom('sdk_keys')
    .selectAll()
    .where('environment_id', '=', environment.id)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw new ApiError('not_found', `SDK key "${keyId}" was not found.`);
  return row;
}

/**
 * SDK keys of an environment (spec: SDK key, endpoint rule 2; list, get and revoke: design
 * record 004). Server keys look like `vxl_srv_…`, client keys `vxl_cli_…`; only hashes are stored.
 */
export function registerSdkKeyRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys',
    'Member',
    {
      schema: {
        tags: ['sdk-keys'],
        params: EnvParams,
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
            type: Type.String(),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            id: Uuid,
            key: Type.String(),
            lastFourCharacters: Type.String(),
            type: Type.String(),
            name: Type.String(),
            createdAt: Timestamp,
            warning: Type.String(),
          }),
        },
      },
    },
    async ({ project, environment, ...access }, request, reply) => {
      const type = SDK_KEY_TYPES.find((t) => t === request.body.type);
      if (!type) throw invalidField('type', 'must be "ClientSide" or "ServerSide"');
      const key = generateSecret(type === 'ServerSide' ? 'vxl_srv' : 'vxl_cli');
      const row = await mutateAs(services, access, async (m) => {
        const created: SdkKeysTable = {
          id: uuid(),
          organization_id: access.org.id,
          project_id: project.id,
          environment_id: environment.id,
          key_hash: hashSecret(key),
          last_four: key.slice(-4),
          type,
          name: request.body.name,
          description: request.body.description ?? null,
          created_at: m.now,
          revoked_at: null,
          last_used_at: null,
        };
        await m.trx.insertInto('sdk_keys').values(created).execute();
        await m.emit({
          type: 'sdk_key.created',
          project,
          environment,
          entity: { type: 'sdk_key', id: created.id, key: null },
          description: `${type} SDK key "${created.name}" created in "${environment.key}"`,
        });
        return created;
      });
      return reply.status(201).send({
        id: row.id,
        key,
        lastFourCharacters: row.last_four,
        type: row.type,
        name: row.name,
        createdAt: row.created_at,
        warning: SHOWN_ONCE_WARNING,
      });
    },
  );

  route.get(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys',
    'Viewer',
    {
      schema: {
        tags: ['sdk-keys'],
        params: EnvParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(SdkKeyItem) },
      },
    },
    async ({ environment, ...access }, request) => {
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('sdk_keys')
          .selectAll()
          .where('environment_id', '=', environment.id)
          .where('revoked_at', 'is', null),
        request.query,
      );
      return {
        items: rows.map(sdkKeyItem),
        next_cursor: nextCursor,
        _actions: actionsFor(access.role, { create: { role: 'Member' } }),
      };
    },
  );

  route.get(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys/:keyId',
    'Viewer',
    {
      schema: {
        tags: ['sdk-keys'],
        params: KeyParams,
        response: { 200: Type.Intersect([SdkKeyItem, Type.Object({ _actions: ActionsSchema })]) },
      },
    },
    async ({ environment, ...access }, request) => {
      const row = await requireSdkKey(services, environment, request.params.keyId);
      return { ...sdkKeyItem(row), _actions: sdkKeyActions(access.role) };
    },
  );

  route.delete(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys/:keyId',
    'Member',
    { schema: { tags: ['sdk-keys'], params: KeyParams } },
    async ({ project, environment, ...access }, request, reply) => {
      const row = await requireSdkKey(services, environment, request.params.keyId);
      await mutateAs(services, access, async (m) => {
        await m.trx
          .updateTable('sdk_keys')
          .set({ revoked_at: m.now })
          .where('id', '=', row.id)
          .execute();
        await m.emit({
          type: 'sdk_key.deleted',
          project,
          environment,
          entity: { type: 'sdk_key', id: row.id, key: null },
          description: `SDK key "${row.name}" revoked`,
        });
      });
      services.onSdkKeyRevoked(row.key_hash);
      return reply.status(204).send();
    },
  );
}
