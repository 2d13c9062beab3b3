import type { FastifyRequest } from 'fastify';
import type { Selectable } from 'kysely';
import { Type, type Static } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import { SHOWN_ONCE_WARNING, generateSecret, hashSecret } from '../../auth/secrets.js';
import type { Role, SdkKeysTable } from '../../db/schema.js';
import { ApiError, invalidField } from '../../http/errors.js';
import type { Services } from '../../services.js';
import { mutateAs, requireOrg, requireProject } from '../access.js';
import { ActionsSchema, actionsFor } from '../actions.js';
import { requireEnvironment } from '../environments/routes.js';
import { Timestamp, Uuid } from '../fields.js';
import { PageQuery, paginate, pagedSchema } from '../pagination.js';

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
 * SDK keys of an environment (spec: SDK key, endpoint rule 2; list, get and revoke: design
 * record 004). Server keys look like `vxl_srv_…`, client keys `vxl_cli_…`; only hashes are stored.
 */
export function registerSdkKeyRoutes(app: App, services: Services): void {
  app.post(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys',
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
    async (request, reply) => {
      const access = await requireOrg(services, request, request.params.org, 'Member');
      const project = await requireProject(services, access, request.params.project);
      const environment = await requireEnvironment(services, access, project, request.params.env);
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
          projectId: project.id,
          environmentId: environment.id,
          entity: { type: 'sdk_key', id: created.id },
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

  app.get(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys',
    {
      schema: {
        tags: ['sdk-keys'],
        params: EnvParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(SdkKeyItem) },
      },
    },
    async (request) => {
      const access = await requireOrg(services, request, request.params.org);
      const project = await requireProject(services, access, request.params.project);
      const environment = await requireEnvironment(services, access, project, request.params.env);
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

  async function requireSdkKey(
    request: FastifyRequest,
    params: Static<typeof KeyParams>,
    minimum: Role,
  ) {
    const access = await requireOrg(services, request, params.org, minimum);
    const project = await requireProject(services, access, params.project);
    const environment = await requireEnvironment(services, access, project, params.env);
    const row = await services.db
      .selectFrom('sdk_keys')
      .selectAll()
      .where('environment_id', '=', environment.id)
      .where('id', '=', params.keyId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) throw new ApiError('not_found', `SDK key "${params.keyId}" was not found.`);
    return { access, project, environment, row };
  }

  app.get(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys/:keyId',
    {
      schema: {
        tags: ['sdk-keys'],
        params: KeyParams,
        response: { 200: Type.Intersect([SdkKeyItem, Type.Object({ _actions: ActionsSchema })]) },
      },
    },
    async (request) => {
      const { access, row } = await requireSdkKey(request, request.params, 'Viewer');
      return { ...sdkKeyItem(row), _actions: sdkKeyActions(access.role) };
    },
  );

  app.delete(
    '/orgs/:org/projects/:project/environments/:env/sdk-keys/:keyId',
    { schema: { tags: ['sdk-keys'], params: KeyParams } },
    async (request, reply) => {
      const { access, project, environment, row } = await requireSdkKey(
        request,
        request.params,
        'Member',
      );
      await mutateAs(services, access, async (m) => {
        await m.trx
          .updateTable('sdk_keys')
          .set({ revoked_at: m.now })
          .where('id', '=', row.id)
          .execute();
        await m.emit({
          type: 'sdk_key.deleted',
          projectId: project.id,
          environmentId: environment.id,
          entity: { type: 'sdk_key', id: row.id },
          description: `SDK key "${row.name}" revoked`,
        });
      });
      services.onSdkKeyRevoked(row.key_hash);
      return reply.status(204).send();
    },
  );
}
