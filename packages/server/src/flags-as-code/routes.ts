import { BODY_LIMITS } from '../http/request-limits.js';
import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import type { Services } from '../services.js';
import { actorOf } from '../api/access.js';
import { hasRole } from '../auth/roles.js';
import { flagsAsCodeOpener } from '../change-requests/flags-as-code-opener.js';
import { authorOf } from '../change-requests/service.js';
import { scopedRoutes } from '../api/scope.js';
import { applyDocument } from '../writes/apply.js';
import { EXPORT_FORMATS, exportProject, serializeDocument } from './export.js';
import { parseDocumentText } from '../writes/validation.js';

const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];
const YAML_ACCEPT = /\b(application|text)\/(x-)?yaml\b/i;

const PropertyChangeSchema = Type.Object({
  property: Type.String(),
  from: Type.Union([Type.String(), Type.Null()]),
  to: Type.Union([Type.String(), Type.Null()]),
});

const ApplyResultSchema = Type.Object({
  dryRun: Type.Boolean(),
  applied: Type.Boolean({ description: 'Whether anything was written.' }),
  changes: Type.Array(
    Type.Object({
      action: Type.Enum(['create', 'update', 'archive', 'restore', 'delete']),
      kind: Type.Enum([
        'project',
        'environment',
        'segment',
        'flag',
        'variation',
        'configuration',
        'rule',
      ]),
      path: Type.String({ description: 'Where the item is in the document (its key if pruned).' }),
      key: Type.String(),
      changes: Type.Optional(Type.Array(PropertyChangeSchema)),
      proposedIn: Type.Optional(
        Type.String({
          description:
            'The protected environment whose change request holds this change instead of it being written (with `changeRequest`).',
        }),
      ),
    }),
  ),
  summary: Type.Object({
    create: Type.Integer(),
    update: Type.Integer(),
    archive: Type.Integer(),
    restore: Type.Integer(),
    delete: Type.Integer(),
  }),
  warnings: Type.Array(Type.String()),
  changeRequests: Type.Array(
    Type.Object({
      environmentKey: Type.String(),
      number: Type.Integer(),
      state: Type.String(),
      changes: Type.Integer({ description: 'How many changes it holds.' }),
    }),
    {
      description:
        'The change requests opened for the changes to protected environments, one per environment (with `changeRequest`).',
    },
  ),
});

/** Flags as code: export a project as a document, apply a document to it (design record 027). */
export function registerFlagsAsCodeRoutes(app: App, services: Services): void {
  // Its own plugin, so that YAML bodies are read as text here and nowhere else.
  void app.register((scope: App, _options, done) => {
    scope.addContentTypeParser(YAML_TYPES, { parseAs: 'string' }, (_request, body, parsed) =>
      parsed(null, body),
    );
    registerRoutes(scope, services);
    done();
  });
}

function registerRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/orgs/:org/projects/:project/export',
    'Viewer',
    {
      schema: {
        tags: ['flags as code'],
        description:
          'The project as a flags-as-code document: YAML with `Accept: application/yaml` or `format=yaml`, JSON otherwise. Two exports of the same state are byte-identical.',
        params: ProjectParams,
        querystring: Type.Object({
          environment: Type.Optional(
            Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 50 })], {
              description: 'Only these environments (repeat, or separate with commas).',
            }),
          ),
          format: Type.Optional(Type.Enum(EXPORT_FORMATS)),
        }),
      },
    },
    async ({ project }, request, reply) => {
      const { environment, format } = request.query;
      const environmentKeys = (Array.isArray(environment) ? environment : [environment ?? ''])
        .flatMap((value) => value.split(','))
        .map((value) => value.trim())
        .filter(Boolean);
      const document = await exportProject(services.db, project, { environmentKeys });
      const chosen = format ?? (YAML_ACCEPT.test(request.headers.accept ?? '') ? 'yaml' : 'json');
      return reply
        .type(
          chosen === 'yaml' ? 'application/yaml; charset=utf-8' : 'application/json; charset=utf-8',
        )
        .send(serializeDocument(document, chosen));
    },
  );

  route.post(
    '/orgs/:org/projects/:project/apply',
    'Member',
    {
      schema: {
        tags: ['flags as code'],
        description:
          'Applies a flags-as-code document (JSON, or YAML as `application/yaml`) to the project in one transaction and answers the plan. A document with any problem is refused whole: `fields` lists every problem by its path in the document. Changes to what an environment requiring change requests serves are refused whole (409 `change_request_required`), or with `changeRequest` proposed as change requests while the rest is applied. A dry run answers the plan either way, each such change marked `proposedIn`. Changing the `changeRequests` policy of an environment takes an Admin (403 `forbidden`).',
        params: ProjectParams,
        querystring: Type.Object({
          dryRun: Type.Optional(Type.Boolean({ description: 'Plan only; change nothing.' })),
          prune: Type.Optional(
            Type.Boolean({
              description: 'Archive flags and delete segments the document leaves out.',
            }),
          ),
          changeRequest: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 200,
              description:
                'Title of the change request that proposes the changes to environments requiring change requests (one per environment), while the rest is applied. Without it, a plan reaching such an environment is refused whole (409 `change_request_required`), and a dry run marks those changes `proposedIn`.',
            }),
          ),
          changeRequestDescription: Type.Optional(
            Type.String({
              maxLength: 10000,
              description: 'Markdown description of that change request (with `changeRequest`).',
            }),
          ),
        }),
        response: { 200: ApplyResultSchema },
      },
      bodyLimit: BODY_LIMITS.document,
    },
    async ({ project, ...access }, request) => {
      const body: unknown = request.body;
      const input = typeof body === 'string' ? parseDocumentText(body) : body;
      return applyDocument(
        services,
        {
          organizationId: access.org.id,
          project,
          actor: actorOf(access.caller),
          mayChangePolicy: hasRole(access.role, 'Admin'),
        },
        input,
        {
          dryRun: request.query.dryRun ?? false,
          prune: request.query.prune ?? false,
          changeRequest: request.query.changeRequest
            ? {
                title: request.query.changeRequest,
                description: request.query.changeRequestDescription,
                open: flagsAsCodeOpener(authorOf(access.caller), access.caller.id),
              }
            : undefined,
        },
      );
    },
  );
}
