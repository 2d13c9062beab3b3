import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { Role } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs, notFound } from '../../api/access.js';
import { actionsFor } from '../../api/actions.js';
import { DescriptionSchema, KeySchema } from '../../api/fields.js';
import { checkVariationValue } from './configuration.js';
import { deleteVariation, insertVariation, updateVariation, variationItem } from './queries.js';
import type { FlagRow } from '../../api/path-resources.js';
import { VariationResponse } from './schemas.js';
import { scopedRoutes } from '../../api/scope.js';

const FlagParams = Type.Object({ org: Type.String(), project: Type.String(), flag: Type.String() });
const VariationParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  variation: Type.String(),
});
const NullableName = Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()]));

function variationActions(role: Role) {
  return actionsFor(role, { update: { role: 'Member' }, delete: { role: 'Member' } });
}

/**
 * Resolves `{variation}` (key or id) among the flag's variations, which it also returns.
 * @throws ApiError 404 with near keys in `did_you_mean`.
 */
async function requireVariation(services: Services, flag: FlagRow, ref: string) {
  const variations = await services.db
    .selectFrom('variations')
    .selectAll()
    .where('flag_id', '=', flag.id)
    .execute();
  const variation = variations.find((v) => v.id === ref || v.key === ref);
  if (!variation)
    throw notFound(
      'Variation',
      ref,
      variations.map((v) => v.key),
    );
  return { variation, variations };
}

/** Variations of a flag (spec: Variation; update and delete: design record 001). */
export function registerVariationRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.post(
    '/orgs/:org/projects/:project/flags/:flag/variations',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: FlagParams,
        body: Type.Object(
          {
            key: Type.Union([KeySchema, Type.Null()]),
            name: NullableName,
            value: Type.Union([Type.String({ maxLength: 65536 }), Type.Null()]),
            description: Type.Optional(DescriptionSchema),
          },
          { additionalProperties: false },
        ),
        response: { 201: VariationResponse },
      },
    },
    async ({ project, flag, ...access }, request, reply) => {
      const { key, name, value, description } = request.body;
      if (key === null) throw invalidField('key', 'is required');
      if (value === null) throw invalidField('value', 'is required');
      checkVariationValue(flag.type, value, 'value');
      const id = await mutateAs(services, access, async (m) => {
        const last = await m.trx
          .selectFrom('variations')
          .select((eb) => eb.fn.max('sort_order').as('max'))
          .where('flag_id', '=', flag.id)
          .executeTakeFirst();
        const row = await insertVariation(m, project, flag, {
          key,
          name: name ?? null,
          value,
          description: description ?? null,
          sortOrder: (last?.max ?? -1) + 1,
        });
        return row.id;
      });
      // Re-read after persisting (spec: Endpoint rule 3).
      const stored = await services.db
        .selectFrom('variations')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return reply
        .status(201)
        .send({ ...variationItem(stored), _actions: variationActions(access.role) });
    },
  );

  route.patch(
    '/orgs/:org/projects/:project/flags/:flag/variations/:variation',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: VariationParams,
        body: Type.Object(
          {
            name: NullableName,
            value: Type.Optional(Type.String({ maxLength: 65536 })),
            description: Type.Optional(DescriptionSchema),
          },
          { additionalProperties: false },
        ),
        response: { 200: VariationResponse },
      },
    },
    async ({ project, flag, ...access }, request) => {
      const { variation } = await requireVariation(services, flag, request.params.variation);
      const body = request.body;
      if (body.value !== undefined) checkVariationValue(flag.type, body.value, 'value');
      const values = {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.value !== undefined ? { value: body.value } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
      };
      // Nothing to set (`{}`) is a no-op: the variation as it is, no event (design record 035).
      if (Object.keys(values).length === 0)
        return { ...variationItem(variation), _actions: variationActions(access.role) };
      const changes = diffProperties(
        variationItem(variation),
        variationItem({ ...variation, ...values }),
      );
      const row = await mutateAs(services, access, (m) =>
        updateVariation(m, project, flag, variation, values, changes),
      );
      return { ...variationItem(row), _actions: variationActions(access.role) };
    },
  );

  route.delete(
    '/orgs/:org/projects/:project/flags/:flag/variations/:variation',
    'Member',
    { schema: { tags: ['flags'], params: VariationParams } },
    async ({ project, flag, ...access }, request, reply) => {
      const { variation, variations } = await requireVariation(
        services,
        flag,
        request.params.variation,
      );
      if (variations.length === 1)
        throw new ApiError('bad_request', 'A flag needs at least one variation.');
      const inUse = await services.db
        .selectFrom('flag_environments')
        .innerJoin('environments', 'environments.id', 'flag_environments.environment_id')
        .select('environments.key')
        .where('flag_environments.flag_id', '=', flag.id)
        .where((eb) =>
          eb.or([
            eb('flag_environments.default_variation_id', '=', variation.id),
            eb('flag_environments.off_variation_id', '=', variation.id),
            eb('flag_environments.rollout', 'like', `%${variation.id}%`),
          ]),
        )
        .execute();
      const usedByRules = await services.db
        .selectFrom('rules')
        .select('id')
        .where('variation_id', '=', variation.id)
        .execute();
      if (inUse.length > 0 || usedByRules.length > 0) {
        throw new ApiError(
          'conflict',
          `Variation "${variation.key}" is still served` +
            (inUse.length > 0 ? ` in environments ${inUse.map((row) => row.key).join(', ')}` : '') +
            (usedByRules.length > 0
              ? ` by rules ${usedByRules.map((row) => row.id).join(', ')}`
              : '') +
            '. Serve another variation first.',
        );
      }
      await mutateAs(services, access, (m) => deleteVariation(m, project, flag, variation));
      return reply.status(204).send();
    },
  );
}
