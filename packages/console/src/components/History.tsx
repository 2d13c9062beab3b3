import { useQuery } from '@tanstack/react-query';
import { ApiProblem, api, unwrap } from '../api/client';
import type { AuditEvent } from '../api/types';

/**
 * The flag's own history (journey 4): its audit-log entries, newest first, each with the changed
 * properties before and after. The audit log is Admin-only; other roles see why it is hidden.
 */
export function History({ org, flagId }: { org: string; flagId: string }) {
  const history = useQuery({
    queryKey: ['history', org, flagId],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/audit-log', {
          params: { path: { org }, query: { entityId: flagId, limit: 50 } },
        }),
      ),
  });
  return (
    <section aria-labelledby="history-heading">
      <h2 id="history-heading">History</h2>
      {history.error instanceof ApiProblem && history.error.status === 403 ? (
        <p className="hint">The history comes from the audit log, which needs the Admin role.</p>
      ) : history.error ? (
        <p role="alert">{history.error.message}</p>
      ) : (
        <AuditEntries events={history.data?.items ?? []} />
      )}
    </section>
  );
}

/**
 * Audit-log entries, newest first as given: what happened, who and when, and each changed
 * property before and after. Shared by a flag's History and the organization's audit log.
 */
export function AuditEntries(props: { events: AuditEvent[] }) {
  return (
    <ol className="history">
      {props.events.map((event) => (
        <li key={event.id}>
          <p>
            <strong>{event.description}</strong>{' '}
            <span className="hint">
              {event.actor.name ?? event.actor.email ?? 'a service token'},{' '}
              <time dateTime={event.occurredAt}>{new Date(event.occurredAt).toLocaleString()}</time>
            </span>
          </p>
          {event.changes.length > 0 && (
            <table className="diff">
              <thead>
                <tr>
                  <th scope="col">Property</th>
                  <th scope="col">Before</th>
                  <th scope="col">After</th>
                </tr>
              </thead>
              <tbody>
                {event.changes.map((change) => (
                  <tr key={change.property}>
                    <th scope="row">{change.property}</th>
                    <td>
                      <del>{change.from ?? '—'}</del>
                    </td>
                    <td>
                      <ins>{change.to ?? '—'}</ins>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </li>
      ))}
    </ol>
  );
}
