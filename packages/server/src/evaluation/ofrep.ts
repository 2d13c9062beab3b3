import { hash } from 'node:crypto';
import {
  evaluateFlag,
  evaluateSelected,
  selectFlags,
  flagMetadata,
  hasRolloutFallthrough,
  isStaticFlag,
  type EvaluationContext,
  type EvaluationResult,
  type FlagMetadata,
} from '@vexil/engine';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { ValidateFunction } from 'ajv';
import type { FastifyBaseLogger, FastifyError, FastifyReply } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import type { App } from '../http/app-instance.js';
import { toApiError } from '../http/envelope.js';
import { ApiError } from '../errors.js';
import { answerUnmatchedRequests } from '../http/unmatched-routes.js';
import { fieldProblems, validationSummary } from '../http/validation-messages.js';
import type { RequestDurations } from '../http/request-durations.js';
import type { EvaluationServices } from '../services.js';
import { evaluationEvents } from '../telemetry/evaluation-events.js';
import { ServedTally } from '../usage/aggregator.js';
import { compressedAnswer, COMPRESS_FROM_BYTES } from './answer-compression.js';
import { answerSize, AnswerMemos } from './answer-memo.js';
import { joinFragments } from './fragments.js';
import type { LeanReply, LeanRoute } from './lean-lane.js';
import { ofrepEventStreamsJson } from './ofrep-events.js';
import {
  notAnSdkKeyDetail,
  SdkAuthFailure,
  sdkKeyOf,
  whenReady,
  type SdkAccess,
  type SdkAuthenticator,
  type SdkKeyType,
} from './sdk-authenticator.js';
import type { Snapshot } from './snapshots.js';

/**
 * The OpenFeature Remote Evaluation Protocol (OFREP, `open-feature/protocol` service/openapi.yaml),
 * mounted under `/ofrep/v1`, so that the stock OpenFeature OFREP providers work with Vexil.
 * Decisions the protocol leaves open are in design record 009.
 */

/** OFREP error codes (OpenFeature's `ErrorCode` minus the ones only providers raise). */
type OfrepErrorCode =
  'FLAG_NOT_FOUND' | 'TARGETING_KEY_MISSING' | 'INVALID_CONTEXT' | 'PARSE_ERROR' | 'GENERAL';

/** An OFREP failure: HTTP status plus, where the protocol has one, an error code. */
class OfrepError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: OfrepErrorCode | null,
    detail: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
  }
}

function notFound(key: string): OfrepError {
  return new OfrepError(404, 'FLAG_NOT_FOUND', `No flag "${key}" in this environment.`);
}

/** An evaluation's success body (OFREP `evaluationSuccess`). */
interface OfrepSuccess {
  key: string;
  value: unknown;
  reason: string;
  variant: string;
  metadata?: FlagMetadata;
}

/** An evaluation's failure body (OFREP `evaluationFailure` / `flagNotFound`). */
interface OfrepFailure {
  key: string;
  errorCode: OfrepErrorCode;
  errorDetails: string;
}

/** Seconds a provider should wait when the configuration cannot be loaded. */
const RETRY_AFTER_SECONDS = 5;

const ContextSchema = Type.Object(
  { targetingKey: Type.Optional(Type.String()) },
  { additionalProperties: true, description: 'OpenFeature evaluation context' },
);
const RequestSchema = Type.Object({ context: Type.Optional(ContextSchema) });
const MetadataSchema = Type.Optional(
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
);
const SuccessSchema = Type.Object({
  key: Type.String(),
  value: Type.Unknown(),
  reason: Type.String(),
  variant: Type.String(),
  metadata: MetadataSchema,
});

/**
 * The OpenFeature reason for a served engine result (design records 009 and 020): `DEFAULT` from
 * a flag that reads nothing of the context is `STATIC`; `PREREQUISITE_FAILED` is `DEFAULT` (with
 * `metadata.prerequisiteKey`); the others are OpenFeature's own.
 */
function ofrepReason(snapshot: Snapshot, result: EvaluationResult): string {
  if (result.reason === 'PREREQUISITE_FAILED') return 'DEFAULT';
  if (result.reason === 'DEFAULT' && isStaticFlag(snapshot.compiled, result.key)) return 'STATIC';
  return result.reason;
}

/** Maps an engine result to OFREP (design records 009 and 020). */
export function toOfrep(snapshot: Snapshot, result: EvaluationResult): OfrepSuccess | OfrepFailure {
  const { key } = result;
  if (result.errorCode === 'FLAG_NOT_FOUND')
    return { key, errorCode: 'FLAG_NOT_FOUND', errorDetails: notFound(key).message };
  if (result.reason === 'ERROR' || result.variation === null) {
    return {
      key,
      errorCode: 'GENERAL',
      errorDetails: `Flag "${key}" cannot be served (${result.errorCode ?? 'MALFORMED_FLAG'}${
        result.prerequisiteKey ? `, prerequisite "${result.prerequisiteKey}"` : ''
      }).`,
    };
  }
  // The engine answers DEFAULT from a rollout fallthrough only for a context it could not place:
  // weights always sum to 100% (the management API enforces it), so the context has no identity.
  if (result.reason === 'DEFAULT' && hasRolloutFallthrough(snapshot.compiled, key)) {
    return {
      key,
      errorCode: 'TARGETING_KEY_MISSING',
      errorDetails: `Flag "${key}" is a percentage rollout; send a targetingKey in the context.`,
    };
  }
  // The flag's own metadata, then the evaluation's: on a clash the evaluation's key wins, so a
  // metadata entry can never misreport which rule or prerequisite decided (design record 020).
  const metadata: Record<string, string | number | boolean> = {
    ...flagMetadata(snapshot.compiled, key),
  };
  if (result.ruleId) metadata.ruleId = result.ruleId;
  if (result.prerequisiteKey) metadata.prerequisiteKey = result.prerequisiteKey;
  return {
    key,
    value: result.value,
    reason: ofrepReason(snapshot, result),
    variant: result.variation,
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
}

/**
 * One outcome a flag has been served with in bulk answers, and its serialized entry: what
 * {@link toOfrep} gives, as JSON with the comma that separates it from the entry before. A flag's
 * entry depends only on the outcome (the value is the variation's), and a flag has few outcomes,
 * so each is serialized once per snapshot (design record 062).
 */
interface OfrepEntry extends Pick<
  EvaluationResult,
  'variation' | 'reason' | 'ruleId' | 'prerequisiteKey' | 'errorCode'
> {
  bytes: Buffer;
  /** Whether the entry is an evaluation success, which counts as served. */
  success: boolean;
  /** 64 bits of a digest of its bytes, as two numbers: what the answer's ETag is mixed from. */
  digestHigh: number;
  digestLow: number;
}

/** Per snapshot, each flag's entries by position in the compiled environment. */
const bulkEntriesBySnapshot = new WeakMap<Snapshot, (OfrepEntry[] | undefined)[]>();
/** Per snapshot, every flag's position: what a server key's bulk answer evaluates. */
const everyFlag = new WeakMap<Snapshot, number[]>();

/**
 * The positions of the flags a key of `type` sees, in configuration order: a server key every
 * flag, a client key the client-side-visible ones.
 */
function visiblePositions(type: SdkKeyType, snapshot: Snapshot): readonly number[] {
  if (type !== 'ServerSide') return snapshot.clientFlags;
  let every = everyFlag.get(snapshot);
  if (!every) everyFlag.set(snapshot, (every = selectFlags(snapshot.compiled)));
  return every;
}

function bulkEntries(snapshot: Snapshot): (OfrepEntry[] | undefined)[] {
  let byFlag = bulkEntriesBySnapshot.get(snapshot);
  if (!byFlag) bulkEntriesBySnapshot.set(snapshot, (byFlag = []));
  return byFlag;
}

function bulkEntry(
  byFlag: (OfrepEntry[] | undefined)[],
  snapshot: Snapshot,
  position: number,
  result: EvaluationResult,
): OfrepEntry {
  const served = (byFlag[position] ??= []);
  for (const entry of served) {
    if (
      entry.variation === result.variation &&
      entry.reason === result.reason &&
      entry.ruleId === result.ruleId &&
      entry.prerequisiteKey === result.prerequisiteKey &&
      entry.errorCode === result.errorCode
    )
      return entry;
  }
  const answer = toOfrep(snapshot, result);
  const text = `,${JSON.stringify(answer)}`;
  const digest = hash('sha1', text, 'buffer');
  const entry: OfrepEntry = {
    variation: result.variation,
    reason: result.reason,
    ruleId: result.ruleId,
    prerequisiteKey: result.prerequisiteKey,
    errorCode: result.errorCode,
    bytes: Buffer.from(text),
    success: !isFailure(answer),
    digestHigh: digest.readUInt32LE(0),
    digestLow: digest.readUInt32LE(4),
  };
  served.push(entry);
  return entry;
}

const BULK_START = Buffer.from('{"flags":[');

/** An OFREP bulk answer: its bytes, its ETag, and how its serving counts. */
export interface BulkAnswer {
  body: Buffer;
  etag: string;
  /**
   * A remembered answer's tally, which counts each serving of its successes (design record 065),
   * or, for an answer evaluated for this request, its successes.
   */
  served: ServedTally | EvaluationResult[];
}

/** A remembered bulk answer. */
interface RememberedAnswer extends BulkAnswer {
  served: ServedTally;
  size: number;
}

const rememberedAnswers = new AnswerMemos<RememberedAnswer>();

/**
 * The OFREP bulk answer for a context: `{"flags":[…],"eventStreams":…}`. Remembered, per
 * event streams, by the values of the attributes the flags read (design record 065); else each
 * flag's cached entry is copied into one buffer, the same bytes as `JSON.stringify` of the mapped
 * results. Its ETag is mixed from the entries' digests and the event streams, so it changes
 * exactly when the answer's bytes do, on every node alike, without hashing the answer per request.
 */
export function ofrepBulkAnswer(
  snapshot: Snapshot,
  positions: readonly number[],
  context: EvaluationContext,
  eventStreams: string,
): BulkAnswer {
  const memo = rememberedAnswers.of(snapshot.compiled, positions, eventStreams);
  const key = memo.key(context);
  const remembered = key === undefined ? undefined : memo.get(key);
  if (remembered !== undefined) return remembered;
  const answer = writeBulkAnswer(snapshot, positions, context, eventStreams);
  if (key !== undefined) {
    const tally = new ServedTally(snapshot.environmentId, answer.served);
    memo.set(key, { ...answer, served: tally, size: answerSize(answer.body, tally) });
  }
  return answer;
}

/** Evaluates the flags and writes the bulk answer from each one's cached entry. */
function writeBulkAnswer(
  snapshot: Snapshot,
  positions: readonly number[],
  context: EvaluationContext,
  eventStreams: string,
): BulkAnswer & { served: EvaluationResult[] } {
  const results = evaluateSelected(snapshot.compiled, context, positions);
  const held = bulkEntries(snapshot);
  const entries = results.map((result, i) =>
    bulkEntry(held, snapshot, positions[i] as number, result),
  );
  const streamsDigest = hash('sha1', eventStreams, 'buffer');
  // Two 32-bit FNV-1a-style lanes over the entries' digests, in order.
  let high = streamsDigest.readUInt32LE(0);
  let low = streamsDigest.readUInt32LE(4);
  for (const entry of entries) {
    high = Math.imul(high ^ entry.digestHigh, 0x01000193);
    low = Math.imul(low ^ entry.digestLow, 0x5bd1e995);
  }
  const tag = Buffer.alloc(8);
  tag.writeUInt32LE(high >>> 0, 0);
  tag.writeUInt32LE(low >>> 0, 4);
  const body = joinFragments(
    BULK_START,
    entries.map((entry) => entry.bytes),
    Buffer.from(`],"eventStreams":${eventStreams}}`),
  );
  return {
    body,
    etag: `"${tag.toString('base64url')}"`,
    served: results.filter((_, i) => (entries[i] as OfrepEntry).success),
  };
}

/**
 * The results of a bulk answer that count as served (its successes), evaluated anew: success
 * is read from the flags' held entries, as the answer itself decided it.
 */
function servedResults(
  snapshot: Snapshot,
  positions: readonly number[],
  context: EvaluationContext,
): EvaluationResult[] {
  const held = bulkEntries(snapshot);
  return evaluateSelected(snapshot.compiled, context, positions).filter(
    (result, i) => bulkEntry(held, snapshot, positions[i] as number, result).success,
  );
}

function isFailure(response: OfrepSuccess | OfrepFailure): response is OfrepFailure {
  return 'errorCode' in response;
}

/** HTTP status of a single-flag failure (OFREP: 404 for FLAG_NOT_FOUND, 500 for GENERAL, else 400). */
function failureStatus(errorCode: OfrepErrorCode): number {
  if (errorCode === 'FLAG_NOT_FOUND') return 404;
  return errorCode === 'GENERAL' ? 500 : 400;
}

/** True when `If-None-Match` lists `etag` (weak comparison, as for GET; `*` matches). */
function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === etag || tag === '*');
}

/**
 * Spec: Evaluation API rule 1. With `X-Service-Reports-Evaluations: 1` the caller reports the
 * flags it reads through the events endpoints, so serving them does not count as evaluation.
 */
function reportsOwnEvaluations(headers: IncomingHttpHeaders): boolean {
  return headers['x-service-reports-evaluations'] === '1';
}

/** An SDK key refusal as OFREP words it: 401 without an error code, or GENERAL for an outage. */
function refusalError(failure: SdkAuthFailure): OfrepError {
  switch (failure.refusal) {
    case 'MissingKey':
      return new OfrepError(401, null, 'Send an SDK key as "Authorization: Bearer <key>".');
    case 'NotAnSdkKey':
      return new OfrepError(401, null, notAnSdkKeyDetail(failure));
    case 'InvalidKey':
    case 'WrongKeyType':
      return new OfrepError(401, null, 'The SDK key is not valid or has been revoked.');
    case 'EnvironmentGone':
      return new OfrepError(
        401,
        null,
        'The SDK key belongs to an environment that no longer exists.',
      );
    case 'ConfigurationUnavailable':
      // A key this node has never seen cannot be checked while the database is away (design
      // record 019): 503 with Retry-After, as on the evaluation API.
      return new OfrepError(
        503,
        'GENERAL',
        'The flag configuration is temporarily unavailable.',
        RETRY_AFTER_SECONDS,
      );
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * What an error on an OFREP route is answered with, in the protocol's wire shapes: the Fastify
 * routes' error handler and the lean lane's bulk route (design record 065) both send it.
 * `flagKey` is the single-flag route's.
 */
function ofrepFailure(error: unknown, log: FastifyBaseLogger, flagKey?: string): LeanReply {
  let failure: OfrepError;
  const { validation, statusCode, message } = error as Partial<FastifyError>;
  if (error instanceof OfrepError) {
    failure = error;
  } else if (error instanceof SdkAuthFailure) {
    if (!error.refusesKey) log.error({ err: error.cause }, 'environment configuration unavailable');
    failure = refusalError(error);
  } else if (validation) {
    const inContext = validation.some((issue) => issue.instancePath.startsWith('/context'));
    failure = new OfrepError(
      400,
      inContext ? 'INVALID_CONTEXT' : 'PARSE_ERROR',
      `The request body is not valid: ${validationSummary(fieldProblems(validation, 'body'))}`,
    );
  } else if ((error instanceof ApiError ? error.status : (statusCode ?? 500)) < 500) {
    // Unparseable JSON, an empty body, a media type that is not JSON, a body too large: in the
    // words the other APIs use.
    const mapped = toApiError(error);
    failure = new OfrepError(
      400,
      'PARSE_ERROR',
      mapped.status < 500 ? mapped.message : (message ?? ''),
    );
  } else {
    log.error({ err: error }, 'OFREP request failed');
    failure = new OfrepError(500, 'GENERAL', 'The flag evaluation failed.');
  }
  const headers = ['content-type', JSON_TYPE];
  if (failure.retryAfterSeconds !== undefined)
    headers.push('retry-after', String(failure.retryAfterSeconds));
  const body =
    failure.errorCode === null
      ? { errorDetails: failure.message }
      : {
          ...(flagKey !== undefined ? { key: flagKey } : {}),
          errorCode: failure.errorCode,
          errorDetails: failure.message,
        };
  return { status: failure.status, headers, body: JSON.stringify(body) };
}

/** Sends a {@link LeanReply} through Fastify. */
function sendReply(reply: FastifyReply, { status, headers, body }: LeanReply) {
  for (let i = 0; i < headers.length; i += 2)
    void reply.header(headers[i] as string, headers[i + 1]);
  return reply.status(status).send(body ?? undefined);
}

/** The OFREP answers, for the Fastify routes and the lean lane. */
export interface OfrepAnswers {
  /**
   * `POST /evaluate/flags`: the bulk answer for the request's SDK key and `context`, with its
   * ETag (304 when `If-None-Match` names it), compressed when large and the client accepts it.
   * @throws (or rejects with) SdkAuthFailure for a refused key
   */
  bulk(request: IncomingMessage, context: EvaluationContext): LeanReply | Promise<LeanReply>;
  /** `POST /evaluate/flags/{key}`: one flag's success. @throws OfrepError, SdkAuthFailure */
  single(
    request: IncomingMessage,
    flagKey: string,
    context: EvaluationContext,
  ): Promise<OfrepSuccess>;
}

/** The OFREP answers from the node's snapshots, SDK keys and usage counting. */
export function ofrepAnswers(services: EvaluationServices, sdk: SdkAuthenticator): OfrepAnswers {
  /** The request's SDK key (`Authorization`, or `X-API-Key`) and what it grants. */
  interface Authorized extends SdkAccess {
    key: string;
  }

  /** Authenticates the SDK key, at once when its grant and snapshot are at hand. */
  function authorize(headers: IncomingHttpHeaders): Authorized | Promise<Authorized> {
    const apiKey = headers['x-api-key'];
    const credential = headers.authorization ?? (typeof apiKey === 'string' ? apiKey : undefined);
    return whenReady(sdk.authenticateEither(credential), ({ type, snapshot }) => ({
      type,
      snapshot,
      key: sdkKeyOf(credential ?? ''),
    }));
  }

  const nowMs = () => services.clock.now().getTime();

  return {
    bulk: (request, context) =>
      whenReady(authorize(request.headers), ({ type, snapshot, key }): LeanReply => {
        // OFREP event streams (ADR-0008, design record 052): where the provider hears of changes.
        const positions = visiblePositions(type, snapshot);
        const { body, etag, served } = ofrepBulkAnswer(
          snapshot,
          positions,
          context,
          ofrepEventStreamsJson(snapshot, type, key),
        );
        if (evaluationEvents !== null)
          evaluationEvents.record(request.headers, snapshot, context, () =>
            evaluateSelected(snapshot.compiled, context, positions),
          );
        const headers = ['cache-control', 'no-cache'];
        if (body.length >= COMPRESS_FROM_BYTES) headers.push('vary', 'accept-encoding');
        if (matchesEtag(request.headers['if-none-match'], etag))
          return { status: 304, headers: [...headers, 'etag', etag], body: null };
        if (!reportsOwnEvaluations(request.headers)) {
          if (served instanceof ServedTally)
            services.usage.recordTally(served, nowMs(), context, () =>
              servedResults(snapshot, positions, context),
            );
          else services.usage.recordEvaluations(snapshot.environmentId, served, nowMs(), context);
        }
        const compressed = compressedAnswer(request, body);
        headers.push('content-type', JSON_TYPE);
        // A compressed answer is another representation: its ETag is the answer's, weak.
        if (compressed.encoding === undefined) headers.push('etag', etag);
        else headers.push('etag', `W/${etag}`, 'content-encoding', compressed.encoding);
        return { status: 200, headers, body: compressed.body };
      }),

    async single(request, flagKey, context) {
      const { type, snapshot } = await authorize(request.headers);
      // A flag the key may not see is reported exactly like one that does not exist.
      if (type === 'ClientSide' && !snapshot.clientSideKeys.has(flagKey)) throw notFound(flagKey);
      const result = evaluateFlag(snapshot.compiled, flagKey, context);
      if (evaluationEvents !== null)
        evaluationEvents.record(request.headers, snapshot, context, () => [result]);
      const response = toOfrep(snapshot, result);
      if (isFailure(response)) {
        throw new OfrepError(
          failureStatus(response.errorCode),
          response.errorCode,
          response.errorDetails,
        );
      }
      if (!reportsOwnEvaluations(request.headers))
        services.usage.recordEvaluations(snapshot.environmentId, [result], nowMs(), context);
      return response;
    },
  };
}

const BULK_PATH = '/ofrep/v1/evaluate/flags';

/**
 * OFREP bulk evaluation in the lean lane (design records 030 and 065): browsers and client
 * providers ask for every flag at once, so it leaves Fastify's request lifecycle as the
 * evaluation API's hot routes do. `compile` is the Fastify routes' validator compiler.
 */
export function ofrepLeanRoute(
  answers: OfrepAnswers,
  compile: (schema: TSchema) => ValidateFunction,
  durations: Pick<RequestDurations, 'recorder'>,
): LeanRoute {
  return {
    path: BULK_PATH,
    validate: compile(RequestSchema),
    answer: (request, body) =>
      answers.bulk(request, (body as Static<typeof RequestSchema>).context ?? {}),
    failure: (error, log) => ofrepFailure(error, log),
    observe: durations.recorder('POST', BULK_PATH),
  };
}

/**
 * Registers `POST /evaluate/flags/{key}` and `POST /evaluate/flags` (mount under `/ofrep/v1`).
 * SDK keys travel as `Authorization: Bearer <key>` (or bare) or `X-API-Key: <key>`; server keys
 * see every flag, client keys only client-side-visible ones (others are FLAG_NOT_FOUND).
 * Answers come from the same in-memory snapshots as the Vexil evaluation API.
 */
export function registerOfrepApi(app: App, answers: OfrepAnswers): void {
  app.setErrorHandler((error, request, reply) =>
    sendReply(
      reply,
      ofrepFailure(error, request.log, (request.params as { key?: string } | undefined)?.key),
    ),
  );
  answerUnmatchedRequests(app, ({ method, path, allowed }) =>
    allowed.length > 0
      ? new OfrepError(
          405,
          null,
          `${method} is not allowed on ${path}; it accepts ${allowed.join(', ')}.`,
        )
      : new OfrepError(404, null, `No route ${method} ${path}.`),
  );

  app.post(
    '/evaluate/flags/:key',
    {
      schema: {
        tags: ['ofrep'],
        summary: 'OFREP single flag evaluation',
        security: [{ sdkKey: [] }],
        params: Type.Object({ key: Type.String() }),
        body: RequestSchema,
        response: { 200: SuccessSchema },
      },
    },
    async (request, reply) => {
      const response = await answers.single(
        request.raw,
        request.params.key,
        request.body.context ?? {},
      );
      return reply.type('application/json').send(response);
    },
  );

  app.post(
    '/evaluate/flags',
    {
      schema: {
        tags: ['ofrep'],
        summary: 'OFREP bulk evaluation',
        security: [{ sdkKey: [] }],
        body: RequestSchema,
      },
    },
    async (request, reply) =>
      sendReply(reply, await answers.bulk(request.raw, request.body.context ?? {})),
  );
}
