import { v7 as uuid } from 'uuid';
import type { Mutation } from '../../db/mutate.js';
import type { CodeReferencesTable } from '../../db/schema.js';
import type { KeyedRef } from '../../events/types.js';
import type { Services } from '../../services.js';
import type { ReferenceContext, UploadBody } from './schemas.js';

/** Rows per insert: 9 parameters each stays far below both databases' parameter limits. */
const INSERT_BATCH = 500;

/** A branch's upload as stored: the path decides the repository and branch names. */
export interface BranchUpload {
  repository: string;
  branch: string;
  body: UploadBody;
}

/** How many references each flag key has on one branch. */
async function countsByKey(m: Mutation, branchId: string): Promise<Map<string, number>> {
  const rows = await m.trx
    .selectFrom('code_references')
    .select(['flag_key'])
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('branch_id', '=', branchId)
    .groupBy('flag_key')
    .execute();
  return new Map(rows.map((row) => [row.flag_key, row.count]));
}

/**
 * Replaces one branch's references with an upload, in the caller's transaction (contract,
 * section 2): the repository is created on its first upload with this branch as its default
 * branch; a key the project has no flag for is kept with `unknown_key` 1. Emits
 * `code_references.updated` with one change per flag key whose count changed (none: no event).
 * @returns the number of references stored
 */
export async function replaceBranchReferences(
  m: Mutation,
  project: KeyedRef,
  upload: BranchUpload,
): Promise<number> {
  const { repository, branch, body } = upload;
  let repo = await m.trx
    .selectFrom('code_reference_repositories')
    .select(['id'])
    .where('project_id', '=', project.id)
    .where('name', '=', repository)
    .executeTakeFirst();
  if (!repo) {
    repo = { id: uuid() };
    await m.trx
      .insertInto('code_reference_repositories')
      .values({
        id: repo.id,
        project_id: project.id,
        name: repository,
        default_branch: branch,
        source_url_template: null,
        created_at: m.now,
        updated_at: m.now,
      })
      .execute();
  }
  const existing = await m.trx
    .selectFrom('code_reference_branches')
    .select(['id'])
    .where('repository_id', '=', repo.id)
    .where('name', '=', branch)
    .executeTakeFirst();
  const before = existing ? await countsByKey(m, existing.id) : new Map<string, number>();
  const branchRow = {
    commit_sha: body.commit ?? null,
    scanned_at: body.scannedAt,
    reference_count: body.references.length,
    unparsed: JSON.stringify(body.unparsed ?? []),
  };
  const branchId = existing?.id ?? uuid();
  if (existing) {
    await m.trx.deleteFrom('code_references').where('branch_id', '=', branchId).execute();
    await m.trx
      .updateTable('code_reference_branches')
      .set(branchRow)
      .where('id', '=', branchId)
      .execute();
  } else {
    await m.trx
      .insertInto('code_reference_branches')
      .values({ id: branchId, repository_id: repo.id, name: branch, ...branchRow })
      .execute();
  }
  const known = new Set(
    (
      await m.trx.selectFrom('flags').select(['key']).where('project_id', '=', project.id).execute()
    ).map((row) => row.key),
  );
  const after = new Map<string, number>();
  const rows: CodeReferencesTable[] = body.references.map((reference) => {
    after.set(reference.key, (after.get(reference.key) ?? 0) + 1);
    return {
      branch_id: branchId,
      project_id: project.id,
      flag_key: reference.key,
      path: reference.path,
      line: reference.line,
      column: reference.column,
      kind: reference.kind,
      context: JSON.stringify(reference.context ?? { before: [], line: '', after: [] }),
      unknown_key: known.has(reference.key) ? 0 : 1,
    };
  });
  for (let start = 0; start < rows.length; start += INSERT_BATCH) {
    await m.trx
      .insertInto('code_references')
      .values(rows.slice(start, start + INSERT_BATCH))
      .execute();
  }
  const keys = [...new Set([...before.keys(), ...after.keys()])].sort();
  await m.emit({
    type: 'code_references.updated',
    project,
    entity: { type: 'code_reference_branch', id: branchId, key: `${repository}@${branch}` },
    changes: keys
      .filter((key) => (before.get(key) ?? 0) !== (after.get(key) ?? 0))
      .map((key) => ({
        property: key,
        from: String(before.get(key) ?? 0),
        to: String(after.get(key) ?? 0),
      })),
    description: `Code references of ${repository} (${branch}) updated: ${rows.length} references`,
  });
  return rows.length;
}

/** A project's repositories with their branches, by name (contract, section 2). */
export async function listRepositories(services: Services, projectId: string) {
  const [repositories, branches] = await Promise.all([
    services.db
      .selectFrom('code_reference_repositories')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('name')
      .execute(),
    services.db
      .selectFrom('code_reference_branches')
      .innerJoin(
        'code_reference_repositories',
        'code_reference_repositories.id',
        'code_reference_branches.repository_id',
      )
      .selectAll('code_reference_branches')
      .where('code_reference_repositories.project_id', '=', projectId)
      .orderBy('code_reference_branches.name')
      .execute(),
  ]);
  return repositories.map((repository) => ({
    id: repository.id,
    name: repository.name,
    defaultBranch: repository.default_branch,
    sourceUrlTemplate: repository.source_url_template,
    branches: branches
      .filter((branch) => branch.repository_id === repository.id)
      .map((branch) => ({
        id: branch.id,
        name: branch.name,
        commit: branch.commit_sha,
        scannedAt: branch.scanned_at,
        referenceCount: branch.reference_count,
        unparsed: JSON.parse(branch.unparsed) as string[],
      })),
  }));
}

/**
 * A reference's link: the repository's template with `{commit}` (the branch name when the scan
 * had no commit), `{branch}`, `{path}` (each segment URL-encoded) and `{line}` filled in.
 */
export function referenceUrl(
  template: string | null,
  place: { commit: string | null; branch: string; path: string; line: number },
): string | null {
  if (!template) return null;
  const path = place.path.split('/').map(encodeURIComponent).join('/');
  return template
    .replaceAll('{commit}', encodeURIComponent(place.commit ?? place.branch))
    .replaceAll('{branch}', encodeURIComponent(place.branch))
    .replaceAll('{path}', path)
    .replaceAll('{line}', String(place.line));
}

/** One flag's references grouped by repository and branch, with links (contract, section 2). */
export async function flagReferences(services: Services, projectId: string, flagKey: string) {
  const repositories = await listRepositories(services, projectId);
  const rows = await services.db
    .selectFrom('code_references')
    .select(['branch_id', 'path', 'line', 'column', 'kind', 'context'])
    .where('project_id', '=', projectId)
    .where('flag_key', '=', flagKey)
    .orderBy('path')
    .orderBy('line')
    .orderBy('column')
    .execute();
  return repositories
    .map((repository) => ({
      name: repository.name,
      defaultBranch: repository.defaultBranch,
      branches: repository.branches
        .map(({ id, ...branch }) => ({
          ...branch,
          references: rows
            .filter((row) => row.branch_id === id)
            .map((row) => ({
              path: row.path,
              line: row.line,
              column: row.column,
              kind: row.kind,
              context: JSON.parse(row.context) as ReferenceContext,
              url: referenceUrl(repository.sourceUrlTemplate, {
                commit: branch.commit,
                branch: branch.name,
                path: row.path,
                line: row.line,
              }),
            })),
        }))
        .filter((branch) => branch.references.length > 0),
    }))
    .filter((repository) => repository.branches.length > 0);
}

/**
 * References per flag key on each repository's default branch, for the flag list and removal
 * candidates (contract, section 2). Null when no repository of the project was ever scanned: the
 * count is unknown rather than zero. Keys without references are absent from the map (0).
 */
export async function countsOnDefaultBranches(
  services: Services,
  projectId: string,
  keys: readonly string[],
): Promise<Map<string, number> | null> {
  const scanned = await services.db
    .selectFrom('code_reference_branches')
    .innerJoin(
      'code_reference_repositories',
      'code_reference_repositories.id',
      'code_reference_branches.repository_id',
    )
    .select(['code_reference_branches.id'])
    .where('code_reference_repositories.project_id', '=', projectId)
    .limit(1)
    .executeTakeFirst();
  if (!scanned) return null;
  if (keys.length === 0) return new Map();
  const rows = await services.db
    .selectFrom('code_references')
    .innerJoin('code_reference_branches', 'code_reference_branches.id', 'code_references.branch_id')
    .innerJoin(
      'code_reference_repositories',
      'code_reference_repositories.id',
      'code_reference_branches.repository_id',
    )
    .whereRef('code_reference_branches.name', '=', 'code_reference_repositories.default_branch')
    .where('code_references.project_id', '=', projectId)
    .where('code_references.flag_key', 'in', keys)
    .select(['code_references.flag_key'])
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .groupBy('code_references.flag_key')
    .execute();
  return new Map(rows.map((row) => [row.flag_key, row.count]));
}

/** The first `limit` places on default branches that read `flagKey`, as `repository:path:line`. */
export async function placesReading(
  services: Services,
  projectId: string,
  flagKey: string,
  limit: number,
): Promise<string[]> {
  const rows = await services.db
    .selectFrom('code_references')
    .innerJoin('code_reference_branches', 'code_reference_branches.id', 'code_references.branch_id')
    .innerJoin(
      'code_reference_repositories',
      'code_reference_repositories.id',
      'code_reference_branches.repository_id',
    )
    .whereRef('code_reference_branches.name', '=', 'code_reference_repositories.default_branch')
    .where('code_references.project_id', '=', projectId)
    .where('code_references.flag_key', '=', flagKey)
    .select([
      'code_reference_repositories.name as repository',
      'code_references.path',
      'code_references.line',
    ])
    .orderBy('code_reference_repositories.name')
    .orderBy('code_references.path')
    .orderBy('code_references.line')
    .limit(limit)
    .execute();
  return rows.map((row) => `${row.repository}:${row.path}:${row.line}`);
}
