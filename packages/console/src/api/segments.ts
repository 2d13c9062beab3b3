import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { queryKeys } from './query-keys';

/**
 * A project's segments (up to 200, the console's page): the Segments page lists them, and the
 * targeting editor, the compare view and a change request's diff name the segments their rules
 * refer to. One query, so every page shares its cache entry and its invalidation.
 */
export function useSegments(org: string, project: string) {
  return useQuery({
    queryKey: queryKeys.segments(org, project),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/segments', {
          params: { path: { org, project }, query: { limit: 200 } },
        }),
      ),
  });
}
