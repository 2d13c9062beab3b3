import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import { queryKeys } from '../api/query-keys';
import { useFormMutation } from '../components/useFormMutation';

type Staleness = 'dead' | 'stale';
/** The candidates by code references (`references`): all, none left, or still read. */
type InCode = '' | 'none' | 'some';

/** Where a candidate stands in code: "safe to archive", its count, or unknown before a scan. */
function inCode(count: number | null): string {
  if (count === null) return 'Unknown: no repository scanned';
  if (count === 0) return 'None left: safe to archive';
  return `${count} ${count === 1 ? 'place' : 'places'} on default branches`;
}

/**
 * Journey 6, "clean up": the flags that look safe to remove from code, with the API's reason and
 * where code still reads them (flag-cleanup contract, section 4: those with no reference left on
 * default branches are "safe to archive", and the list can be narrowed to them), and archiving
 * several at once. The recently-evaluated and still-referenced guards still apply to each: refused
 * flags are listed with the API's message, stay selected, and "Archive anyway" forces them.
 */
export function RemovalCandidates({ org, project }: { org: string; project: string }) {
  const [staleness, setStaleness] = useState<Staleness>('dead');
  const [references, setReferences] = useState<InCode>('');
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const queryClient = useQueryClient();
  const candidates = useQuery({
    queryKey: queryKeys.removalCandidates(org, project, staleness, references),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/removal-candidates', {
          params: {
            path: { org, project },
            query: { staleness, limit: 200, ...(references ? { references } : {}) },
          },
        }),
      ),
  });
  const archive = useFormMutation({
    mutationFn: async ({ keys, force }: { keys: string[]; force: boolean }) => {
      const outcomes = await Promise.allSettled(
        keys.map((flag) =>
          unwrap(
            api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/archive', {
              params: { path: { org, project, flag }, query: force ? { force } : {} },
            }),
          ),
        ),
      );
      return outcomes.flatMap((outcome, i) =>
        outcome.status === 'rejected'
          ? [{ key: keys[i] ?? '', message: (outcome.reason as Error).message }]
          : [],
      );
    },
    onSuccess: (refused) => {
      setSelected(new Set(refused.map((problem) => problem.key)));
      void queryClient.invalidateQueries({ queryKey: queryKeys.removalCandidates(org, project) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.flags(org, project) });
    },
  });
  const items = candidates.data?.items ?? [];
  const canArchive = candidates.data?._actions['archive']?.allowed ?? false;

  function choose(key: string, on: boolean) {
    const next = new Set(selected);
    if (on) next.add(key);
    else next.delete(key);
    setSelected(next);
  }

  return (
    <>
      <div className="page-heading">
        <h1>Removal candidates</h1>
        {canArchive && (
          <button
            type="button"
            disabled={selected.size === 0 || archive.isPending}
            onClick={() => archive.mutate({ keys: [...selected], force: false })}
          >
            Archive selected ({selected.size})
          </button>
        )}
      </div>
      <p className="hint">
        Flags that serve one variation everywhere and have not changed for a while: remove them from
        code, then archive them.
      </p>
      <label className="check">
        <input
          type="checkbox"
          checked={staleness === 'stale'}
          onChange={(event) => {
            setStaleness(event.target.checked ? 'stale' : 'dead');
            setSelected(new Set());
          }}
        />
        Include stale flags (not only dead ones)
      </label>
      <label>
        References in code
        <select
          value={references}
          onChange={(event) => {
            setReferences(event.target.value as InCode);
            setSelected(new Set());
          }}
        >
          <option value="">Any</option>
          <option value="none">None left (safe to archive)</option>
          <option value="some">Still read by code</option>
        </select>
      </label>
      {archive.data && archive.data.length > 0 && (
        <div role="alert">
          <p className="field-error">Not archived:</p>
          <ul className="field-error">
            {archive.data.map((problem) => (
              <li key={problem.key}>{problem.message}</li>
            ))}
          </ul>
          <button
            type="button"
            disabled={archive.isPending}
            onClick={() =>
              archive.mutate({ keys: archive.data.map((problem) => problem.key), force: true })
            }
          >
            Archive anyway ({archive.data.length})
          </button>
        </div>
      )}
      <table>
        <thead>
          <tr>
            <th scope="col">
              <span className="visually-hidden">Selected</span>
            </th>
            <th scope="col">Flag</th>
            <th scope="col">Status</th>
            <th scope="col">Why</th>
            <th scope="col">In code</th>
          </tr>
        </thead>
        <tbody>
          {items.map((candidate) => (
            <tr key={candidate.key}>
              <td>
                <input
                  type="checkbox"
                  aria-label={`Select ${candidate.key}`}
                  checked={selected.has(candidate.key)}
                  disabled={!canArchive}
                  onChange={(event) => choose(candidate.key, event.target.checked)}
                />
              </td>
              <td>
                <Link href={`/orgs/${org}/projects/${project}/flags/${candidate.key}`}>
                  {candidate.key}
                </Link>
              </td>
              <td>{candidate.status}</td>
              <td>{candidate.reason}</td>
              <td>{inCode(candidate.codeReferences)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {candidates.isSuccess && items.length === 0 && <p>No flag looks ready for removal.</p>}
    </>
  );
}
