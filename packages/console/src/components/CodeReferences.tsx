import { useQuery } from '@tanstack/react-query';
import { Button } from '@radix-ui/themes';
import { useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import { queryKeys } from '../api/query-keys';
import type { CodeRepository, Flag, FlagCodeReferences, RemovalCandidate } from '../api/types';
import { timeAgo } from './LastUsed';

type Reference =
  FlagCodeReferences['repositories'][number]['branches'][number]['references'][number];
type Branch = CodeRepository['branches'][number];

/** Removal candidates read per page while looking for one flag among them (sorted by key). */
const CANDIDATE_PAGE = 200;

/** How each kind of reference (flag-cleanup contract, section 1) reads to a person. */
const KIND_WORDS: Record<string, string> = {
  call: 'call argument',
  jsx: 'JSX attribute',
  property: 'object property',
  alias: 'use of a constant',
  literal: 'constant',
};

/**
 * The `vexil cleanup` command that writes the diff removing `flag` from the code (flag-cleanup
 * contract, section 3), as the MCP tool `flag_cleanup_plan` gives it.
 */
export function cleanupCommand(
  flag: string,
  treatment: 'on' | 'off',
  place: { org: string; project: string },
): string {
  return `npx vexil cleanup --flag ${flag} --treatment ${treatment} --url ${window.location.origin} --org ${place.org} --project ${place.project} > cleanup.diff`;
}

/**
 * The flag page's **Code** tab (flag-cleanup contract, section 4; design record 054): where code
 * reads the flag, per scanned repository and branch (the default branch first), each place with
 * its context lines and, when the repository has a link template, a link to the line; the commit
 * and how long ago each branch was scanned. "Never scanned" and "no reference" are said in words,
 * since an unknown count is not zero. For a removal candidate, the cleanup command to copy.
 */
export function CodeReferences(props: { org: string; project: string; flag: Flag }) {
  const { org, project, flag } = props;
  const key = flag.key ?? flag.id;
  const references = useQuery({
    queryKey: queryKeys.flagCodeReferences(org, project, key),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/code-references', {
          params: { path: { org, project, flag: key } },
        }),
      ),
  });
  const repositories = useQuery({
    queryKey: queryKeys.codeRepositories(org, project),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/code-references/repositories', {
          params: { path: { org, project } },
        }),
      ),
  });
  const candidate = useQuery({
    queryKey: queryKeys.removalCandidate(org, project, key),
    queryFn: () => findCandidate(org, project, key),
  });

  const error = references.error ?? repositories.error ?? candidate.error;
  if (error) return <p role="alert">{error.message}</p>;
  if (!references.data || !repositories.data) return <p role="status">Loading…</p>;
  const scanned = repositories.data.items;
  const found = new Map(
    references.data.repositories.map((repository) => [
      repository.name,
      new Map(repository.branches.map((branch) => [branch.name, branch.references])),
    ]),
  );
  const onDefaultBranches = scanned.reduce(
    (sum, repository) =>
      sum + (found.get(repository.name)?.get(repository.defaultBranch ?? '')?.length ?? 0),
    0,
  );
  const anywhere = references.data.repositories.some(
    (repository) => repository.branches.length > 0,
  );

  return (
    <section aria-labelledby="code-heading">
      <h2 id="code-heading">Code</h2>
      {candidate.data && (
        <Cleanup
          org={org}
          project={project}
          flag={key}
          candidate={candidate.data}
          safe={scanned.length > 0 && onDefaultBranches === 0}
        />
      )}
      {scanned.length === 0 ? (
        <p>
          No repository of this project has been scanned yet, so where code reads <code>{key}</code>{' '}
          is unknown. Scan one with <code>npx vexil code-refs scan --upload</code> (see the flag
          cleanup guide).
        </p>
      ) : (
        <p>
          {anywhere
            ? `${onDefaultBranches} ${onDefaultBranches === 1 ? 'place' : 'places'} on default branches read ${key}.`
            : `No scanned branch reads ${key}.`}
          {flag.isArchived &&
            onDefaultBranches > 0 &&
            ' The flag is archived: those reads get their fallback value.'}
        </p>
      )}
      {scanned.map((repository) => (
        <section key={repository.name} aria-labelledby={`repository-${repository.name}`}>
          <h3 id={`repository-${repository.name}`}>{repository.name}</h3>
          {[...repository.branches]
            .sort((a, b) =>
              a.name === repository.defaultBranch
                ? -1
                : b.name === repository.defaultBranch
                  ? 1
                  : a.name.localeCompare(b.name),
            )
            .map((branch) => (
              <BranchReferences
                key={branch.name}
                repository={repository.name}
                branch={branch}
                isDefault={branch.name === repository.defaultBranch}
                flag={key}
                references={found.get(repository.name)?.get(branch.name) ?? []}
              />
            ))}
        </section>
      ))}
    </section>
  );
}

/** The flag's entry among the removal candidates (stale or dead), page by page; null if none. */
async function findCandidate(
  org: string,
  project: string,
  flag: string,
): Promise<RemovalCandidate | null> {
  let cursor: string | undefined;
  do {
    const page = await unwrap(
      api.GET('/api/v1/orgs/{org}/projects/{project}/flags/removal-candidates', {
        params: {
          path: { org, project },
          query: { staleness: 'stale', limit: CANDIDATE_PAGE, ...(cursor ? { cursor } : {}) },
        },
      }),
    );
    const found = page.items.find((item) => item.key === flag);
    if (found) return found;
    if (page.items.some((item) => item.key > flag)) return null;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return null;
}

/** One branch: its commit, when it was scanned, and the flag's places on it. */
function BranchReferences(props: {
  repository: string;
  branch: Branch;
  isDefault: boolean;
  flag: string;
  references: Reference[];
}) {
  const { repository, branch, references } = props;
  const scannedAt = new Date(branch.scannedAt);
  return (
    <section aria-label={`${repository}, branch ${branch.name}`} className="code-branch">
      <h4>
        {branch.name} {props.isDefault && <span className="badge">default branch</span>}
      </h4>
      <p className="hint">
        {branch.commit ? (
          <>
            Commit <code title={branch.commit}>{branch.commit.slice(0, 12)}</code>, scanned{' '}
          </>
        ) : (
          'Scanned '
        )}
        <time dateTime={branch.scannedAt} title={scannedAt.toLocaleString()}>
          {timeAgo(scannedAt.getTime(), Date.now())}
        </time>
        {branch.unparsed.length > 0 &&
          `; searched as text, not parsed: ${branch.unparsed.join(', ')}`}
      </p>
      {references.length === 0 ? (
        <p>
          No reference to <code>{props.flag}</code> on this branch.
        </p>
      ) : (
        <ul className="code-references">
          {references.map((reference) => (
            <ReferencePlace
              key={`${reference.path}:${reference.line}:${reference.column}`}
              reference={reference}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

/** One place: `path:line` (a link through the repository's template), its kind and context. */
function ReferencePlace({ reference }: { reference: Reference }) {
  const place = `${reference.path}:${reference.line}`;
  const { before, line, after } = reference.context;
  const first = reference.line - before.length;
  const numbered = [...before, line, ...after].map((text, index) => ({
    number: first + index,
    text,
  }));
  return (
    <li>
      <p>
        {reference.url ? (
          <a href={reference.url} target="_blank" rel="noreferrer">
            {place}
          </a>
        ) : (
          <code>{place}</code>
        )}{' '}
        <span className="hint">
          column {reference.column}, {KIND_WORDS[reference.kind] ?? reference.kind}
        </span>
      </p>
      <pre aria-label={`Lines around ${place}`} className="code-context">
        {numbered.map(({ number, text }) =>
          number === reference.line ? (
            <mark key={number}>{`${String(number).padStart(5)}  ${text}\n`}</mark>
          ) : (
            <span key={number}>{`${String(number).padStart(5)}  ${text}\n`}</span>
          ),
        )}
      </pre>
    </li>
  );
}

/** A removal candidate's way out of the code: the cleanup command to copy, or "safe to archive". */
function Cleanup(props: {
  org: string;
  project: string;
  flag: string;
  candidate: RemovalCandidate;
  safe: boolean;
}) {
  const { candidate } = props;
  const id = useId();
  const [copied, setCopied] = useState<'no' | 'yes' | 'refused'>('no');
  const command = cleanupCommand(props.flag, candidate.treatment ? 'on' : 'off', props);
  return (
    <div className="cleanup">
      <p>
        <strong>Removal candidate ({candidate.status.toLowerCase()}):</strong> {candidate.reason}.{' '}
        {props.safe
          ? 'No default branch reads it any more: it is safe to archive (Settings → Archive flag).'
          : `To remove it from the code, keeping what it serves when ${candidate.treatment ? 'on' : 'off'}, run this in a checkout of each repository (with VEXIL_TOKEN set), review the diff and apply it with git apply:`}
      </p>
      {!props.safe && (
        <div className="row">
          <label htmlFor={id} className="visually-hidden">
            Cleanup command
          </label>
          <input
            id={id}
            readOnly
            className="command-line"
            value={command}
            onFocus={(event) => event.target.select()}
          />
          <Button
            type="button"
            variant="soft"
            onClick={() => {
              navigator.clipboard.writeText(command).then(
                () => setCopied('yes'),
                () => setCopied('refused'),
              );
            }}
          >
            {copied === 'yes' ? 'Copied' : 'Copy command'}
          </Button>
        </div>
      )}
      <p role="status" className="hint">
        {copied === 'yes'
          ? 'Copied to the clipboard.'
          : copied === 'refused'
            ? 'The browser refused the clipboard: select the command and copy it by hand.'
            : ''}
      </p>
    </div>
  );
}
