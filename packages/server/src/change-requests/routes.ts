import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import { isMcpCall } from '../http/mcp-call.js';
import { CHANGE_REQUEST_STATES } from '../db/schema.js';
import type { Services } from '../services.js';
import { ActionsSchema, actionsFor } from '../api/actions.js';
import { requireEnvironment } from '../api/path-resources.js';
import { PageQuery, paginate, pagedSchema } from '../api/pagination.js';
import { scopedRoutes, type ProjectScope } from '../api/scope.js';
import { MAX_CHANGES } from './changes.js';
import {
  applyChangeRequest,
  cancelChangeRequest,
  changeRequestDetail,
  editChangeRequest,
  openChangeRequest,
  requireChangeRequest,
  reviewChangeRequest,
  submitChangeRequest,
  unscheduleChangeRequest,
} from './service.js';
import { requestResponse, reviewsOf, environmentsById, type RequestCaller } from './store.js';

const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });
const RequestParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  number: Type.Integer({ minimum: 1, maximum: 2147483647 }),
});

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);
const Person = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      '`{ userId, email, name }`, a service token `{ tokenId, name }`, or `{ service: "schedule" }`.',
  },
);
const ChangeSchema = Type.Object(
  { kind: Type.String() },
  {
    additionalProperties: true,
    description:
      '`{ kind: "flag", flagKey, baseRevision, configuration }`, `{ kind: "segment", segmentKey, baseRevision, definition }` or `{ kind: "variations", flagKey, baseRevision, variations }` (design record 042).',
  },
);
const Title = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.String({ maxLength: 10000, description: 'Markdown.' });
const ApplyAt = Type.String({
  description: 'RFC 3339 with an offset, in the future; stored and returned in UTC.',
});

const ChangeRequestItem = Type.Object({
  id: Type.String({ format: 'uuid' }),
  number: Type.Integer(),
  projectKey: Type.String(),
  environmentKey: Type.String(),
  title: Type.String(),
  description: Type.String(),
  state: Type.Enum(CHANGE_REQUEST_STATES),
  author: Person,
  changes: Type.Array(ChangeSchema),
  approvalsRequired: Type.Integer(),
  reviews: Type.Array(
    Type.Object({
      reviewer: Person,
      decision: Type.Enum(['approve', 'reject'] as const),
      comment: Nullable(Type.String()),
      at: Type.String({ format: 'date-time' }),
      withdrawn: Type.Boolean({ description: 'An approval an edit of the request withdrew.' }),
    }),
  ),
  applyAt: Nullable(Type.String({ format: 'date-time' })),
  appliedAt: Nullable(Type.String({ format: 'date-time' })),
  appliedBy: Nullable(Person),
  failure: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  _actions: ActionsSchema,
});
const ChangeRequestDetail = Type.Intersect([
  ChangeRequestItem,
  Type.Object({
    diff: Type.Optional(
      Type.Array(
        Type.Object({
          kind: Type.String(),
          target: Type.String(),
          before: Type.Unknown({
            description: 'The target now; null when it is gone or archived.',
          }),
          after: Type.Unknown(),
          revision: Nullable(Type.Integer()),
          baseRevision: Nullable(Type.Integer()),
          conflict: Type.Boolean(),
        }),
      ),
    ),
  }),
]);

function callerOf(scope: ProjectScope, request: FastifyRequest): RequestCaller {
  return { access: scope, viaMcp: isMcpCall(request) };
}

/** Change requests of a project (spec: change requests, section 2; design record 042). */
export function registerChangeRequestRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  const base = '/orgs/:org/projects/:project/change-requests';
  const one = `${base}/:number`;

  route.get(
    base,
    'Viewer',
    {
      schema: {
        tags: ['change-requests'],
        params: ProjectParams,
        querystring: Type.Intersect([
          PageQuery,
          Type.Object({
            state: Type.Optional(Type.Enum(CHANGE_REQUEST_STATES)),
            environment: Type.Optional(Type.String()),
            author: Type.Optional(Type.Literal('me')),
            reviewable: Type.Optional(
              Type.Boolean({ description: 'Open, not mine, not yet reviewed by me.' }),
            ),
          }),
        ]),
        response: { 200: pagedSchema(ChangeRequestItem) },
      },
    },
    async (scope, request) => {
      const { project, caller } = scope;
      const query = request.query;
      let select = services.db
        .selectFrom('change_requests')
        .selectAll()
        .where('project_id', '=', project.id);
      if (query.state) select = select.where('state', '=', query.state);
      if (query.environment) {
        const environment = await requireEnvironment(services, scope, project, query.environment);
        select = select.where('environment_id', '=', environment.id);
      }
      if (query.author === 'me') select = select.where('author_id', '=', caller.id);
      if (query.reviewable)
        select = select
          .where('state', '=', 'open')
          .where('author_id', '!=', caller.id)
          .where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom('change_request_reviews')
                  .select('change_request_reviews.id')
                  .whereRef('change_request_reviews.change_request_id', '=', 'change_requests.id')
                  .where('change_request_reviews.reviewer_id', '=', caller.id)
                  .where('change_request_reviews.withdrawn', '=', 0),
              ),
            ),
          );
      const { rows, nextCursor } = await paginate(select, query, {
        sortColumn: 'number',
        sortValue: (row) => row.number,
        direction: 'desc',
      });
      const [reviews, environments] = await Promise.all([
        reviewsOf(
          services,
          rows.map((row) => row.id),
        ),
        environmentsById(services, project.id),
      ]);
      const who = callerOf(scope, request);
      return {
        items: rows.map((row) =>
          requestResponse(row, {
            projectKey: project.key,
            environmentKey: environments.get(row.environment_id)?.key ?? '',
            reviews: reviews.get(row.id) ?? [],
            caller: who,
          }),
        ),
        next_cursor: nextCursor,
        _actions: actionsFor(scope.role, { create: { role: 'Member' } }),
      };
    },
  );

  route.post(
    base,
    'Member',
    {
      schema: {
        tags: ['change-requests'],
        params: ProjectParams,
        body: Type.Object(
          {
            environment: Type.String({ minLength: 1, description: 'The environment key.' }),
            title: Title,
            description: Type.Optional(Description),
            changes: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_CHANGES }),
            applyAt: Type.Optional(Nullable(ApplyAt)),
            submit: Type.Optional(
              Type.Boolean({ description: 'Open it for review now (default: a draft).' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: ChangeRequestDetail },
      },
    },
    async (scope, request, reply) => {
      const created = await openChangeRequest(
        services,
        scope,
        request.body,
        callerOf(scope, request),
      );
      return reply.status(201).send(created);
    },
  );

  route.get(
    one,
    'Viewer',
    {
      schema: {
        tags: ['change-requests'],
        params: RequestParams,
        response: { 200: ChangeRequestDetail },
      },
    },
    async (scope, request) => {
      const row = await requireChangeRequest(services, scope.project, request.params.number);
      return changeRequestDetail(services, scope, callerOf(scope, request), row);
    },
  );

  route.patch(
    one,
    'Member',
    {
      schema: {
        tags: ['change-requests'],
        params: RequestParams,
        body: Type.Object(
          {
            title: Type.Optional(Title),
            description: Type.Optional(Description),
            changes: Type.Optional(
              Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_CHANGES }),
            ),
            applyAt: Type.Optional(Nullable(ApplyAt)),
          },
          { additionalProperties: false },
        ),
        response: { 200: ChangeRequestDetail },
      },
    },
    (scope, request) =>
      editChangeRequest(
        services,
        scope,
        callerOf(scope, request),
        request.params.number,
        request.body,
      ),
  );

  /** A move of the request's state that takes no body: submit, cancel, unschedule. */
  const move = (
    method: 'post' | 'delete',
    path: string,
    summary: string,
    act: typeof submitChangeRequest,
  ) =>
    route[method](
      `${one}/${path}`,
      'Member',
      {
        schema: {
          tags: ['change-requests'],
          summary,
          params: RequestParams,
          response: { 200: ChangeRequestDetail },
        },
      },
      (scope, request) => act(services, scope, callerOf(scope, request), request.params.number),
    );
  move('post', 'submit', 'Submit a draft for review', submitChangeRequest);
  move('post', 'cancel', 'Cancel: the request is closed unapplied', cancelChangeRequest);
  move('delete', 'schedule', 'Unschedule: back to approved', unscheduleChangeRequest);

  route.post(
    `${one}/apply`,
    'Member',
    {
      schema: {
        tags: ['change-requests'],
        summary: 'Apply an approved change request now, or with `applyAt` schedule it',
        params: RequestParams,
        body: Type.Object({ applyAt: Type.Optional(ApplyAt) }, { additionalProperties: false }),
        response: { 200: ChangeRequestDetail },
      },
      // The body is optional: a POST without one applies now.
      preValidation: (request) => {
        request.body ??= {};
        return Promise.resolve();
      },
    },
    (scope, request) =>
      applyChangeRequest(
        services,
        scope,
        callerOf(scope, request),
        request.params.number,
        request.body,
      ),
  );

  route.post(
    `${one}/reviews`,
    'Member',
    {
      schema: {
        tags: ['change-requests'],
        summary: 'Approve or reject (a person, not the author; never a service token or /mcp)',
        params: RequestParams,
        body: Type.Object(
          {
            decision: Type.Enum(['approve', 'reject'] as const),
            comment: Type.Optional(Type.String({ maxLength: 10000 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: ChangeRequestDetail },
      },
    },
    (scope, request) =>
      reviewChangeRequest(
        services,
        scope,
        callerOf(scope, request),
        request.params.number,
        request.body,
      ),
  );
}
