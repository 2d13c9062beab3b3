import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { queryKeys } from '../../api/query-keys';

/** Where the project a person was in is remembered, so organization pages keep it in the frame. */
export function lastProjectKey(org: string): string {
  return `vexil.project.${org}`;
}

/** The organization with its `_actions` (who may manage members, settings…), shared by pages. */
export function useOrganization(org: string) {
  return useQuery({
    queryKey: queryKeys.org(org),
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}', { params: { path: { org } } })),
  });
}

/** The organization's projects, for allowlists (ids) and names. */
export function useProjects(org: string) {
  return useQuery({
    queryKey: queryKeys.projects(org),
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}/projects', { params: { path: { org } } })),
  });
}

/** A date-time from the API as the reader's local date and time, or "never". */
export function when(timestamp: string | null | undefined): string {
  return timestamp ? new Date(timestamp).toLocaleString() : 'never';
}
