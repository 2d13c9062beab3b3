import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { AuditEvent, Flag } from '../api/types';
import { queryKeys } from '../api/query-keys';

/**
 * The flag's own history (journey 4), for everyone who can see the flag
 * (`GET …/flags/{flag}/history`): its recorded changes, newest first, before and after.
 */
export function History({ org, project, flag }: { org: string; project: string; flag: Flag }) {
  const history = useQuery({
    queryKey: queryKeys.history(org, project, flag.id),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/history', {
          params: { path: { org, project, flag: flag.key ?? flag.id }, query: { limit: 50 } },
        }),
      ),
  });
  return (
    <section aria-labelledby="history-heading">
      <h2 id="history-heading">History</h2>
      {history.error ? (
        <p role="alert">{history.error.message}</p>
      ) : (
        <AuditEntries events={history.data?.items ?? []} />
      )}
      {history.isSuccess && history.data.items.length === 0 && <p>No change recorded yet.</p>}
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
            {event.bypassedChangeRequest && (
              // An emergency off in a protected environment: not a plain "turned off".
              <span className="badge">Emergency off: review bypassed</span>
            )}{' '}
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
                    <th scope="row">{propertyName(change.property)}</th>
                    <td>
                      <del>{valueWords(change.property, change.fromKey ?? change.from)}</del>
                    </td>
                    <td>
                      <ins>{valueWords(change.property, change.toKey ?? change.to)}</ins>
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

/**
 * A recorded property in words: `DefaultVariationId` reads "Default variation", since the API
 * gives the variation's key beside its id (design record 038).
 */
function propertyName(property: string): string {
  // A release plan's step is recorded from 0; people, and the entry's description, count from 1.
  if (property === 'CurrentStep') return 'Step';
  const words = property.replace(/Id$/, '').replace(/([a-z0-9])([A-Z])/g, '$1 $2');
  return words.charAt(0).toUpperCase() + words.slice(1).toLowerCase();
}

/** A recorded value as people read it: a release plan's step counted from 1, "—" for none. */
function valueWords(property: string, value: string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (property === 'CurrentStep' && /^\d+$/.test(value)) return String(Number(value) + 1);
  return value;
}
