import { MAX_EVENTS_PER_USER } from '../usage/experiment-exposures.js';
import type { SdkFlag, SdkSegment } from '@vexil/engine';
import { Type, type Static } from 'typebox';
import type { ConfigurationChange } from '../evaluation/configuration-changes.js';
import type { Snapshot } from '../evaluation/snapshots.js';

/**
 * The relay protocol (contract: `relay.md`; design records 044 and 045): what an upstream
 * (a full node with the evaluation role, or a relay passing its own upstream on) serves to the
 * relays that follow it, and what relays send back. Both sides import this module; every route
 * below lives under the evaluation prefix (`/v1`) and takes `Authorization: Bearer vxr_…`.
 * A missing, unknown or revoked relay key is answered 401 with a problem body.
 */

/** The protocol version announced in the feed's `hello` event. */
export const RELAY_PROTOCOL_VERSION = 1;

/** The prefix of every relay key's secret. */
export const RELAY_KEY_PREFIX = 'vxr_';

/** Paths, relative to the evaluation prefix (`/v1`). */
export const RELAY_FEED_PATH = '/relay/feed';
export const RELAY_USAGE_PATH = '/relay/usage';
export const RELAY_EVENTS_PATH = '/relay/events';

/**
 * How often the feed writes a `: keep-alive` comment line (an upstream's `VEXIL_STREAM_HEARTBEAT`,
 * 15 s by default): a relay that hears nothing for several of these can take the stream as lost.
 */
export const RELAY_KEEP_ALIVE_MS = 15_000;

/** Most rows of each kind in one `POST /v1/relay/usage` body; a larger body is refused with 413. */
export const MAX_RELAY_USAGE_ROWS = 10_000;
/** Body size of `POST /v1/relay/usage` and `POST /v1/relay/events`. */
export const RELAY_INTAKE_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

const Uuid = Type.String({ minLength: 1, maxLength: 64 });
const SdkKeyType = Type.Union([Type.Literal('ServerSide'), Type.Literal('ClientSide')]);

// ───────────────────────────── POST /v1/relay/feed ─────────────────────────────

/**
 * The feed's request body: for each environment the relay already holds, the version it holds
 * (`{}` on a cold start). Environments whose version matches are not sent again (resume).
 */
export const RelayFeedBody = Type.Object({
  known: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
  /**
   * The relay takes `patch` events: a change to an environment it holds comes as what changed,
   * not as the environment's whole state (design record 060). Relays before it leave it out.
   */
  patches: Type.Optional(Type.Boolean()),
});
export type RelayFeedBody = Static<typeof RelayFeedBody>;

/** An active SDK key of an environment, by the hash the upstream stores (hex SHA-256). */
export const RelaySdkKey = Type.Object({
  id: Uuid,
  hash: Type.String({ minLength: 1 }),
  type: SdkKeyType,
});
export type RelaySdkKey = Static<typeof RelaySdkKey>;

/**
 * The `GET /v1/sdk/flags` document of an environment, exactly as the upstream serves it, so that
 * the relay's answers and ETags are byte for byte the upstream's. Flags and segments are the
 * engine's `SdkFlag` and `SdkSegment`, passed on unchanged.
 */
export const RelayConfiguration = Type.Object({
  environment: Type.String(),
  version: Type.Integer({ minimum: 0 }),
  flags: Type.Array(Type.Unsafe<SdkFlag>(Type.Object({}, { additionalProperties: true }))),
  segments: Type.Array(Type.Unsafe<SdkSegment>(Type.Object({}, { additionalProperties: true }))),
});
export type RelayConfiguration = Static<typeof RelayConfiguration>;

/** `event: hello` — first on every stream. */
export const RelayHelloEvent = Type.Object({
  protocol: Type.Literal(RELAY_PROTOCOL_VERSION),
  /**
   * A stable identity of the upstream's data: a full node's database fingerprint (as in its
   * snapshot copies), or, from a relay, its own upstream's identity passed on. A relay never
   * serves a cached copy made from another upstream.
   */
  upstream: Type.String({ minLength: 1 }),
  relayKeyId: Uuid,
});
export type RelayHelloEvent = Static<typeof RelayHelloEvent>;

/**
 * `event: environment` — an environment's whole state: sent for every covered environment whose
 * version differs from `known`, then on every change. The same fields as a snapshot copy's
 * (`CopiedConfiguration` plus its `CopiedKey[]`, `evaluation/snapshot-copies.ts`).
 */
export const RelayEnvironmentEvent = Type.Object({
  environmentId: Uuid,
  organizationId: Uuid,
  projectId: Uuid,
  version: Type.Integer({ minimum: 0 }),
  /** Keys of the flags served to client-side SDKs. */
  clientSideKeys: Type.Array(Type.String()),
  configuration: RelayConfiguration,
  sdkKeys: Type.Array(RelaySdkKey),
});
export type RelayEnvironmentEvent = Static<typeof RelayEnvironmentEvent>;

/**
 * `event: patch` — what changed in an environment the relay holds at version `from` (only to
 * relays that asked for patches): the flags and segments added or changed, as in the document at
 * `version`, the keys of those deleted, and the keys in document order when the set of keys
 * changed. The relay rebuilds the document and checks it against `etag`, the upstream's.
 */
export const RelayPatchEvent = Type.Object({
  environmentId: Uuid,
  from: Type.Integer({ minimum: 0 }),
  version: Type.Integer({ minimum: 0 }),
  etag: Type.String({ minLength: 1 }),
  clientSideKeys: Type.Array(Type.String()),
  flags: RelayConfiguration.properties.flags,
  deletedFlags: Type.Array(Type.String()),
  flagKeys: Type.Optional(Type.Array(Type.String())),
  segments: RelayConfiguration.properties.segments,
  deletedSegments: Type.Array(Type.String()),
  segmentKeys: Type.Optional(Type.Array(Type.String())),
});
export type RelayPatchEvent = Static<typeof RelayPatchEvent>;

/**
 * The `patch` event of one change. Flags go as the upstream's document holds them, so the
 * relay's rebuilt document is byte for byte the upstream's.
 */
export function relayPatchFrame(change: ConfigurationChange): string {
  const { flagKeys, segmentKeys } = change;
  const data = JSON.stringify({
    environmentId: change.environmentId,
    from: change.from,
    version: change.to,
    etag: change.etag,
    clientSideKeys: change.clientSideKeys,
    deletedFlags: change.deletedFlags,
    ...(flagKeys && { flagKeys }),
    segments: change.segments,
    deletedSegments: change.deletedSegments,
    ...(segmentKeys && { segmentKeys }),
  });
  const flags = change.flags.map((flag) => flag.json).join(',');
  return `event: patch\ndata: ${data.slice(0, -1)},"flags":[${flags}]}\n\n`;
}

/** `event: keys` — only the environment's active SDK keys changed (one created or revoked). */
export const RelayKeysEvent = Type.Object({
  environmentId: Uuid,
  sdkKeys: Type.Array(RelaySdkKey),
});
export type RelayKeysEvent = Static<typeof RelayKeysEvent>;

/** `event: removed` — the environment was deleted or left the relay key's scope. */
export const RelayRemovedEvent = Type.Object({ environmentId: Uuid });
export type RelayRemovedEvent = Static<typeof RelayRemovedEvent>;

/** `event: ready` (once, after the initial set) and `event: revoked` (then the stream closes). */
export const RelayEmptyEvent = Type.Object({});
export type RelayEmptyEvent = Static<typeof RelayEmptyEvent>;

/** Every event of the feed, by its SSE `event:` name. */
export interface RelayFeedEvents {
  hello: RelayHelloEvent;
  environment: RelayEnvironmentEvent;
  patch: RelayPatchEvent;
  keys: RelayKeysEvent;
  removed: RelayRemovedEvent;
  ready: RelayEmptyEvent;
  revoked: RelayEmptyEvent;
}
export type RelayFeedEventName = keyof RelayFeedEvents;

/** One SSE frame of the feed: `event: <name>\ndata: <JSON>\n\n`. */
export function relayFeedFrame<E extends RelayFeedEventName>(
  event: E,
  data: RelayFeedEvents[E],
): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The `environment` event of an environment held as `snapshot`, as chunks to write in order. The
 * snapshot's document is one line of JSON, sent as held, so the receiving relay's copy is byte
 * for byte the sender's; no parsed configuration is needed (design record 049).
 *
 * @param sdkKeys the JSON of the environment's active {@link RelaySdkKey}s
 */
export async function relayEnvironmentFrame(
  snapshot: Snapshot,
  sdkKeys: string,
): Promise<[string, Buffer, string]> {
  const document = await snapshot.document.plain();
  const head = JSON.stringify({
    environmentId: snapshot.environmentId,
    organizationId: snapshot.organizationId,
    projectId: snapshot.projectId,
    version: snapshot.version,
    clientSideKeys: [...snapshot.clientSideKeys],
  });
  return [
    `event: environment\ndata: ${head.slice(0, -1)},"configuration":`,
    document,
    `,"sdkKeys":${sdkKeys}}\n\n`,
  ];
}

// ───────────────────────────── POST /v1/relay/usage ─────────────────────────────

/**
 * Evaluation counts: `count` evaluations of `flagKey` in `environmentId` serving `variation`
 * in the hour starting at `hourMs` (epoch ms, a multiple of 3,600,000). A null variation served
 * none and is not counted (as on the upstream). `lastAtMs`, when given, is the latest of these
 * evaluations (the flag's "last evaluated"); without it the start of the hour is taken.
 */
export const RelayEvaluationCount = Type.Object({
  environmentId: Uuid,
  flagKey: Type.String({ minLength: 1, maxLength: 256 }),
  variation: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
  hourMs: Type.Integer({ minimum: 0 }),
  count: Type.Integer({ minimum: 1 }),
  lastAtMs: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type RelayEvaluationCount = Static<typeof RelayEvaluationCount>;

/** Custom-event counts: `count` `track(eventKey)` calls in the hour starting at `hourMs`. */
export const RelayCustomEventCount = Type.Object({
  environmentId: Uuid,
  eventKey: Type.String({ minLength: 1, maxLength: 256 }),
  hourMs: Type.Integer({ minimum: 0 }),
  count: Type.Integer({ minimum: 1 }),
});
export type RelayCustomEventCount = Static<typeof RelayCustomEventCount>;

/** The last use of an SDK key on the relay (its `lastUsedAt` upstream). */
export const RelayKeyUse = Type.Object({ keyId: Uuid, atMs: Type.Integer({ minimum: 0 }) });
export type RelayKeyUse = Static<typeof RelayKeyUse>;

/**
 * What the relay saw of one user of a guarded release plan (design record 046), as the upstream
 * stores it: by the user's hash (`userHash` of the bucketing identity), never the identity.
 * `side` is 1 when the earliest exposure served the plan's variation, 0 for another; the
 * earliest exposure and the latest metric event are kept.
 */
export const RelayExposure = Type.Object({
  planId: Uuid,
  userHash: Type.String({ minLength: 1, maxLength: 64 }),
  side: Type.Union([Type.Literal(0), Type.Literal(1), Type.Null()]),
  exposedMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  metricMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
});
export type RelayExposure = Static<typeof RelayExposure>;

/** A user's first exposure to a running experiment, seen by the relay (design record 064). */
export const RelayExperimentExposure = Type.Object({
  experimentId: Uuid,
  userHash: Type.String({ minLength: 1, maxLength: 64 }),
  variation: Type.String({ minLength: 1, maxLength: 200 }),
  exposedMs: Type.Integer({ minimum: 0 }),
});

/**
 * A user's events of one experiment metric, seen by the relay: each event's time and its number
 * (null without one), in step. The upstream counts those within the metric's window after the
 * user's first exposure.
 */
export const RelayExperimentEvents = Type.Object({
  experimentId: Uuid,
  metricId: Uuid,
  userHash: Type.String({ minLength: 1, maxLength: 64 }),
  times: Type.Array(Type.Integer({ minimum: 0 }), { maxItems: MAX_EVENTS_PER_USER }),
  values: Type.Array(Type.Union([Type.Number(), Type.Null()]), {
    maxItems: MAX_EVENTS_PER_USER,
  }),
  windowMs: Type.Integer({ minimum: 0 }),
});

/**
 * `POST /v1/relay/usage` → 200 {@link RelayUsageResponse}. Added into the upstream's usage counts
 * as direct SDK traffic would be; `exposures` into its guarded release plans' exposures (rows of
 * plans not active, or outside the key's scope, are dropped). An environment of the counts
 * outside the key's scope → 403 (nothing of the body is recorded).
 */
export const RelayUsageBody = Type.Object({
  evaluations: Type.Array(RelayEvaluationCount, { maxItems: MAX_RELAY_USAGE_ROWS }),
  customEvents: Type.Array(RelayCustomEventCount, { maxItems: MAX_RELAY_USAGE_ROWS }),
  keyUses: Type.Array(RelayKeyUse, { maxItems: MAX_RELAY_USAGE_ROWS }),
  exposures: Type.Optional(Type.Array(RelayExposure, { maxItems: MAX_RELAY_USAGE_ROWS })),
  experimentExposures: Type.Optional(
    Type.Array(RelayExperimentExposure, { maxItems: MAX_RELAY_USAGE_ROWS }),
  ),
  experimentEvents: Type.Optional(
    Type.Array(RelayExperimentEvents, { maxItems: MAX_RELAY_USAGE_ROWS }),
  ),
});
export type RelayUsageBody = Static<typeof RelayUsageBody>;

/** An active guarded release plan in the relay key's scope: what the relay records exposures of. */
export const RelayGuardedPlan = Type.Object({
  planId: Uuid,
  environmentId: Uuid,
  flagKey: Type.String({ minLength: 1 }),
  /** The variation the plan releases: side 1. */
  targetVariationKey: Type.String({ minLength: 1 }),
  /** The `Custom` event key of the guard's metric. */
  metric: Type.String(),
});

/** A running experiment in the relay key's scope: what the relay records exposures and events of. */
export const RelayRunningExperiment = Type.Object({
  experimentId: Uuid,
  environmentId: Uuid,
  flagKey: Type.String({ minLength: 1 }),
  metrics: Type.Array(
    Type.Object({
      metricId: Uuid,
      eventKey: Type.String({ minLength: 1 }),
      valueProperty: Type.Union([Type.String(), Type.Null()]),
      windowMs: Type.Integer({ minimum: 0 }),
    }),
  ),
});

/**
 * The answer to `POST /v1/relay/usage`: the active guarded release plans and the running
 * experiments of the key's environments, as the upstream knows them now. The relay records
 * exposures of these from then on (its usage flushes keep it current); an upstream that answers
 * 204 has none for it, and one without `experiments` runs none.
 */
export const RelayUsageResponse = Type.Object({
  plans: Type.Array(RelayGuardedPlan),
  experiments: Type.Optional(Type.Array(RelayRunningExperiment)),
});
export type RelayUsageResponse = Static<typeof RelayUsageResponse>;

// ───────────────────────────── POST /v1/relay/events ─────────────────────────────

/**
 * `POST /v1/relay/events` → 202 `{ accepted }`: a batch of events as received by
 * `/v1/sdk/events` (`ServerSide`) or `/v1/client/events` (`ClientSide`), handled as the upstream
 * handles those routes' events (same validation, same limits, same recording). An environment
 * outside the key's scope → 403.
 */
export const RelayEventsBody = Type.Object({
  environmentId: Uuid,
  keyType: SdkKeyType,
  events: Type.Array(Type.Unknown()),
});
export type RelayEventsBody = Static<typeof RelayEventsBody>;

export const RelayEventsResponse = Type.Object({ accepted: Type.Integer() });
export type RelayEventsResponse = Static<typeof RelayEventsResponse>;
