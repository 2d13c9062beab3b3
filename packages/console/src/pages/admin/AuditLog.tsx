import { Button } from '@radix-ui/themes';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiProblem, api, unwrap } from '../../api/client';
import { Labelled } from '../../components/Field';
import { AuditEntries } from '../../components/History';
import { queryKeys } from '../../api/query-keys';

/** Resource kinds as the audit log's `type` prefixes name them. */
const RESOURCES = [
  ['flag.', 'Flags (and their rules, variations, configurations)'],
  ['segment.', 'Segments'],
  ['environment.', 'Environments'],
  ['project.', 'Projects'],
  ['sdk_key.', 'SDK keys'],
  ['api_token.', 'Tokens'],
  ['relay_key.', 'Relay keys'],
  ['member.', 'Members'],
  ['invitation.', 'Invitations'],
  ['organization.', 'Organization'],
] as const;

/** A `datetime-local` value (the person's local time) as an ISO instant, or nothing. */
function instant(local: string): string | undefined {
  return local ? new Date(local).toISOString() : undefined;
}

/**
 * Journey 7, the organization's audit log (Admin): filtered by actor, resource (kind and id)
 * and time, newest first, each entry with its before/after diff; "Older" pages on.
 */
export function AuditLog({ org }: { org: string }) {
  const [actorId, setActorId] = useState('');
  const [type, setType] = useState('');
  const [entityId, setEntityId] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [cursors, setCursors] = useState<string[]>([]);
  const members = useQuery({
    queryKey: queryKeys.members(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/members', { params: { path: { org }, query: { limit: 200 } } }),
      ),
  });
  const query = {
    limit: 50,
    ...(actorId ? { actorId } : {}),
    ...(type ? { type } : {}),
    ...(entityId.trim() ? { entityId: entityId.trim() } : {}),
    ...(instant(from) ? { from: instant(from) } : {}),
    ...(instant(to) ? { to: instant(to) } : {}),
    ...(cursors.length ? { cursor: cursors[cursors.length - 1] } : {}),
  };
  const log = useQuery({
    queryKey: queryKeys.auditLog(org, query),
    queryFn: () =>
      unwrap(api.GET('/api/v1/orgs/{org}/audit-log', { params: { path: { org }, query } })),
  });
  const problem = log.error instanceof ApiProblem ? log.error : null;
  const shownAtField = problem && Object.keys(problem.fields).length > 0;
  /** Any filter change starts again from the newest entry. */
  const filter = (set: (value: string) => void) => (value: string) => {
    set(value);
    setCursors([]);
  };
  return (
    <>
      <div className="page-heading">
        <h1>Audit log</h1>
      </div>
      <p className="hint">Every change in the organization, newest first.</p>
      <form
        className="filters"
        aria-label="Filter the audit log"
        onSubmit={(e) => e.preventDefault()}
      >
        <Labelled label="Actor">
          {(id) => (
            <select id={id} value={actorId} onChange={(e) => filter(setActorId)(e.target.value)}>
              <option value="">Anyone</option>
              {(members.data?.items ?? []).map((member) => (
                <option key={member.userId} value={member.userId}>
                  {member.name ? `${member.name} (${member.email})` : member.email}
                </option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled label="Resource" error={problem?.field('type')}>
          {(id, describedBy) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={type}
              onChange={(e) => filter(setType)(e.target.value)}
            >
              <option value="">Any resource</option>
              {RESOURCES.map(([prefix, label]) => (
                <option key={prefix} value={prefix}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled label="Resource id" error={problem?.field('entityId')}>
          {(id, describedBy) => (
            <input
              id={id}
              aria-describedby={describedBy}
              aria-invalid={Boolean(problem?.field('entityId'))}
              value={entityId}
              placeholder="uuid"
              onChange={(e) => filter(setEntityId)(e.target.value)}
            />
          )}
        </Labelled>
        <Labelled label="From" error={problem?.field('from')}>
          {(id, describedBy) => (
            <input
              id={id}
              type="datetime-local"
              aria-describedby={describedBy}
              value={from}
              onChange={(e) => filter(setFrom)(e.target.value)}
            />
          )}
        </Labelled>
        <Labelled label="To" error={problem?.field('to')}>
          {(id, describedBy) => (
            <input
              id={id}
              type="datetime-local"
              aria-describedby={describedBy}
              aria-invalid={Boolean(problem?.field('to'))}
              value={to}
              onChange={(e) => filter(setTo)(e.target.value)}
            />
          )}
        </Labelled>
      </form>
      {log.error && !shownAtField && <p role="alert">{log.error.message}</p>}
      {log.isSuccess && log.data.items.length === 0 && <p>No entry matches.</p>}
      <AuditEntries events={log.data?.items ?? []} />
      <div className="pager">
        <Button
          type="button"
          variant="soft"
          color="gray"
          disabled={cursors.length === 0}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer
        </Button>
        <Button
          type="button"
          variant="soft"
          color="gray"
          disabled={!log.data?.next_cursor}
          onClick={() => log.data?.next_cursor && setCursors([...cursors, log.data.next_cursor])}
        >
          Older
        </Button>
      </div>
    </>
  );
}
