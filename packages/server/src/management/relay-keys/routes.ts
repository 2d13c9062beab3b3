import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import { SHOWN_ONCE_WARNING, generateSecret, hashSecret } from '../../auth/secrets.js';
import type { RelayKeysTable } from '../../db/schema.js';
import type { App } from '../../http/app-instance.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import { checkProjectIds, mutateAs } from '../../api/access.js';
import { Timestamp, Uuid } from '../../api/fields.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { activeCredentialsInSql, checkGrant } from '../../api/reach.js';
import { scopedRoutes } from '../../api/scope.js';

const OrgParams = Type.Object({ org: Type.String() });

const RelayKeyItem = Type.Object({
  id: Uuid,
  name: Type.String(),
  lastFourCharacters: Type.String(),
  /** The projects the key covers; null: every project of the organization. */
  projectIds: Type.Union([Type.Array(Type.String()), Type.Null()]),
  /** The environment keys it covers within them; null: every environment. */
  environmentKeys: Type.Union([Type.Array(Type.String()), Type.Null()]),
  createdAt: Timestamp,
});

function relayKeyItem(row: Selectable<RelayKeysTable>) {
  return {
    id: row.id,
    name: row.name,
    lastFourCharacters: row.last_four,
    projectIds: row.project_scope === null ? null : (JSON.parse(row.project_scope) as string[]),
    environmentKeys:
      row.environment_keys === null ? null : (JSON.parse(row.environment_keys) as string[]),
    createdAt: row.created_at,
  };
}

/**
 * Relay keys of an organization (relay contract, "Starting one"; design record 045). Admin only.
 * A key covers the organization, or `projectIds`, narrowed to `environmentKeys` when given; like
 * any grant it lies within its creator's allowlist (`checkGrant`), and an allowlisted Admin sees
 * and revokes only keys within theirs. The `vxr_…` secret is shown once; only its hash is kept.
 */
export function registerRelayKeyRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/relay-keys',
    'Admin',
    {
      schema: {
        tags: ['relay-keys'],
        params: OrgParams,
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            projectIds: Type.Optional(
              Type.Union([
                Type.Array(Type.String(), { minItems: 1, maxItems: 1000, uniqueItems: true }),
                Type.Null(),
              ]),
            ),
            environmentKeys: Type.Optional(
              Type.Union([
                Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
                  minItems: 1,
                  maxItems: 100,
                  uniqueItems: true,
                }),
                Type.Null(),
              ]),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Intersect([
            RelayKeyItem,
            Type.Object({ key: Type.String(), warning: Type.String() }),
          ]),
        },
      },
    },
    async (scope, request, reply) => {
      const projectIds = request.body.projectIds ?? null;
      const environmentKeys = request.body.environmentKeys ?? null;
      checkGrant(scope, { projectIds });
      if (projectIds) await checkProjectIds(services, scope, projectIds);
      const key = generateSecret('vxr');
      const row = await mutateAs(services, scope, async (m) => {
        const created: RelayKeysTable = {
          id: uuid(),
          organization_id: scope.org.id,
          name: request.body.name,
          key_hash: hashSecret(key),
          last_four: key.slice(-4),
          project_scope: projectIds && JSON.stringify(projectIds),
          environment_keys: environmentKeys && JSON.stringify(environmentKeys),
          created_at: m.now,
          revoked_at: null,
        };
        await m.trx.insertInto('relay_keys').values(created).execute();
        await m.emit({
          type: 'relay_key.created',
          entity: { type: 'relay_key', id: created.id, key: null },
          description: `Relay key "${created.name}" created`,
        });
        return created;
      });
      return reply.status(201).send({ ...relayKeyItem(row), key, warning: SHOWN_ONCE_WARNING });
    },
  );

  route.get(
    '/orgs/:org/relay-keys',
    'Admin',
    {
      schema: {
        tags: ['relay-keys'],
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: pagedSchema(RelayKeyItem) },
      },
    },
    async (scope, request) => {
      const { rows, nextCursor } = await paginate(
        services.db
          .selectFrom('relay_keys')
          .selectAll()
          .where(activeCredentialsInSql(services.dialect, scope)),
        request.query,
      );
      return { items: rows.map(relayKeyItem), next_cursor: nextCursor, _actions: {} };
    },
  );

  route.delete(
    '/orgs/:org/relay-keys/:relayKeyId',
    'Admin',
    {
      schema: {
        tags: ['relay-keys'],
        params: Type.Object({ org: Type.String(), relayKeyId: Type.String() }),
      },
    },
    async (scope, request, reply) => {
      await mutateAs(services, scope, async (m) => {
        const row = await m.trx
          .updateTable('relay_keys')
          .set({ revoked_at: m.now })
          .where('id', '=', request.params.relayKeyId)
          .where(activeCredentialsInSql(services.dialect, scope))
          .returning(['id', 'name'])
          .executeTakeFirst();
        if (!row)
          throw new ApiError(
            'not_found',
            `Relay key "${request.params.relayKeyId}" was not found.`,
          );
        // Open feeds of this key, on every node, close once this commits (relay-feed/feed-signals.ts).
        await m.emit({
          type: 'relay_key.revoked',
          entity: { type: 'relay_key', id: row.id, key: null },
          description: `Relay key "${row.name}" revoked`,
        });
      });
      return reply.status(204).send();
    },
  );
}
