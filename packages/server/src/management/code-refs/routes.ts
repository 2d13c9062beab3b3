import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ApiError, invalidField } from '../../errors.js';
import { parseJsonBody } from '../../http/json-body.js';
import { checkJsonLimits } from '../../http/request-limits.js';
import { diffProperties } from '../../events/types.js';
import type { Services } from '../../services.js';
import { mutateAs } from '../../api/access.js';
import { scopedRoutes } from '../../api/scope.js';
import { flagReferences, listRepositories, replaceBranchReferences } from './queries.js';
import {
  BranchParams,
  FlagReferencesResponse,
  MAX_REFERENCES_PER_UPLOAD,
  RepositoryItem,
  RepositoryParams,
  RepositoryPatch,
  UPLOAD_BODY_LIMIT,
  UploadBody,
} from './schemas.js';

const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });
const FlagParams = Type.Object({ org: Type.String(), project: Type.String(), flag: Type.String() });
const JSON_TYPE = /^application\/json\s*(;.*)?$/i;
const BASE = '/orgs/:org/projects/:project/code-references';

/**
 * The JSON limits of every other body (design record 035), except that the one array an upload
 * may make long, `references`, is counted by the route (413 past 100,000) and checked item by
 * item: each item is small and flat, so the walk stays linear in the body.
 */
function checkUploadLimits(value: unknown): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    checkJsonLimits(value);
    return;
  }
  const { references, ...rest } = value as Record<string, unknown>;
  checkJsonLimits(rest);
  if (Array.isArray(references)) for (const reference of references) checkJsonLimits(reference);
  else checkJsonLimits(references);
}

/** 413 before validation when an upload holds more references than one branch may keep. */
function refuseTooManyReferences(request: FastifyRequest): Promise<void> {
  const references = (request.body as { references?: unknown } | undefined)?.references;
  if (Array.isArray(references) && references.length > MAX_REFERENCES_PER_UPLOAD) {
    throw new ApiError(
      'payload_too_large',
      `The upload holds ${references.length} references; at most ${MAX_REFERENCES_PER_UPLOAD} are kept per branch. Nothing was stored.`,
      {
        fields: {
          references: [`holds ${references.length}, at most ${MAX_REFERENCES_PER_UPLOAD}`],
        },
      },
    );
  }
  return Promise.resolve();
}

/**
 * Code references (flag-cleanup contract, section 2; design record 054): a scan's upload per
 * repository and branch (Member), the repositories and their settings, and one flag's references
 * (Viewer). The upload route reads its JSON with its own limits, so it is a plugin of its own.
 */
export function registerCodeReferenceRoutes(app: App, services: Services): void {
  void app.register((scope: App, _options, done) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser(JSON_TYPE, { parseAs: 'string' }, (_request, body, parsed) => {
      try {
        const value = parseJsonBody(body as string);
        checkUploadLimits(value);
        parsed(null, value);
      } catch (error) {
        parsed(error as Error, undefined);
      }
    });
    registerUpload(scope, services);
    done();
  });
  registerReads(app, services);
}

function registerUpload(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.put(
    `${BASE}/:repository/branches/:branch`,
    'Member',
    {
      schema: {
        tags: ['code references'],
        description:
          "Replaces the branch's references with a scan's JSON (`vexil code-refs scan --format json`), in one transaction. At most 100,000 references (413 beyond); a key the project has no flag for is kept and shown with `unknownKey`.",
        params: BranchParams,
        body: UploadBody,
      },
      bodyLimit: UPLOAD_BODY_LIMIT,
      preValidation: refuseTooManyReferences,
    },
    async ({ project, ...access }, request, reply) => {
      const { repository, branch } = request.params;
      const { body } = request;
      if (body.repository !== undefined && body.repository !== repository)
        throw invalidField('repository', `must be "${repository}", the repository in the path`);
      if (body.branch !== undefined && body.branch !== branch)
        throw invalidField('branch', `must be "${branch}", the branch in the path`);
      await mutateAs(services, access, (m) =>
        replaceBranchReferences(m, project, { repository, branch, body }),
      );
      return reply.status(204).send();
    },
  );
}

function registerReads(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    `${BASE}/repositories`,
    'Viewer',
    {
      schema: {
        tags: ['code references'],
        params: ProjectParams,
        response: { 200: Type.Object({ items: Type.Array(RepositoryItem) }) },
      },
    },
    async ({ project }) => ({
      items: (await listRepositories(services, project.id)).map(({ id: _id, ...repository }) => ({
        ...repository,
        branches: repository.branches.map(({ id: _branchId, ...branch }) => branch),
      })),
    }),
  );

  route.patch(
    `${BASE}/repositories/:repository`,
    'Member',
    {
      schema: {
        tags: ['code references'],
        description:
          'Sets the branch counted in flag lists and removal candidates, and the link template of references (`{commit}`, `{branch}`, `{path}`, `{line}`).',
        params: RepositoryParams,
        body: RepositoryPatch,
        response: { 200: RepositoryItem },
      },
    },
    async ({ project, ...access }, request) => {
      const { repository } = request.params;
      const { defaultBranch, sourceUrlTemplate } = request.body;
      await mutateAs(services, access, async (m) => {
        const before = await m.trx
          .selectFrom('code_reference_repositories')
          .select(['id', 'default_branch', 'source_url_template'])
          .where('project_id', '=', project.id)
          .where('name', '=', repository)
          .executeTakeFirst();
        if (!before)
          throw new ApiError('not_found', `Repository "${repository}" has no references.`);
        const settings = {
          defaultBranch: defaultBranch ?? before.default_branch,
          sourceUrlTemplate:
            sourceUrlTemplate !== undefined ? sourceUrlTemplate : before.source_url_template,
        };
        await m.trx
          .updateTable('code_reference_repositories')
          .set({
            updated_at: m.now,
            default_branch: settings.defaultBranch,
            source_url_template: settings.sourceUrlTemplate,
          })
          .where('id', '=', before.id)
          .execute();
        await m.emit({
          type: 'code_references.updated',
          project,
          entity: { type: 'code_reference_repository', id: before.id, key: repository },
          // Empty when nothing changed: the outbox then records nothing (design record 048).
          changes: diffProperties(
            { defaultBranch: before.default_branch, sourceUrlTemplate: before.source_url_template },
            settings,
          ),
          description: `Code reference settings of ${repository} changed`,
        });
      });
      const updated = (await listRepositories(services, project.id)).find(
        (item) => item.name === repository,
      );
      if (!updated)
        throw new ApiError('not_found', `Repository "${repository}" has no references.`);
      const { id: _id, ...rest } = updated;
      return { ...rest, branches: rest.branches.map(({ id: _branchId, ...branch }) => branch) };
    },
  );

  route.delete(
    `${BASE}/repositories/:repository`,
    'Member',
    { schema: { tags: ['code references'], params: RepositoryParams } },
    async ({ project, ...access }, request, reply) => {
      const { repository } = request.params;
      await mutateAs(services, access, async (m) => {
        const row = await m.trx
          .deleteFrom('code_reference_repositories')
          .where('project_id', '=', project.id)
          .where('name', '=', repository)
          .returning(['id'])
          .executeTakeFirst();
        if (!row) throw new ApiError('not_found', `Repository "${repository}" has no references.`);
        await m.emit({
          type: 'code_references.updated',
          project,
          entity: { type: 'code_reference_repository', id: row.id, key: repository },
          description: `Code references of ${repository} removed`,
        });
      });
      return reply.status(204).send();
    },
  );

  route.get(
    '/orgs/:org/projects/:project/flags/:flag/code-references',
    'Viewer',
    {
      schema: {
        tags: ['code references'],
        params: FlagParams,
        response: { 200: FlagReferencesResponse },
      },
    },
    async ({ project, flag }) => ({
      flagKey: flag.key,
      repositories: await flagReferences(services, project.id, flag.key),
    }),
  );
}
