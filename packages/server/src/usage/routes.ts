import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import { ApiError, invalidField } from '../errors.js';
import { Timestamp } from '../api/fields.js';
import { scopedRoutes } from '../api/scope.js';
import type { Services } from '../services.js';
import { bucketStart, readUsageSeries, type UsageInterval } from './queries.js';

const DAY_MS = 86_400_000;
/** The range when `from` is omitted: the flag list's sparkline week. */
const DEFAULT_RANGE_MS = 7 * DAY_MS;
/** Buckets in one answer: a month of hours, about two years of days. */
export const MAX_USAGE_BUCKETS = 744;

const ProjectUsageResponse = Type.Object({
  from: Timestamp,
  to: Timestamp,
  interval: Type.Enum(['hour', 'day']),
  buckets: Type.Array(Timestamp, { description: 'Start of each bucket, oldest first (UTC).' }),
  flags: Type.Array(
    Type.Object({
      flagKey: Type.String(),
      environments: Type.Array(
        Type.Object({
          environmentKey: Type.String(),
          variations: Type.Array(
            Type.Object({
              variation: Type.String(),
              counts: Type.Array(Type.Integer(), { description: 'One count per bucket.' }),
            }),
          ),
        }),
      ),
    }),
  ),
});

/**
 * `GET /orgs/{org}/projects/{project}/usage` (Viewer): evaluations per hour or per UTC day, by
 * flag, environment and variation, in one answer (design record 038): the flag list's
 * sparklines and a flag page's chart each make one request. Series without evaluations are left
 * out; `flag` narrows the answer to one flag.
 */
export function registerUsageRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/orgs/:org/projects/:project/usage',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: Type.Object({ org: Type.String(), project: Type.String() }),
        querystring: Type.Object({
          from: Type.Optional(Timestamp),
          to: Type.Optional(Timestamp),
          interval: Type.Optional(Type.Enum(['hour', 'day'], { default: 'day' })),
          flag: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
        }),
        response: { 200: ProjectUsageResponse },
      },
    },
    async ({ project }, request) => {
      const interval: UsageInterval = request.query.interval ?? 'day';
      const toMs = request.query.to ? Date.parse(request.query.to) : services.clock.now().getTime();
      const fromMs = request.query.from ? Date.parse(request.query.from) : toMs - DEFAULT_RANGE_MS;
      if (fromMs > toMs) throw invalidField('from', 'must not be later than to');
      const step = interval === 'hour' ? DAY_MS / 24 : DAY_MS;
      if (Math.floor((toMs - bucketStart(fromMs, interval)) / step) + 1 > MAX_USAGE_BUCKETS)
        throw invalidField('from', `must leave at most ${MAX_USAGE_BUCKETS} ${interval}s until to`);
      let flagQuery = services.db
        .selectFrom('flags')
        .select(['id', 'key'])
        .where('project_id', '=', project.id);
      if (request.query.flag) flagQuery = flagQuery.where('key', '=', request.query.flag);
      const flags = await flagQuery.orderBy('key').execute();
      if (request.query.flag && flags.length === 0)
        throw new ApiError('not_found', `Flag "${request.query.flag}" was not found.`);
      const environments = await services.db
        .selectFrom('environments')
        .select(['id', 'key'])
        .where('project_id', '=', project.id)
        .orderBy('sort_order')
        .orderBy('key')
        .execute();
      const series = await readUsageSeries(
        services,
        flags,
        environments.map((environment) => environment.id),
        { fromMs, toMs, interval },
      );
      return {
        from: new Date(fromMs).toISOString(),
        to: new Date(toMs).toISOString(),
        interval,
        buckets: series.buckets.map((ms) => new Date(ms).toISOString()),
        flags: flags.flatMap((flag) => {
          const byEnvironment = series.counts.get(flag.id);
          if (!byEnvironment) return [];
          return [
            {
              flagKey: flag.key,
              environments: environments.flatMap((environment) => {
                const byVariation = byEnvironment.get(environment.id);
                if (!byVariation) return [];
                return [
                  {
                    environmentKey: environment.key,
                    variations: [...byVariation]
                      .sort(([a], [b]) => (a < b ? -1 : 1))
                      .map(([variation, counts]) => ({ variation, counts })),
                  },
                ];
              }),
            },
          ];
        }),
      };
    },
  );
}
