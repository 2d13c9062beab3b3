import type { FastifyRequest } from 'fastify';
import type { EvaluationReason } from '@vexil/engine';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { Type } from 'typebox';
import type { App } from '../http/app-instance.js';
import { ProblemError } from './problem.js';
import type { SdkAuthenticator } from './sdk-authenticator.js';
import type { Snapshot } from './snapshots.js';
import type { EvaluationServices } from '../services.js';
import { HOUR_MS, type DiscardReason, type UsageAggregator } from '../usage/aggregator.js';

/** Events per request; a larger batch is refused with 413 (design record 008). */
export const MAX_EVENTS_PER_REQUEST = 1000;
/** Body size of an events request; a larger body is refused with 413. */
export const EVENTS_BODY_LIMIT_BYTES = 512 * 1024;
/** Spec: Limits, client event `flagKey` length. */
export const MAX_FLAG_KEY_LENGTH = 256;
/** Spec: Limits, distinct `Custom` event keys introduced per request. */
export const MAX_CUSTOM_EVENT_KEYS_PER_REQUEST = 50;
/** How far an event's `timestamp` may lie from the server's clock, either way. */
export const EVENT_TIMESTAMP_TOLERANCE_MS = 24 * HOUR_MS;

/** Where accepted events go and which flag keys they may name. */
export interface IntakeTarget {
  usage: UsageAggregator;
  environmentId: string;
  knownFlag: (flagKey: string) => boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Records a batch of analytics events (spec: Evaluation API rules 4 and 5; design record 008).
 * `Evaluation` events count as evaluations of `flagKey` serving `variation`; `Custom` events
 * count under their event key, carried in `flagKey`. Each event that breaks a rule is dropped and
 * counted by reason; the rest of the batch is unaffected. Events are counted at their own
 * `timestamp` (capped at now), or at `nowMs` when it is omitted.
 */
export function intakeEvents(
  events: readonly unknown[],
  target: IntakeTarget,
  nowMs: number,
): void {
  const { usage, environmentId } = target;
  const customKeys = new Set<string>();
  const discard = (reason: DiscardReason) => usage.recordDiscard(reason);
  for (const event of events) {
    if (!isRecord(event) || (event.type !== 'Evaluation' && event.type !== 'Custom')) {
      discard('invalid');
      continue;
    }
    const { flagKey, timestamp } = event;
    // PostgreSQL text cannot hold NUL: one such key would fail every later flush of the counts.
    if (typeof flagKey !== 'string' || flagKey === '' || flagKey.includes('\u0000')) {
      discard('invalid');
      continue;
    }
    if (flagKey.length > MAX_FLAG_KEY_LENGTH) {
      discard('flagKeyTooLong');
      continue;
    }
    let atMs = nowMs;
    if (timestamp !== undefined && timestamp !== null) {
      atMs = typeof timestamp === 'string' ? Date.parse(timestamp) : Number.NaN;
      if (Number.isNaN(atMs)) {
        discard('invalid');
        continue;
      }
      if (Math.abs(atMs - nowMs) > EVENT_TIMESTAMP_TOLERANCE_MS) {
        discard('timestamp');
        continue;
      }
      // A fast client clock must not put a "last evaluated" time in the future.
      atMs = Math.min(atMs, nowMs);
    }
    if (event.type === 'Evaluation') {
      if (
        typeof event.variation !== 'string' ||
        event.variation === '' ||
        event.variation.includes('\u0000')
      ) {
        discard('invalid');
      } else if (!target.knownFlag(flagKey)) {
        discard('unknownFlag');
      } else {
        usage.recordEvaluation(
          environmentId,
          flagKey,
          event.variation,
          atMs,
          typeof event.userId === 'string' ? { userId: event.userId } : undefined,
          reportedReason(event.reason),
        );
      }
      continue;
    }
    if (!customKeys.has(flagKey)) {
      if (customKeys.size >= MAX_CUSTOM_EVENT_KEYS_PER_REQUEST) {
        discard('tooManyEventKeys');
        continue;
      }
      customKeys.add(flagKey);
    }
    usage.recordCustomEvent(
      environmentId,
      flagKey,
      atMs,
      typeof event.userId === 'string' ? event.userId : undefined,
      event.metadata,
    );
  }
}

/**
 * Records a batch of events sent with a key of `type` for the snapshot's environment, as
 * `/v1/sdk/events` (`ServerSide`) and `/v1/client/events` (`ClientSide`) do, and as the relay
 * intake does for the events a relay received (design record 045).
 * @throws ProblemError 413 for more than {@link MAX_EVENTS_PER_REQUEST} events
 */
export function acceptEvents(
  services: Pick<EvaluationServices, 'usage' | 'clock'>,
  snapshot: Pick<Snapshot, 'environmentId' | 'clientSideKeys' | 'compiled'>,
  events: unknown[],
  type: 'ClientSide' | 'ServerSide',
): { accepted: number } {
  if (events.length > MAX_EVENTS_PER_REQUEST) {
    throw new ProblemError(
      413,
      'Too many events',
      `A request may carry at most ${MAX_EVENTS_PER_REQUEST} events; this one has ${events.length}.`,
      { maxEvents: MAX_EVENTS_PER_REQUEST },
    );
  }
  const knownKeys: ReadonlySet<string> | ReadonlyMap<string, number> =
    type === 'ClientSide' ? snapshot.clientSideKeys : snapshot.compiled.flagIndex;
  intakeEvents(
    events,
    {
      usage: services.usage,
      environmentId: snapshot.environmentId,
      knownFlag: (key) => knownKeys.has(key),
    },
    services.clock.now().getTime(),
  );
  return { accepted: events.length };
}

/**
 * `POST /v1/client/events` (client key, rate limited per client IP) and `POST /v1/sdk/events`
 * (server key): analytics intake, answered `202 {accepted}` whatever is discarded.
 * Request-level refusals, as problem bodies: 401 for a missing or invalid key, 413 for a body over
 * {@link EVENTS_BODY_LIMIT_BYTES} or more than {@link MAX_EVENTS_PER_REQUEST} events, 429 with
 * `Retry-After` when the client IP's quota is spent.
 */
export function registerEventRoutes(
  app: App,
  services: EvaluationServices,
  sdk: SdkAuthenticator,
): void {
  const { points, windowSeconds } = services.config.clientEventsRateLimit;
  const perIp = new RateLimiterMemory({ points, duration: windowSeconds });

  const schema = {
    tags: ['evaluation'],
    security: [{ sdkKey: [] }],
    body: Type.Object({ events: Type.Array(Type.Unknown()) }),
    response: { 202: Type.Object({ accepted: Type.Integer() }) },
  };

  const accept = async (
    request: FastifyRequest,
    events: unknown[],
    type: 'ClientSide' | 'ServerSide',
  ) => {
    const snapshot = await sdk.authenticate(request.headers.authorization, type);
    return acceptEvents(services, snapshot, events, type);
  };

  app.post(
    '/client/events',
    {
      schema,
      bodyLimit: EVENTS_BODY_LIMIT_BYTES,
      // Before the body is read: client keys are public, so the IP is what is limited.
      onRequest: async (request) => {
        try {
          await perIp.consume(request.ip);
        } catch (rejection) {
          if (!(rejection instanceof RateLimiterRes)) throw rejection;
          const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
          throw new ProblemError(
            429,
            'Too Many Requests',
            `Too many event requests from this address. Retry in ${retryAfter} s.`,
            {},
            retryAfter,
          );
        }
      },
    },
    async (request, reply) =>
      reply.status(202).send(await accept(request, request.body.events, 'ClientSide')),
  );

  app.post('/sdk/events', { schema, bodyLimit: EVENTS_BODY_LIMIT_BYTES }, async (request, reply) =>
    reply.status(202).send(await accept(request, request.body.events, 'ServerSide')),
  );
}

/**
 * The reason an `Evaluation` event reports, as far as exposures need it (design record 064): a
 * split (`SPLIT`, any case) is an experiment's exposure, any other reason is not; an event
 * without one is taken as exposed (an SDK that does not report reasons).
 */
function reportedReason(reason: unknown): EvaluationReason | undefined {
  if (typeof reason !== 'string') return undefined;
  return reason.toUpperCase() === 'SPLIT' ? 'SPLIT' : 'DEFAULT';
}
