import { isSdkKey, RELAY_KEY_KIND, secretKind } from '../auth/secrets.js';
import type { Clock } from '../clock.js';
import type { UsageAggregator } from '../usage/aggregator.js';
import type { SdkKeyGrant } from './sdk-key-grant.js';
import type { SdkKeyResolver } from './sdk-keys.js';
import type { Snapshot, SnapshotStore } from './snapshots.js';

/** The two kinds of SDK key (spec: SDK keys). */
export type SdkKeyType = SdkKeyGrant['type'];

/**
 * Why an SDK key was refused, in no API's words: each API that takes SDK keys (evaluation,
 * streaming, events, OFREP) maps it to its own error shape.
 */
export type SdkRefusal =
  /** No key in the request. */
  | 'MissingKey'
  /** An unknown or revoked key. */
  | 'InvalidKey'
  /** Another kind of Vexil credential (a personal access token…) sent as an SDK key. */
  | 'NotAnSdkKey'
  /** A key of the other type than the endpoint needs. */
  | 'WrongKeyType'
  /** The key's environment has been deleted. */
  | 'EnvironmentGone'
  /** The key is fine but its configuration cannot be loaded now (the database is unavailable). */
  | 'ConfigurationUnavailable';

/** An SDK key refused by {@link SdkAuthenticator}; `cause` holds the error behind an outage. */
export class SdkAuthFailure extends Error {
  constructor(
    readonly refusal: SdkRefusal,
    /** The key type the endpoint needs, for `WrongKeyType`. */
    readonly needed?: SdkKeyType,
    options?: ErrorOptions,
    /** What was sent instead, for `NotAnSdkKey`: "a personal access token"… */
    readonly sent?: string,
  ) {
    super(`SDK key refused: ${refusal}`, options);
  }

  /** True when the key itself is refused; false for a passing outage, which a retry may cure. */
  get refusesKey(): boolean {
    return this.refusal !== 'ConfigurationUnavailable';
  }
}

/** The words of a `NotAnSdkKey` refusal, the same on every API that takes SDK keys. */
export function notAnSdkKeyDetail(failure: SdkAuthFailure): string {
  const takenBy =
    failure.sent === RELAY_KEY_KIND
      ? 'the relay routes (/v1/relay/…)'
      : 'the management API (/api/v1)';
  return `The key sent is ${failure.sent ?? 'not an SDK key'}, which only ${takenBy} takes; send an SDK key of the environment (vxl_srv_… or vxl_cli_…).`;
}

/** An `Authorization` (or `X-API-Key`) value: the key, bare or after `Bearer ` (design record 006). */
const SDK_KEY = /^(?:Bearer\s+)?(\S+)\s*$/i;

/** The key an `Authorization` (or `X-API-Key`) value carries, without `Bearer `; '' when none. */
export function sdkKeyOf(header: string): string {
  return SDK_KEY.exec(header)?.[1] ?? '';
}

/** What an SDK key grants: its type and its environment's snapshot. */
export interface SdkAccess {
  type: SdkKeyType;
  snapshot: Snapshot;
}

/**
 * Calls `next` with `value` at once, or once it settles when it is a promise: an SDK key's
 * snapshot is almost always at hand, and a promise per request costs measurably.
 */
export function whenReady<T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/**
 * The one SDK-key authenticator: header value → key → grant → the environment's snapshot, for
 * the evaluation API, its streams and events intake, and OFREP (design record 018). Each key it
 * lets through is noted as used at that moment; the note reaches the key's `lastUsedAt` with the
 * next usage flush (design record 025).
 */
export class SdkAuthenticator {
  constructor(
    private readonly keys: SdkKeyResolver,
    private readonly snapshots: SnapshotStore,
    private readonly clock: Clock,
    private readonly uses: Pick<UsageAggregator, 'recordKeyUse'>,
  ) {}

  /**
   * The snapshot of the environment a key of type `type` in `header` grants: at once when the
   * key's grant is cached and the snapshot built, as on nearly every request (design record 016);
   * otherwise a promise.
   * @throws SdkAuthFailure (or rejects with it) when the key is refused or the configuration
   *   cannot be loaded
   */
  authenticate(header: string | undefined, type: SdkKeyType): Snapshot | Promise<Snapshot> {
    return whenReady(this.access(header, type), (access) => access.snapshot);
  }

  /**
   * Like {@link authenticate} for an endpoint that takes either type of key, and says which the
   * key is (OFREP shows a client key only the client-side-visible flags).
   * @throws SdkAuthFailure (or rejects with it)
   */
  authenticateEither(header: string | undefined): SdkAccess | Promise<SdkAccess> {
    return this.access(header, null);
  }

  /** The key's access, at once when its grant is cached and its snapshot built. */
  private access(
    header: string | undefined,
    type: SdkKeyType | null,
  ): SdkAccess | Promise<SdkAccess> {
    const key = header === undefined ? undefined : SDK_KEY.exec(header)?.[1];
    const nowMs = this.clock.now().getTime();
    const grant = key === undefined ? undefined : this.keys.cached(key, nowMs);
    if (grant && (type === null || grant.type === type)) {
      const snapshot = this.snapshots.ready(grant.environmentId);
      if (snapshot) {
        this.uses.recordKeyUse(grant.keyId, nowMs);
        return { type: grant.type, snapshot };
      }
    }
    return this.load(key, nowMs, type);
  }

  /** The chain when it must wait: looks the key up, checks its type, builds the snapshot. */
  private async load(
    key: string | undefined,
    nowMs: number,
    type: SdkKeyType | null,
  ): Promise<SdkAccess> {
    if (!key) throw new SdkAuthFailure('MissingKey');
    const grant = await this.keys.resolve(key, nowMs);
    if (!grant) {
      const kind = isSdkKey(key) ? null : secretKind(key);
      throw kind === null
        ? new SdkAuthFailure('InvalidKey')
        : new SdkAuthFailure('NotAnSdkKey', undefined, undefined, kind);
    }
    if (type !== null && grant.type !== type) throw new SdkAuthFailure('WrongKeyType', type);
    let snapshot: Snapshot | undefined;
    try {
      snapshot = await this.snapshots.get(grant.environmentId);
    } catch (error) {
      throw new SdkAuthFailure('ConfigurationUnavailable', undefined, { cause: error });
    }
    if (!snapshot) throw new SdkAuthFailure('EnvironmentGone');
    this.uses.recordKeyUse(grant.keyId, nowMs);
    return { type: grant.type, snapshot };
  }
}
