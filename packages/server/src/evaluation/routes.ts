import { evaluateFlag, type EvaluationResult } from '@vexil/engine';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import Negotiator from 'negotiator';
import { Type, type Static, type TSchema } from 'typebox';
import type { ValidateFunction } from 'ajv';
import type { App } from '../http/app-instance.js';
import { answerUnmatchedRequests } from '../http/unmatched-routes.js';
import type { RequestDurations } from '../http/request-durations.js';
import type { EvaluationServices } from '../services.js';
import { evaluationEvents } from '../telemetry/evaluation-events.js';
import { registerEventRoutes } from './events-routes.js';
import { clientFlagsBody } from './client-flags.js';
import type { LeanRoute } from './lean-lane.js';
import { ProblemError, problemErrorHandler } from './problem.js';
import { whenReady, type SdkAuthenticator, type SdkKeyType } from './sdk-authenticator.js';
import type { SdkKeyResolver } from './sdk-keys.js';
import { flagDocument, type SnapshotStore } from './snapshots.js';
import { registerOfrepEvents } from './ofrep-events.js';
import { registerStreamingApi, type StreamRelay } from './streaming.js';

const ContextSchema = Type.Record(Type.String(), Type.Unknown());
const ClientResult = Type.Object({
  value: Type.Unknown(),
  variation: Type.Union([Type.String(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  prerequisiteKey: Type.Union([Type.String(), Type.Null()]),
});
const ClientResponse = Type.Object({ flags: Type.Record(Type.String(), ClientResult) });

/** Where app.ts mounts the evaluation API. */
/**
 * Where the evaluation role's configurations and SDK key grants come from (design record 044):
 * the database (`node/database-source.ts`) or an upstream Vexil (`relay/upstream-source.ts`). Either
 * way the role answers from in-memory snapshots, and a change reaches its streams through
 * {@link SnapshotStore.onChange}.
 */
export interface EvaluationSource {
  snapshots: SnapshotStore;
  sdkKeys: SdkKeyResolver;
  /** Reaches client streams held by the node's other processes (`identify`). */
  streams: StreamRelay;
}

export const EVALUATION_PREFIX = '/v1';

/** The body of `POST /v1/sdk/evaluate`. */
export const ServerEvaluateBody = Type.Object({
  flagKey: Type.String({ minLength: 1 }),
  context: Type.Object({
    userId: Type.Optional(Type.String()),
    attributes: Type.Optional(ContextSchema),
  }),
});
/** The body of `POST /v1/client/evaluate` and `POST /v1/client/identify`. */
export const ClientEvaluateBody = Type.Object({ context: ContextSchema });

/**
 * Spec: Evaluation API rule 1. With `X-Service-Reports-Evaluations: 1` the client reports the
 * flags it reads through the events endpoints, so serving them does not count as evaluation.
 */
function reportsOwnEvaluations(headers: IncomingHttpHeaders): boolean {
  return headers['x-service-reports-evaluations'] === '1';
}

/**
 * The `POST /v1/sdk/evaluate` answer, in its response schema's shape and key order, written by
 * hand: the schema's generated serializer cost more than these few concatenations.
 */
function serverResultJson(result: EvaluationResult): string {
  const prerequisite = result.prerequisiteKey
    ? `,"prerequisiteKey":${JSON.stringify(result.prerequisiteKey)}`
    : '';
  return (
    `{"key":${JSON.stringify(result.key)},"variation":${JSON.stringify(result.variation)},` +
    `"value":${JSON.stringify(result.value)},"reason":${JSON.stringify(result.reason)}${prerequisite}}`
  );
}

/**
 * The answers of the two evaluation routes, given the request's headers and its validated body,
 * as JSON: the Fastify routes and the lean lane (design record 030) both send them.
 * @throws (or rejects with) ProblemError for an unknown flag, SdkAuthFailure for a refused key
 */
export interface EvaluationAnswers {
  /** `POST /v1/sdk/evaluate`: one flag's result. */
  server: (
    headers: IncomingHttpHeaders,
    body: Static<typeof ServerEvaluateBody>,
  ) => string | Promise<string>;
  /** `POST /v1/client/evaluate`: every client-visible flag's result. */
  client: (
    headers: IncomingHttpHeaders,
    body: Static<typeof ClientEvaluateBody>,
  ) => Buffer | Promise<Buffer>;
}

/** The {@link EvaluationAnswers} of this node. */
export function evaluationAnswers(
  services: EvaluationServices,
  sdk: SdkAuthenticator,
): EvaluationAnswers {
  return {
    server: (headers, { flagKey, context }) =>
      whenReady(sdk.authenticate(headers.authorization, 'ServerSide'), (snapshot) => {
        const result = evaluateFlag(snapshot.compiled, flagKey, context);
        if (evaluationEvents !== null)
          evaluationEvents.record(headers, snapshot, context, () => [result]);
        if (result.errorCode === 'FLAG_NOT_FOUND') {
          throw new ProblemError(
            404,
            'Flag not found',
            `No flag "${flagKey}" in this environment.`,
          );
        }
        if (result.variation !== null && !reportsOwnEvaluations(headers)) {
          const nowMs = services.clock.now().getTime();
          services.usage.recordEvaluation(
            snapshot.environmentId,
            result.key,
            result.variation,
            nowMs,
            context,
            result.reason,
          );
        }
        return serverResultJson(result);
      }),
    // The body is written by clientFlagsBody (in the response schema's shape), which reuses each
    // flag's serialized entry: through the schema, 50 flags took longer to serialize than to
    // evaluate.
    client: (headers, { context }) =>
      whenReady(sdk.authenticate(headers.authorization, 'ClientSide'), (snapshot) =>
        clientFlagsBody(
          snapshot,
          context,
          reportsOwnEvaluations(headers)
            ? null
            : { aggregator: services.usage, nowMs: services.clock.now().getTime() },
          headers,
        ),
      ),
  };
}

/**
 * The lean lane's routes (design record 030): the Fastify routes' paths, body schemas (compiled
 * by `compile`, the Fastify routes' validator compiler), answers and duration series.
 */
export function leanRoutes(
  answers: EvaluationAnswers,
  compile: (schema: TSchema) => ValidateFunction,
  durations: Pick<RequestDurations, 'recorder'>,
): LeanRoute[] {
  const route = (path: string, body: TSchema, answer: LeanRoute['answer']): LeanRoute => ({
    path: EVALUATION_PREFIX + path,
    validate: compile(body),
    answer,
    observe: durations.recorder('POST', EVALUATION_PREFIX + path),
  });
  return [
    route('/sdk/evaluate', ServerEvaluateBody, (request, body) =>
      answers.server(request.headers, body as Static<typeof ServerEvaluateBody>),
    ),
    route('/client/evaluate', ClientEvaluateBody, (request, body) =>
      answers.client(request.headers, body as Static<typeof ClientEvaluateBody>),
    ),
  ];
}

/** Sends an answer of {@link EvaluationAnswers} through Fastify. */
function sendJson(reply: FastifyReply, answer: string | Buffer | Promise<string | Buffer>) {
  return whenReady(answer, (body) => {
    void reply.type('application/json; charset=utf-8').send(body);
  });
}

/**
 * The evaluation API (spec: Evaluation API), mounted under {@link EVALUATION_PREFIX}. SDK keys travel in the
 * `Authorization` header, bare or after `Bearer ` (design record 006). Every answer comes from an
 * in-memory snapshot; only the first request after a change reads the database.
 */
export function registerEvaluationApi(
  app: App,
  services: EvaluationServices,
  snapshots: SnapshotStore,
  sdk: SdkAuthenticator,
  streamRelay: StreamRelay,
  answers: EvaluationAnswers,
): void {
  app.setErrorHandler(problemErrorHandler);
  answerUnmatchedRequests(app, ({ method, path, allowed }) =>
    allowed.length > 0
      ? new ProblemError(
          405,
          'Method Not Allowed',
          `${method} is not allowed on ${path}; it accepts ${allowed.join(', ')}.`,
        )
      : new ProblemError(404, 'Not Found', `No route ${method} ${path}.`),
  );

  const snapshotFor = (request: FastifyRequest, type: SdkKeyType) =>
    sdk.authenticate(request.headers.authorization, type);

  app.get(
    '/sdk/flags',
    { schema: { tags: ['evaluation'], security: [{ sdkKey: [] }] } },
    async (request, reply) => {
      const { document } = await snapshotFor(request, 'ServerSide');
      void reply
        .header('etag', document.etag)
        .header('cache-control', 'no-cache')
        .header('vary', 'Accept-Encoding');
      if (request.headers['if-none-match'] === document.etag) return reply.status(304).send();
      void reply.type('application/json; charset=utf-8');
      // SDKs accept gzip: the document is held compressed and sent as held (design record 012).
      if (new Negotiator(request.raw).encoding(['gzip', 'identity']) === 'gzip') {
        return reply.header('content-encoding', 'gzip').send(await document.gzipped());
      }
      return reply.send(await document.plain());
    },
  );

  app.get(
    '/sdk/flags/:key',
    {
      schema: {
        tags: ['evaluation'],
        security: [{ sdkKey: [] }],
        params: Type.Object({ key: Type.String() }),
      },
    },
    async (request, reply) => {
      const snapshot = await snapshotFor(request, 'ServerSide');
      const body = flagDocument(snapshot, request.params.key);
      if (!body)
        throw new ProblemError(
          404,
          'Flag not found',
          `No flag "${request.params.key}" in this environment.`,
        );
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );

  app.post(
    '/sdk/evaluate',
    {
      schema: {
        tags: ['evaluation'],
        security: [{ sdkKey: [] }],
        body: ServerEvaluateBody,
        response: {
          200: Type.Object({
            key: Type.String(),
            variation: Type.Union([Type.String(), Type.Null()]),
            value: Type.Unknown(),
            reason: Type.String(),
            prerequisiteKey: Type.Optional(Type.String()),
          }),
        },
      },
    },
    (request, reply) => sendJson(reply, answers.server(request.headers, request.body)),
  );

  const clientEvaluation = {
    schema: {
      tags: ['evaluation'],
      security: [{ sdkKey: [] }],
      body: ClientEvaluateBody,
      response: { 200: ClientResponse },
    },
  };
  type ClientRequest = FastifyRequest<{ Body: Static<typeof ClientEvaluateBody> }>;
  app.post('/client/evaluate', clientEvaluation, (request: ClientRequest, reply) =>
    sendJson(reply, answers.client(request.headers, request.body)),
  );
  // Spec: Evaluation API rule 2: identify also re-targets the caller's open stream (X-Vexil-Stream-Id).
  const clientStreams = registerStreamingApi(app, services, snapshots, sdk, streamRelay);
  app.post('/client/identify', clientEvaluation, async (request: ClientRequest, reply) => {
    await clientStreams.identify(request, reply);
    return sendJson(reply, answers.client(request.headers, request.body));
  });
  registerOfrepEvents(app, sdk, clientStreams.host);
  registerEventRoutes(app, services, sdk);
}
