import { evaluateFlag, type EvaluationResult } from '@vexil/engine';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import type { Services } from '../services.js';
import { registerEventRoutes } from '../usage/events-routes.js';
import { clientFlagsBody } from './client-flags.js';
import { ProblemError, problemErrorHandler } from './problem.js';
import type { SdkAuthenticator, SdkKeyType } from './sdk-authenticator.js';
import { flagDocument, type SnapshotStore } from './snapshots.js';
import { registerStreamingApi, type StreamRelay } from './streaming.js';

const ContextSchema = Type.Record(Type.String(), Type.Unknown());
const ClientResult = Type.Object({
  value: Type.Unknown(),
  variation: Type.Union([Type.String(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  prerequisiteKey: Type.Union([Type.String(), Type.Null()]),
});
const ClientResponse = Type.Object({ flags: Type.Record(Type.String(), ClientResult) });

/**
 * Spec: Evaluation API rule 1. With `X-Service-Reports-Evaluations: 1` the client reports the
 * flags it reads through the events endpoints, so serving them does not count as evaluation.
 */
function reportsOwnEvaluations(request: FastifyRequest): boolean {
  return request.headers['x-service-reports-evaluations'] === '1';
}

/**
 * The `POST /v1/sdk/evaluate` body, in its response schema's shape and key order, written by hand:
 * the schema's generated serializer cost more than these few concatenations.
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
 * Calls `next` with `value` at once, or once it settles when it is a promise: the evaluation
 * routes' snapshot is almost always at hand, and a promise per request costs measurably.
 */
function whenReady<T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/**
 * The evaluation API (spec: Evaluation API), mounted under `/v1`. SDK keys travel in the
 * `Authorization` header, bare or after `Bearer ` (design record 006). Every answer comes from an
 * in-memory snapshot; only the first request after a change reads the database.
 */
export function registerEvaluationApi(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
  sdk: SdkAuthenticator,
  streamRelay: StreamRelay,
): void {
  app.setErrorHandler(problemErrorHandler);
  app.setNotFoundHandler((request) => {
    throw new ProblemError(
      404,
      'Not Found',
      `No route ${request.method} ${request.url.split('?')[0]}.`,
    );
  });

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
        return reply.header('content-encoding', 'gzip').send(document.gzipped);
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
        body: Type.Object({
          flagKey: Type.String({ minLength: 1 }),
          context: Type.Object({
            userId: Type.Optional(Type.String()),
            attributes: Type.Optional(ContextSchema),
          }),
        }),
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
      serializerCompiler: () => (result) => serverResultJson(result as EvaluationResult),
    },
    (request) =>
      whenReady(snapshotFor(request, 'ServerSide'), (snapshot) => {
        const { flagKey, context } = request.body;
        const result = evaluateFlag(snapshot.compiled, flagKey, context);
        if (result.errorCode === 'FLAG_NOT_FOUND') {
          throw new ProblemError(
            404,
            'Flag not found',
            `No flag "${flagKey}" in this environment.`,
          );
        }
        if (result.variation !== null && !reportsOwnEvaluations(request)) {
          const nowMs = services.clock.now().getTime();
          services.usage.recordEvaluation(
            snapshot.environmentId,
            result.key,
            result.variation,
            nowMs,
          );
        }
        return result;
      }),
  );

  const clientEvaluation = {
    schema: {
      tags: ['evaluation'],
      security: [{ sdkKey: [] }],
      body: Type.Object({ context: ContextSchema }),
      response: { 200: ClientResponse },
    },
  };
  // The body is serialized by clientFlagsBody (in the response schema's shape), which reuses each
  // flag's serialized entry: through the schema, 50 flags took longer to serialize than to evaluate.
  const evaluateClient = (
    request: FastifyRequest<{ Body: { context: Record<string, unknown> } }>,
    reply: FastifyReply,
  ) =>
    whenReady(snapshotFor(request, 'ClientSide'), (snapshot) => {
      const body = clientFlagsBody(
        snapshot,
        request.body.context,
        reportsOwnEvaluations(request)
          ? null
          : { aggregator: services.usage, nowMs: services.clock.now().getTime() },
      );
      void reply.type('application/json; charset=utf-8').send(body);
    });
  app.post('/client/evaluate', clientEvaluation, evaluateClient);
  // Spec: Evaluation API rule 2: identify also re-targets the caller's open stream (X-Vexil-Stream-Id).
  const clientStreams = registerStreamingApi(app, services, snapshots, sdk, streamRelay);
  app.post(
    '/client/identify',
    clientEvaluation,
    async (request: FastifyRequest<{ Body: { context: Record<string, unknown> } }>, reply) => {
      await clientStreams.identify(request, reply);
      return evaluateClient(request, reply);
    },
  );
  registerEventRoutes(app, services, sdk);
}
