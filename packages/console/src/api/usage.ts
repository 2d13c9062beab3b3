import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { queryKeys } from './query-keys';

const SPAN_MS = { hour: 3_600_000, day: 86_400_000 } as const;

/**
 * Evaluations of a project's flags per environment, variation and `interval`, over the last
 * `buckets` intervals (the current one included), from one `GET …/usage` (design record 038):
 * the flag list's sparklines ask for every flag by day, a flag page's chart for its flag by hour.
 * Refreshed each minute, since counts are written in batches. `enabled: false` holds the request
 * back, e.g. until what the page shows first has arrived.
 */
export function useProjectUsage(
  org: string,
  project: string,
  options: { interval: 'hour' | 'day'; buckets: number; flag?: string; enabled?: boolean },
) {
  const { interval, buckets, flag, enabled = true } = options;
  return useQuery({
    // Kind, org and project first, as live updates expect (api/live.ts).
    queryKey: queryKeys.usage(org, project, { interval, buckets, flag: flag ?? null }),
    enabled,
    refetchInterval: 60_000,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/usage', {
          params: {
            path: { org, project },
            query: {
              interval,
              from: new Date(Date.now() - (buckets - 1) * SPAN_MS[interval]).toISOString(),
              ...(flag !== undefined ? { flag } : {}),
            },
          },
        }),
      ),
  });
}
