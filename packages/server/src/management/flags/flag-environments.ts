import { findPrerequisiteProblem, type PrerequisiteGraphFlag } from '@vexil/engine';
import type { Selectable } from 'kysely';
import { Type, type Static } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { EnvironmentsTable, FlagEnvironmentsTable, Role } from '../../db/schema.js';
import { invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs } from '../../api/access.js';
import { actionsFor } from '../../api/actions.js';
import { Uuid } from '../../api/fields.js';
import { checkNotArchived } from './configuration.js';
import {
  readFlagEnvironment,
  configurationFields,
  setFlagEnabled,
  writeFlagConfiguration,
} from './queries.js';
import type { FlagRow } from '../../api/path-resources.js';
import {
  FlagEnvironmentResponse,
  PrerequisitesSchema,
  RolloutSchema,
  STRATEGIES,
} from './schemas.js';
import { scopedRoutes } from '../../api/scope.js';

const FlagParams = Type.Object({ org: Type.String(), project: Type.String(), flag: Type.String() });
const FlagEnvParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  flag: Type.String(),
  env: Type.String(),
});

type Prerequisite = Static<typeof PrerequisitesSchema>[number];
type RolloutWeight = Static<typeof RolloutSchema>[number];

/** The environment as a configuration's read shape needs it: its key and change-request policy. */
type ConfigurationEnvironment = Pick<
  Selectable<EnvironmentsTable>,
  'key' | 'change_requests_required' | 'change_request_emergency_off'
>;

/**
 * A flag's configuration in one environment with its `_actions`. In an environment that requires
 * change requests (spec: change requests, section 1) `update` and `createRule` are refused, naming
 * the policy, and `toggle` is allowed only as an emergency off: while the flag is on and the
 * policy allows it.
 */
export function configurationResponse(
  row: Selectable<FlagEnvironmentsTable>,
  environment: ConfigurationEnvironment,
  role: Role,
  flag: FlagRow,
) {
  const archived = flag.is_archived ? 'the flag is archived' : null;
  const reviewed =
    environment.change_requests_required === 1
      ? `environment "${environment.key}" requires change requests: propose the change in one`
      : null;
  const emergencyOff =
    row.is_enabled === 1 && environment.change_request_emergency_off === 1 ? null : reviewed;
  return {
    ...configurationFields(row, environment.key),
    revision: row.revision,
    _actions: actionsFor(role, {
      update: { role: 'Member', blockedBy: archived ?? reviewed },
      toggle: { role: 'Member', blockedBy: archived ?? emergencyOff },
      createRule: { role: 'Member', blockedBy: archived ?? reviewed },
    }),
  };
}

/**
 * Validates prerequisites with the engine's graph check (the one way Vexil does it): each names
 * another flag of the project and one of its variation keys, chains stay within the engine's
 * depth limit, and following prerequisites from this flag in this environment never comes back
 * to it.
 * @throws ApiError 400 `validation_failed` on the offending prerequisite of this flag, or on
 *   `prerequisites` for a cycle through other flags or a problem further down the chain.
 */
export async function checkPrerequisites(
  services: Services,
  projectId: string,
  environmentId: string,
  flag: FlagRow,
  prerequisites: Prerequisite[],
): Promise<void> {
  const [flags, variations] = await Promise.all([
    services.db
      .selectFrom('flags')
      .innerJoin('flag_environments', 'flag_environments.flag_id', 'flags.id')
      .select(['flags.key', 'flag_environments.prerequisites'])
      .where('flags.project_id', '=', projectId)
      .where('flag_environments.environment_id', '=', environmentId)
      .execute(),
    services.db
      .selectFrom('variations')
      .innerJoin('flags', 'flags.id', 'variations.flag_id')
      .select(['flags.key as flagKey', 'variations.key'])
      .where('flags.project_id', '=', projectId)
      .execute(),
  ]);
  const variationsByFlag = new Map<string, { key: string }[]>();
  for (const v of variations) {
    const list = variationsByFlag.get(v.flagKey) ?? [];
    list.push({ key: v.key });
    variationsByFlag.set(v.flagKey, list);
  }
  const graph: PrerequisiteGraphFlag[] = flags.map((row) => ({
    key: row.key,
    variations: variationsByFlag.get(row.key) ?? [],
    prerequisites:
      row.key === flag.key ? prerequisites : (JSON.parse(row.prerequisites) as Prerequisite[]),
  }));
  const problem = findPrerequisiteProblem(graph, flag.key);
  if (!problem) return;
  if (problem.flagKey !== flag.key) {
    // A problem further down the chain (a cycle back here, a missing flag below) is reported at
    // the prerequisite of this flag that leads to it: the path starts at this flag.
    const [start, via] = problem.path;
    const index =
      start === flag.key ? prerequisites.findIndex((p) => p.prerequisiteFlagKey === via) : -1;
    if (index === -1) throw invalidField('prerequisites', problem.message);
    throw invalidField(`prerequisites.${String(index)}.prerequisiteFlagKey`, problem.message);
  }
  const index = prerequisites.findIndex((p) => p.prerequisiteFlagKey === problem.prerequisiteKey);
  if (index === -1) throw invalidField('prerequisites', problem.message);
  const member =
    problem.kind === 'unknown-variation' ? 'expectedVariationKey' : 'prerequisiteFlagKey';
  throw invalidField(`prerequisites.${index}.${member}`, problem.message);
}

/** Per-environment flag configuration and toggle (spec: Flag environment configuration, rule 4). */
export function registerFlagEnvironmentRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/orgs/:org/projects/:project/flags/:flag/environments',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: FlagParams,
        response: { 200: Type.Array(FlagEnvironmentResponse) },
      },
    },
    async ({ flag, ...access }) => {
      const rows = await services.db
        .selectFrom('flag_environments')
        .innerJoin('environments', 'environments.id', 'flag_environments.environment_id')
        .selectAll('flag_environments')
        .select([
          'environments.key',
          'environments.change_requests_required',
          'environments.change_request_emergency_off',
        ])
        .where('flag_environments.flag_id', '=', flag.id)
        .orderBy('environments.sort_order')
        .orderBy('environments.id')
        .execute();
      return rows.map((row) => configurationResponse(row, row, access.role, flag));
    },
  );

  route.get(
    '/orgs/:org/projects/:project/flags/:flag/environments/:env',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: FlagEnvParams,
        response: { 200: FlagEnvironmentResponse },
      },
    },
    async ({ flag, environment, ...access }) => {
      const configuration = await readFlagEnvironment(services, flag.id, environment.id);
      return configurationResponse(configuration, environment, access.role, flag);
    },
  );

  route.patch(
    '/orgs/:org/projects/:project/flags/:flag/environments/:env',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: FlagEnvParams,
        body: Type.Object(
          {
            defaultVariationId: Type.Optional(Uuid),
            offVariationId: Type.Optional(Uuid),
            strategy: Type.Optional(Type.Enum(STRATEGIES)),
            rollout: Type.Optional(RolloutSchema),
            prerequisites: Type.Optional(PrerequisitesSchema),
          },
          { additionalProperties: false },
        ),
        response: { 200: FlagEnvironmentResponse },
      },
    },
    async ({ project, flag, environment, ...access }, request) => {
      const configuration = await readFlagEnvironment(services, flag.id, environment.id);
      checkNotArchived(flag);
      const body = request.body;
      const variationIds = new Set(
        (
          await services.db
            .selectFrom('variations')
            .select('id')
            .where('flag_id', '=', flag.id)
            .execute()
        ).map((v) => v.id),
      );
      for (const field of ['defaultVariationId', 'offVariationId'] as const) {
        const id = body[field];
        if (id !== undefined && !variationIds.has(id))
          throw invalidField(field, 'is not a variation of this flag');
      }
      const strategy = body.strategy ?? configuration.strategy;
      const rollout = body.rollout ?? (JSON.parse(configuration.rollout) as RolloutWeight[]);
      rollout.forEach((weight, index) => {
        if (!variationIds.has(weight.variationId))
          throw invalidField(`rollout.${index}.variationId`, 'is not a variation of this flag');
      });
      if (new Set(rollout.map((w) => w.variationId)).size !== rollout.length)
        throw invalidField('rollout', 'lists a variation twice');
      if (strategy === 'PercentageRollout') {
        const total = rollout.reduce((sum, weight) => sum + weight.weight, 0);
        if (total !== 100000)
          throw invalidField('rollout', `weights must sum to 100000 (100%); they sum to ${total}`);
      }
      if (body.prerequisites)
        await checkPrerequisites(services, project.id, environment.id, flag, body.prerequisites);
      const updated = await mutateAs(services, access, (m) =>
        writeFlagConfiguration(
          m,
          { project, flag, environment },
          {
            ...(body.defaultVariationId ? { default_variation_id: body.defaultVariationId } : {}),
            ...(body.offVariationId ? { off_variation_id: body.offVariationId } : {}),
            strategy,
            rollout: JSON.stringify(rollout),
            ...(body.prerequisites ? { prerequisites: JSON.stringify(body.prerequisites) } : {}),
          },
        ),
      );
      return configurationResponse(updated, environment, access.role, flag);
    },
  );

  route.post(
    '/orgs/:org/projects/:project/flags/:flag/environments/:env/toggle',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: FlagEnvParams,
        body: Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false }),
      },
    },
    async ({ project, flag, environment, ...access }, request, reply) => {
      const configuration = await readFlagEnvironment(services, flag.id, environment.id);
      checkNotArchived(flag);
      const enabled = request.body.enabled;
      await mutateAs(services, access, (m) =>
        setFlagEnabled(m, project, flag, environment, {
          from: configuration.is_enabled === 1,
          to: enabled,
          emergencyOff: true,
        }),
      );
      return reply.status(204).send();
    },
  );
}
