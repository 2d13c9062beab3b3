import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { queryKeys } from '../../api/query-keys';

/** The most requests to review the navigation counts; more reads as "99+". */
export const COUNTED = 100;

/**
 * The change requests waiting for the caller's review (`reviewable=true`: open, not theirs, not
 * yet reviewed by them), for the count in the navigation; the list's `_actions.create` also
 * says whether the caller may propose one. One query for both, shared by every page.
 */
export function useToReview(org: string, project: string) {
  return useQuery({
    queryKey: queryKeys.toReview(org, project),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/change-requests', {
          params: { path: { org, project }, query: { reviewable: true, limit: COUNTED } },
        }),
      ),
  });
}
