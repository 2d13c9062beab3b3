import { useQuery } from '@tanstack/react-query';

type Actions = Record<string, { allowed: boolean; reason: string | null }>;

/**
 * The `_actions` of one resource, read from its own GET (list items carry none: spec,
 * Capability hints). Read once per resource: a role changes far less often than the data, so
 * these are not polled each second like the rest of the page.
 * @param queryKey from `queryKeys` (`api/query-keys.ts`), e.g. `queryKeys.sdkKeyActions(…)`
 */
export function useResourceActions(
  queryKey: readonly unknown[],
  read: () => Promise<{ _actions: Actions }>,
): (action: string) => { allowed: boolean; reason: string | null } {
  const query = useQuery({
    queryKey,
    queryFn: read,
    refetchInterval: false,
    staleTime: 60_000,
  });
  return (action) => query.data?._actions[action] ?? { allowed: false, reason: null };
}
