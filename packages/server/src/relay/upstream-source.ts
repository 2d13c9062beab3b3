import type { FastifyBaseLogger } from 'fastify';
import type { SdkKeyGrant } from '../evaluation/sdk-key-grant.js';
import { SdkKeyResolver } from '../evaluation/sdk-keys.js';
import type { CopiedKey, SnapshotCopies } from '../evaluation/snapshot-copies.js';
import {
  patchedSnapshot,
  snapshotFromCopy,
  SnapshotStore,
  type Snapshot,
} from '../evaluation/snapshots.js';
import type { StreamRelay } from '../evaluation/streaming.js';
import type { EvaluationSource } from '../evaluation/routes.js';
import type {
  RelayEnvironmentEvent as FeedEnvironment,
  RelayPatchEvent,
  RelaySdkKey,
} from '../relay-feed/protocol.js';

/**
 * What a relay holds of one environment: the snapshot (whose compressed document is the only copy
 * of the configuration; the feed's parsed event is not kept, design record 049) and its SDK keys.
 */
export interface HeldEnvironment {
  snapshot: Snapshot;
  sdkKeys: RelaySdkKey[];
}

/** A change to what a relay holds, as its own downstream feed passes it on. */
export type HeldChange =
  | ({ kind: 'environment' } & HeldEnvironment)
  | { kind: 'keys'; environmentId: string; sdkKeys: RelaySdkKey[] }
  | { kind: 'removed'; environmentId: string };

/** A relay holds one process's streams: `identify` reaches no other process. */
const THIS_PROCESS_ONLY: StreamRelay = {
  onIdentify: () => undefined,
  identifyElsewhere: () => Promise.resolve(false),
};

/**
 * A relay's evaluation source (design record 044): the environments and SDK key hashes its
 * upstream's feed sent, held in memory as snapshots built exactly as snapshots are restored from
 * copies on disk, so that its answers and ETags are byte for byte the upstream's. With
 * `VEXIL_SNAPSHOT_CACHE_DIR` every environment received is copied to disk (naming the upstream),
 * and a relay started while its upstream is unreachable serves the good copies.
 */
export class UpstreamSource implements EvaluationSource {
  readonly snapshots: SnapshotStore;
  readonly sdkKeys: SdkKeyResolver;
  readonly streams = THIS_PROCESS_ONLY;
  private readonly held = new Map<string, HeldEnvironment>();
  private readonly grants = new Map<string, SdkKeyGrant>();
  private readonly listeners = new Set<(change: HeldChange) => void>();
  /** Changes are applied one at a time, in the feed's order. */
  private applying: Promise<void> = Promise.resolve();
  /** How many environments were restored from copies and not yet received from the upstream. */
  private readonly fromCopies = new Set<string>();
  /** Environments whose last patch did not apply: the upstream sends them whole next. */
  private readonly wholeNeeded = new Set<string>();

  constructor(
    private readonly copies: SnapshotCopies | undefined,
    private readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>,
  ) {
    this.snapshots = new SnapshotStore(
      {
        read: (environmentId) => Promise.resolve(this.held.get(environmentId)?.snapshot),
        activeKeys: (environmentId) => Promise.resolve(this.held.get(environmentId)?.sdkKeys ?? []),
      },
      { log },
    );
    this.sdkKeys = new SdkKeyResolver((hash) => Promise.resolve(this.grants.get(hash) ?? null));
  }

  /** Loads the good copies on disk (cold start); returns how many environments they hold. */
  async restoreFromCopies(): Promise<number> {
    for (const { copy, sdkKeys } of (await this.copies?.readAll()) ?? []) {
      // A relay's copies are all written with key ids; a key without one cannot have come from it.
      const keys = sdkKeys.filter((key): key is RelaySdkKey => key.id !== undefined);
      this.hold(await snapshotFromCopy(copy), keys);
      this.fromCopies.add(copy.environmentId);
    }
    if (this.fromCopies.size > 0)
      this.log.info(
        { environments: this.fromCopies.size },
        'relay started from snapshot copies on disk',
      );
    return this.fromCopies.size;
  }

  /**
   * What the relay holds, by environment id → version: the feed's `known` on (re)connect. An
   * environment whose patch did not apply is left out, so that it comes whole.
   */
  known(): Record<string, number> {
    return Object.fromEntries(
      [...this.held]
        .filter(([id]) => !this.wholeNeeded.has(id))
        .map(([id, { snapshot }]) => [id, snapshot.version]),
    );
  }

  /** Every environment held (for the relay's own downstream feed). */
  environments(): HeldEnvironment[] {
    return [...this.held.values()];
  }

  /** Whether the relay has any configuration to serve (`/readyz`). */
  hasConfigurations(): boolean {
    return this.held.size > 0;
  }

  /** How many environments are served from copies on disk, not yet received from the upstream. */
  restoredCount(): number {
    return this.fromCopies.size;
  }

  /** Calls `listener` with every change applied; returns the unsubscribe function. */
  onChange(listener: (change: HeldChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An environment's full state (`event: environment`): served, copied, passed on. */
  environment(environment: FeedEnvironment): Promise<void> {
    return this.apply(async () => {
      const { sdkKeys } = environment;
      const snapshot = await snapshotFromCopy(environment);
      this.hold(snapshot, sdkKeys);
      this.fromCopies.delete(environment.environmentId);
      this.wholeNeeded.delete(environment.environmentId);
      await this.copies?.save(snapshot, sdkKeys);
      this.announce({ kind: 'environment', snapshot, sdkKeys });
    });
  }

  /**
   * What changed in an environment held (`event: patch`): applied to the held snapshot, checked
   * against the upstream's ETag, then served, copied and passed on as a full state would be.
   * A patch that does not apply (another version held, or a document that comes out different)
   * throws, and the environment is asked for whole on the reconnection that follows.
   */
  patch(patch: RelayPatchEvent): Promise<void> {
    return this.apply(async () => {
      const { environmentId } = patch;
      const held = this.held.get(environmentId);
      let snapshot: Snapshot | undefined;
      if (held?.snapshot.version === patch.from)
        snapshot = await patchedSnapshot(held.snapshot, patch);
      if (!held || !snapshot || snapshot.document.etag !== patch.etag) {
        this.wholeNeeded.add(environmentId);
        throw new Error(
          `the patch of environment ${environmentId} to version ${patch.version} does not apply to what is held`,
        );
      }
      this.hold(snapshot, held.sdkKeys);
      this.fromCopies.delete(environmentId);
      await this.copies?.save(snapshot, held.sdkKeys);
      this.announce({ kind: 'environment', snapshot, sdkKeys: held.sdkKeys });
    });
  }

  /**
   * The upstream sent its initial set (`event: ready`): every environment it did not send was
   * `known` at the version it holds, and one version is one document (design record 052), so
   * the copies restored from disk are now the upstream's own.
   */
  confirmed(): Promise<void> {
    return this.apply(() => {
      this.fromCopies.clear();
      return Promise.resolve();
    });
  }

  /** An environment's SDK keys changed (`event: keys`): created keys work, revoked ones stop. */
  keys(environmentId: string, sdkKeys: RelaySdkKey[]): Promise<void> {
    return this.apply(async () => {
      const held = this.held.get(environmentId);
      if (!held) return;
      this.hold(held.snapshot, sdkKeys);
      await this.copies?.save(held.snapshot, sdkKeys);
      this.announce({ kind: 'keys', environmentId, sdkKeys });
    });
  }

  /** An environment was deleted or left the relay key's scope (`event: removed`). */
  removed(environmentId: string): Promise<void> {
    return this.apply(async () => {
      const held = this.held.get(environmentId);
      if (!held) return;
      this.held.delete(environmentId);
      this.fromCopies.delete(environmentId);
      this.wholeNeeded.delete(environmentId);
      this.setGrants(environmentId, held.sdkKeys, []);
      this.snapshots.invalidate([environmentId]);
      await this.copies?.remove(environmentId);
      this.announce({ kind: 'removed', environmentId });
    });
  }

  private hold(snapshot: Snapshot, sdkKeys: RelaySdkKey[]): void {
    const { environmentId } = snapshot;
    const before = this.held.get(environmentId);
    this.held.set(environmentId, { snapshot, sdkKeys });
    this.setGrants(environmentId, before?.sdkKeys ?? [], sdkKeys);
    // Streams of the environment refresh from here, reading the new snapshot.
    if (before?.snapshot !== snapshot) this.snapshots.invalidate([environmentId]);
  }

  /** Replaces an environment's key grants; every key that came or went is looked up afresh. */
  private setGrants(environmentId: string, before: CopiedKey[], after: CopiedKey[]): void {
    for (const key of before) {
      this.grants.delete(key.hash);
      this.sdkKeys.forget(key.hash);
    }
    for (const key of after) {
      this.grants.set(key.hash, { environmentId, type: key.type, keyId: key.id ?? null });
      this.sdkKeys.forget(key.hash);
    }
  }

  private apply(change: () => Promise<void>): Promise<void> {
    const next = this.applying.then(change);
    this.applying = next.catch(() => undefined);
    return next;
  }

  private announce(change: HeldChange): void {
    for (const listener of this.listeners) listener(change);
  }
}
