import { Type } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { App } from '../../http/app-instance.js';
import type { StoredConditionGroup } from '../../db/schema.js';
import { diffProperties } from '../../events/types.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { mutateAs } from '../../api/access.js';
import { requireEnvironment } from '../../api/path-resources.js';
import { scopedRoutes } from '../../api/scope.js';
import { insertRule } from '../targeting/rule-queries.js';
import { checkPrerequisites, configurationResponse } from './flag-environments.js';
import { updateFlagConfiguration } from './queries.js';
import { FlagEnvironmentResponse } from './schemas.js';

/**
 * `POST …/flags/{flag}/environments/{env}/copy` (Member; console.md journey 5, design record
 * 023): makes `target`'s configuration of the flag the same as `env`'s: on/off, default and off
 * variations, strategy, rollout, prerequisites and the targeting rules (copied with new ids, in
 * order). One transaction with one `flag.environment_config.updated` event for the target (its
 * changes include `rules`), and `flag.toggled` too when on/off changes, so that subscribers to
 * toggles hear of it. Answers the target's new configuration.
 *
 * @throws ApiError 400 `validation_failed` on `target` when it is the source; on `prerequisites`
 *   when the source's prerequisites would form a cycle in the target; 400 `bad_request` for an
 *   archived flag; 404 for an unknown environment.
 */
export function registerCopyConfigurationRoutes(app: App, services: Services): void {
  scopedRoutes(app, services).post(
    '/orgs/:org/projects/:project/flags/:flag/environments/:env/copy',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: Type.Object({
          org: Type.String(),
          project: Type.String(),
          flag: Type.String(),
          env: Type.String(),
        }),
        body: Type.Object(
          { target: Type.String({ minLength: 1, maxLength: 100 }) },
          { additionalProperties: false },
        ),
        response: { 200: FlagEnvironmentResponse },
      },
    },
    async ({ project, flag, environment: source, ...access }, request) => {
      const target = await requireEnvironment(services, access, project, request.body.target);
      if (source.id === target.id) throw invalidField('target', 'is the environment copied from');
      if (flag.is_archived)
        throw new ApiError('bad_request', `Flag "${flag.key}" is archived; restore it first.`);
      const configuration = (environmentId: string) =>
        services.db
          .selectFrom('flag_environments')
          .selectAll()
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', environmentId)
          .executeTakeFirstOrThrow();
      const rules = (environmentId: string) =>
        services.db
          .selectFrom('rules')
          .selectAll()
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', environmentId)
          .orderBy('priority')
          .execute();
      const [from, before, sourceRules, targetRules] = await Promise.all([
        configuration(source.id),
        configuration(target.id),
        rules(source.id),
        rules(target.id),
      ]);
      await checkPrerequisites(
        services,
        project.id,
        target.id,
        flag,
        JSON.parse(from.prerequisites) as Parameters<typeof checkPrerequisites>[4],
      );

      const updated = await mutateAs(services, access, async (m) => {
        const row = await updateFlagConfiguration(m, flag.id, target.id, {
          is_enabled: from.is_enabled,
          default_variation_id: from.default_variation_id,
          off_variation_id: from.off_variation_id,
          strategy: from.strategy,
          rollout: from.rollout,
          prerequisites: from.prerequisites,
        });
        await m.trx
          .deleteFrom('rules')
          .where('flag_id', '=', flag.id)
          .where('environment_id', '=', target.id)
          .execute();
        for (const rule of sourceRules) {
          const groups = (JSON.parse(rule.condition_groups) as StoredConditionGroup[]).map(
            (group) => ({
              ...group,
              id: uuid(),
              conditions: group.conditions.map((condition) => ({ ...condition, id: uuid() })),
            }),
          );
          // The copy keeps every column of the source rule but its identity, place and times.
          await insertRule(
            m,
            { flagId: flag.id, environmentId: target.id, priority: rule.priority },
            { ...rule, condition_groups: JSON.stringify(groups) },
          );
        }
        await m.touchFlag(flag, [target.id]);
        const event = {
          project,
          environment: target,
          entity: { type: 'flag', id: flag.id, key: flag.key },
          child: { type: 'flag_environment_config', id: target.id },
        };
        if (before.is_enabled !== row.is_enabled)
          await m.emit({
            ...event,
            type: 'flag.toggled',
            changes: [
              {
                property: 'IsEnabled',
                from: String(before.is_enabled === 1),
                to: String(row.is_enabled === 1),
              },
            ],
            description: `Flag "${flag.key}" turned ${row.is_enabled ? 'on' : 'off'} in "${target.key}" (copied from "${source.key}")`,
          });
        const { _actions: _before, ...was } = configurationResponse(
          before,
          target,
          access.role,
          flag,
        );
        const { _actions: _after, ...now } = configurationResponse(row, target, access.role, flag);
        await m.emit({
          ...event,
          type: 'flag.environment_config.updated',
          changes: [
            ...diffProperties(was, now),
            ...(targetRules.length + sourceRules.length > 0
              ? [
                  {
                    property: 'rules',
                    from: `${targetRules.length} rules`,
                    to: `${sourceRules.length} rules copied from "${source.key}"`,
                  },
                ]
              : []),
          ],
          description: `Configuration of flag "${flag.key}" in "${target.key}" copied from "${source.key}"`,
        });
        return row;
      });
      return configurationResponse(updated, target, access.role, flag);
    },
  );
}
