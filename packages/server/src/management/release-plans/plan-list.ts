import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { Services } from '../../services.js';
import { scopedRoutes } from '../../api/scope.js';

const FlagParams = Type.Object({ org: Type.String(), project: Type.String(), flag: Type.String() });

/**
 * `GET …/flags/{flag}/release-plans`: in which environments the flag has a release plan, and in
 * which state (change-requests.md §4), so that a client asks for a plan only where there is one
 * instead of meeting a 404 for each environment without (issue 43). An empty list when there is
 * none; the plan itself is `GET …/environments/{env}/release-plan`.
 */
export function registerReleasePlanListRoute(app: App, services: Services): void {
  scopedRoutes(app, services).get(
    '/orgs/:org/projects/:project/flags/:flag/release-plans',
    'Viewer',
    {
      schema: {
        tags: ['release-plans'],
        params: FlagParams,
        response: {
          200: Type.Array(
            Type.Object({
              environmentKey: Type.String(),
              state: Type.Enum(['active', 'paused', 'completed', 'rolledBack']),
            }),
          ),
        },
      },
    },
    async ({ flag }) =>
      services.db
        .selectFrom('release_plans')
        .innerJoin('environments', 'environments.id', 'release_plans.environment_id')
        .select(['environments.key as environmentKey', 'release_plans.state'])
        .where('release_plans.flag_id', '=', flag.id)
        .orderBy('environments.sort_order')
        .orderBy('environments.id')
        .execute(),
  );
}
