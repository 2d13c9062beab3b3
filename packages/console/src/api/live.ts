import { useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { queryKeys } from './query-keys';
import { readToken } from './token';

/** While the event stream is down, what is on screen is refetched this often (ms). */
export const FALLBACK_POLL_MS = 30_000;
/** Longest wait before reconnecting a dropped stream (ms); it starts at one second and doubles. */
const MAX_RECONNECT_MS = 30_000;

/** Whether the live event stream is open: the queries' fallback poll reads it. */
export const liveStream = { connected: false };

/** A `change` event of `GET /api/v1/orgs/{org}/events/stream` (design record 026). */
interface LiveChange {
  type: string;
  project: { id: string; key: string | null } | null;
  entity: { type: string; id: string; key: string | null };
}

/**
 * Marks stale the queries a change concerns: every query of its project (query keys are
 * `[kind, org, project, …]`, `api/query-keys.ts`), flag histories, and for an organization-wide change (no project)
 * everything of the organization.
 */
function invalidate(queryClient: QueryClient, org: string, change: LiveChange | null): void {
  const projectKey = change?.project?.key;
  const [orgsKind] = queryKeys.orgs();
  const [historyKind] = queryKeys.history(org, '', '');
  void queryClient.invalidateQueries(
    {
      predicate: ({ queryKey }) =>
        queryKey[0] === orgsKind ||
        (queryKey[1] === org &&
          (change === null ||
            change.project === null ||
            projectKey === null ||
            queryKey[2] === projectKey ||
            queryKey[0] === historyKind)),
    },
    // A request under way is not restarted: on opening a page the stream is ready while the
    // page's first requests are still out, and restarting them delayed its first paint.
    { cancelRefetch: false },
  );
}

/** Reads Server-Sent Events frames from a fetch body, calling `onEvent` per complete frame. */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: string, data: string) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = text;
        else if (field === 'data') data.push(text);
      }
      if (data.length > 0) onEvent(event, data.join('\n'));
    }
  }
}

/**
 * Live updates (design record 026): holds the organization's management event stream open and
 * marks stale the queries each change concerns, so what is on screen is refetched at once.
 * Read with fetch rather than EventSource, which cannot send the `Authorization` header (a
 * session cookie goes along either way). A dropped stream is reopened with growing pauses; while
 * it is down the queries fall back to polling every {@link FALLBACK_POLL_MS}, and on reconnect
 * everything of the organization is refetched, for the changes missed in between.
 */
export function useLiveUpdates(org: string): void {
  const queryClient = useQueryClient();
  useEffect(() => {
    const abort = new AbortController();
    let retryMs = 1000;
    let timer: ReturnType<typeof setTimeout> | undefined;

    async function connect(): Promise<void> {
      try {
        const token = readToken();
        const response = await fetch(`/api/v1/orgs/${encodeURIComponent(org)}/events/stream`, {
          headers: {
            accept: 'text/event-stream',
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          credentials: 'same-origin',
          signal: abort.signal,
        });
        if (!response.ok || !response.body) throw new Error(`stream: ${String(response.status)}`);
        await readEvents(response.body, (event, data) => {
          if (event === 'ready') {
            liveStream.connected = true;
            retryMs = 1000;
            invalidate(queryClient, org, null);
          } else if (event === 'change') {
            invalidate(queryClient, org, JSON.parse(data) as LiveChange);
          }
        });
      } catch {
        // Dropped, refused or aborted: the fallback poll covers the gap.
      }
      liveStream.connected = false;
      if (abort.signal.aborted) return;
      // Catch up now, and re-arm the queries' fallback poll.
      invalidate(queryClient, org, null);
      timer = setTimeout(() => void connect(), retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RECONNECT_MS);
    }

    void connect();
    return () => {
      abort.abort();
      clearTimeout(timer);
      liveStream.connected = false;
    };
  }, [org, queryClient]);
}
