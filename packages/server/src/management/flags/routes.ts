import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { Mutation } from '../../db/mutate.js';
import { diffProperties } from '../../events/types.js';
import { invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs, type OrgAccess } from '../../api/access.js';
import { actionsFor } from '../../api/actions.js';
import {
  DescriptionSchema,
  KeySchema,
  NameSchema,
  Timestamp,
  Uuid,
  WebLinkSchema,
} from '../../api/fields.js';
import { deleteUnlessReferenced } from '../../api/deletion.js';
import { PageQuery, paginate, pagedSchema } from '../../api/pagination.js';
import { checkVariationValue, defaultOffVariation } from './configuration.js';
import {
  expiryReference,
  flagDetail,
  flagListItem,
  flagMetadata,
  insertFlag,
  storedMetadata,
  updateFlag,
} from './queries.js';
import { FlagListItem, FlagMetadataSchema, FlagResponse, FlagTypeSchema } from './schemas.js';
import { scopedRoutes } from '../../api/scope.js';
import { keyOrNameContains, SearchText } from '../../api/search.js';
import { countsOnDefaultBranches } from '../code-refs/queries.js';
import { applyFlagListFilters, FlagListFilters, flagListOrder } from './list-filters.js';

const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });
const FlagParams = Type.Object({ org: Type.String(), project: Type.String(), flag: Type.String() });
const TagsSchema = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: 50,
  uniqueItems: true,
});
const UrlSchema = Type.Union([WebLinkSchema, Type.Null()]);

const VariationInput = Type.Object(
  {
    key: KeySchema,
    name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
    value: Type.String({ maxLength: 65536 }),
    description: Type.Optional(DescriptionSchema),
  },
  { additionalProperties: false },
);

const BOOLEAN_VARIATIONS = [
  { key: 'true', name: 'On', value: 'true' },
  { key: 'false', name: 'Off', value: 'false' },
];

/** Checks that `ownerId` is a member of the organization. */
async function checkOwner(
  services: Services,
  access: OrgAccess,
  ownerId: string | null | undefined,
): Promise<void> {
  if (!ownerId) return;
  const member = await services.db
    .selectFrom('memberships')
    .select('user_id')
    .where('organization_id', '=', access.org.id)
    .where('user_id', '=', ownerId)
    .executeTakeFirst();
  if (!member) throw invalidField('ownerId', 'is not a member of this organization');
}

/** `flag (environment)` for each configuration of the project that has the flag as a prerequisite. */
async function prerequisiteUsers(m: Mutation, projectId: string, flagKey: string) {
  const dependents = await m.trx
    .selectFrom('flag_environments')
    .innerJoin('flags', 'flags.id', 'flag_environments.flag_id')
    .innerJoin('environments', 'environments.id', 'flag_environments.environment_id')
    .select(['flags.key as flagKey', 'environments.key as environmentKey', 'prerequisites'])
    .where('flags.project_id', '=', projectId)
    .where('flag_environments.prerequisites', 'like', `%"prerequisiteFlagKey":"${flagKey}"%`)
    .execute();
  return dependents
    .filter((row) =>
      (JSON.parse(row.prerequisites) as { prerequisiteFlagKey: string }[]).some(
        (p) => p.prerequisiteFlagKey === flagKey,
      ),
    )
    .map((row) => `${row.flagKey} (${row.environmentKey})`);
}

/** Flags: create, list, get (spec: Flag detail), update, delete (design record 001). */
export function registerFlagRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/projects/:project/flags',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: ProjectParams,
        body: Type.Object(
          {
            key: KeySchema,
            name: Type.Optional(Type.Union([NameSchema, Type.Null()])),
            description: Type.Optional(DescriptionSchema),
            type: Type.Optional(FlagTypeSchema),
            variations: Type.Optional(Type.Array(VariationInput, { minItems: 1, maxItems: 100 })),
            offVariationKey: Type.Optional(
              Type.String({
                minLength: 1,
                description:
                  "The variation served while the flag is off, in every environment. Default: a Boolean flag's `false` variation, otherwise the first variation.",
              }),
            ),
            tags: Type.Optional(TagsSchema),
            metadata: Type.Optional(FlagMetadataSchema),
            clientSideVisible: Type.Optional(Type.Boolean()),
            isPermanent: Type.Optional(Type.Boolean()),
            ownerId: Type.Optional(Type.Union([Uuid, Type.Null()])),
            expiresAtUtc: Type.Optional(Type.Union([Timestamp, Type.Null()])),
            removalPrUrl: Type.Optional(UrlSchema),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Intersect([
            FlagResponse,
            Type.Object({
              offVariationKey: Type.String({
                description: 'The variation every environment serves while the flag is off.',
              }),
            }),
          ]),
        },
      },
    },
    async ({ project, ...access }, request, reply) => {
      const body = request.body;
      const type = body.type ?? 'Boolean';
      const variations = body.variations ?? (type === 'Boolean' ? BOOLEAN_VARIATIONS : undefined);
      if (!variations) throw invalidField('variations', `are required for a ${type} flag`);
      const keys = new Set<string>();
      variations.forEach((variation, index) => {
        if (keys.has(variation.key))
          throw invalidField(`variations.${index}.key`, `duplicate key "${variation.key}"`);
        keys.add(variation.key);
        checkVariationValue(type, variation.value, `variations.${index}.value`);
      });
      const offVariationKey =
        body.offVariationKey ??
        defaultOffVariation<{ key: string; value: string }>(type, variations)?.key;
      if (offVariationKey === undefined || !keys.has(offVariationKey))
        throw invalidField(
          'offVariationKey',
          `must be the key of one of the variations (${[...keys].join(', ')})`,
        );
      await checkOwner(services, access, body.ownerId);
      const metadata = storedMetadata(body.metadata ?? {});
      const flag = await mutateAs(services, access, async (m) => {
        const created = await insertFlag(
          m,
          project,
          {
            key: body.key,
            name: body.name ?? null,
            description: body.description ?? null,
            type,
            is_archived: 0,
            client_side_visible: body.clientSideVisible ? 1 : 0,
            tags: JSON.stringify(body.tags ?? []),
            metadata,
            expires_at: body.expiresAtUtc ? new Date(body.expiresAtUtc).toISOString() : null,
            owner_user_id: body.ownerId ?? null,
            removal_pr_url: body.removalPrUrl ?? null,
            is_permanent: body.isPermanent ? 1 : 0,
          },
          variations.map((variation) => ({
            key: variation.key,
            name: variation.name ?? null,
            value: variation.value,
            description: ('description' in variation ? variation.description : null) ?? null,
          })),
          offVariationKey,
        );
        return created.row;
      });
      return reply
        .status(201)
        .send({ ...(await flagDetail(services, access.role, flag)), offVariationKey });
    },
  );

  route.get(
    '/orgs/:org/projects/:project/flags',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: ProjectParams,
        querystring: Type.Intersect([
          PageQuery,
          Type.Object({
            tag: Type.Optional(Type.String({ maxLength: 64 })),
            archived: Type.Optional(Type.Boolean()),
            q: Type.Optional(SearchText),
            expired: Type.Optional(Type.Boolean()),
          }),
          FlagListFilters,
        ]),
        response: { 200: pagedSchema(FlagListItem) },
      },
    },
    async (scope, request) => {
      const { project, ...access } = scope;
      const { tag, archived, q, expired } = request.query;
      const expiryAt = expiryReference(services);
      let query = services.db
        .selectFrom('flags')
        .selectAll()
        .where('project_id', '=', project.id)
        .where('is_archived', '=', archived ? 1 : 0);
      if (tag) query = query.where('tags', 'like', `%${JSON.stringify(tag).replace(/[%_]/g, '')}%`);
      if (expired !== undefined) {
        const now = (expiryAt ?? services.clock.now()).toISOString();
        query =
          expired && expiryAt
            ? query.where('expires_at', '<=', now)
            : query.where((eb) =>
                eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]),
              );
      }
      if (q) query = query.where(keyOrNameContains(q));
      query = await applyFlagListFilters(services, scope, request.query, query);
      const { rows, nextCursor } = await paginate(
        query,
        request.query,
        flagListOrder(request.query.sort),
      );
      const states = await enabledByEnvironment(
        services,
        rows.map((row) => row.id),
      );
      const references = await countsOnDefaultBranches(
        services,
        project.id,
        rows.map((row) => row.key),
      );
      const items = rows
        .map((row) => ({
          ...flagListItem(row, expiryAt),
          environments: states.get(row.id) ?? [],
          codeReferences: references && (references.get(row.key) ?? 0),
        }))
        // The LIKE above narrows; this makes the tag match exact.
        .filter((item) => !tag || item.tags.includes(tag));
      return {
        items,
        next_cursor: nextCursor,
        _actions: actionsFor(access.role, {
          create: { role: 'Member' },
          toggle: { role: 'Member' },
        }),
      };
    },
  );

  route.get(
    '/orgs/:org/projects/:project/flags/:flag',
    'Viewer',
    { schema: { tags: ['flags'], params: FlagParams, response: { 200: FlagResponse } } },
    async ({ flag, ...access }) => {
      return flagDetail(services, access.role, flag);
    },
  );

  route.patch(
    '/orgs/:org/projects/:project/flags/:flag',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: FlagParams,
        body: Type.Object(
          {
            name: Type.Optional(Type.Union([NameSchema, Type.Null()])),
            description: Type.Optional(DescriptionSchema),
            tags: Type.Optional(TagsSchema),
            metadata: Type.Optional(FlagMetadataSchema),
            clientSideVisible: Type.Optional(Type.Boolean()),
            isPermanent: Type.Optional(Type.Boolean()),
            ownerId: Type.Optional(Type.Union([Uuid, Type.Null()])),
            expiresAtUtc: Type.Optional(Type.Union([Timestamp, Type.Null()])),
            removalPrUrl: Type.Optional(UrlSchema),
          },
          { additionalProperties: false },
        ),
        response: { 200: FlagResponse },
      },
    },
    async ({ project, flag, ...access }, request) => {
      const body = request.body;
      await checkOwner(services, access, body.ownerId);
      const metadata = body.metadata && storedMetadata(body.metadata);
      const updated = await mutateAs(services, access, async (m) => {
        const row = await updateFlag(m, flag.id, {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.tags !== undefined ? { tags: JSON.stringify(body.tags) } : {}),
          ...(metadata !== undefined ? { metadata } : {}),
          ...(body.clientSideVisible !== undefined
            ? { client_side_visible: body.clientSideVisible ? 1 : 0 }
            : {}),
          ...(body.isPermanent !== undefined ? { is_permanent: body.isPermanent ? 1 : 0 } : {}),
          ...(body.ownerId !== undefined ? { owner_user_id: body.ownerId } : {}),
          ...(body.expiresAtUtc !== undefined
            ? { expires_at: body.expiresAtUtc ? new Date(body.expiresAtUtc).toISOString() : null }
            : {}),
          ...(body.removalPrUrl !== undefined ? { removal_pr_url: body.removalPrUrl } : {}),
        });
        const describe = (r: typeof row) => ({
          // Expiry state is derived from expiresAtUtc, which is diffed itself.
          ...flagListItem(r, null),
          description: r.description,
          ownerId: r.owner_user_id,
          removalPrUrl: r.removal_pr_url,
          metadata: flagMetadata(r),
        });
        const { updatedAt: _a, ...before } = describe(flag);
        const { updatedAt: _b, ...after } = describe(row);
        await m.emit({
          type: 'flag.updated',
          project,
          entity: { type: 'flag', id: flag.id, key: flag.key },
          changes: diffProperties(before, after),
          description: `Flag "${flag.key}" updated`,
        });
        // Of these fields, SDKs receive client visibility and metadata.
        if (body.clientSideVisible !== undefined || row.metadata !== flag.metadata)
          await m.touchFlag(flag, undefined, 'describes');
        return row;
      });
      return flagDetail(services, access.role, updated);
    },
  );

  route.delete(
    '/orgs/:org/projects/:project/flags/:flag',
    'Admin',
    { schema: { tags: ['flags'], params: FlagParams } },
    async ({ project, flag, ...access }, _request, reply) => {
      await mutateAs(services, access, (m) =>
        deleteUnlessReferenced(
          m,
          { kind: 'flag', id: flag.id, key: flag.key, project },
          async () => {
            const users = await prerequisiteUsers(m, project.id, flag.key);
            return users.length > 0
              ? `Flag "${flag.key}" is a prerequisite of ${users.join(', ')}. Remove those prerequisites first.`
              : null;
          },
        ),
      );
      return reply.status(204).send();
    },
  );
}

/** Whether each of the flags is on, per environment in the project's order: one query. */
async function enabledByEnvironment(services: Services, flagIds: string[]) {
  const result = new Map<string, { environmentKey: string; isEnabled: boolean }[]>();
  if (flagIds.length === 0) return result;
  const rows = await services.db
    .selectFrom('flag_environments')
    .innerJoin('environments', 'environments.id', 'flag_environments.environment_id')
    .select(['flag_environments.flag_id', 'environments.key', 'flag_environments.is_enabled'])
    .where('flag_environments.flag_id', 'in', flagIds)
    .orderBy('environments.sort_order')
    .orderBy('environments.key')
    .execute();
  for (const row of rows) {
    let list = result.get(row.flag_id);
    if (!list) result.set(row.flag_id, (list = []));
    list.push({ environmentKey: row.key, isEnabled: row.is_enabled === 1 });
  }
  return result;
}
