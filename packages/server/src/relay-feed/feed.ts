import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.js';
import type { ConfigurationChange } from '../evaluation/configuration-changes.js';
import { activeKeyHashes } from '../evaluation/sdk-keys.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import {
  RELAY_PROTOCOL_VERSION,
  relayEnvironmentFrame,
  relayFeedFrame,
  relayPatchFrame,
  type RelayFeedEventName,
  type RelayFeedEvents,
} from './protocol.js';
import {
  coveredEnvironments,
  coversEnvironment,
  relayKeyActive,
  type RelayKeyGrant,
} from './relay-keys.js';

/**
 * What tells a feed that something beyond configurations changed, on this node or another: the
 * node bus (`bus/node-bus.ts`) is one.
 */
export interface RelayFeedSignals {
  /**
   * Calls `listener` with each environment created, or whose SDK keys changed (neither changes a
   * configuration version); returns the unsubscribe.
   */
  onEnvironmentAccessChanged(listener: (environmentId: string) => void): () => void;
  /** Calls `listener` with each revoked relay key's id; returns the unsubscribe. */
  onRelayKeyRevoked(listener: (relayKeyId: string) => void): () => void;
}

/** What every feed of a node shares. */
export interface RelayFeedSources {
  db: Kysely<Schema>;
  snapshots: SnapshotStore;
  signals: RelayFeedSignals;
  /** The upstream identity announced in `hello` (the database fingerprint). */
  upstream: string;
  log: Pick<FastifyBaseLogger, 'warn'>;
  /** How often a `: keep-alive` comment is written and the relay key re-checked. */
  keepAliveMs: number;
}

/** What the relay holds of an environment, as far as this feed knows. */
interface Held {
  version: number;
  /** The JSON of the key hashes last sent; undefined when the relay said only its version. */
  keys: string | undefined;
}

/**
 * One open `POST /v1/relay/feed` stream (relay protocol, design record 045): the covered
 * environments' states the relay does not hold, `ready`, then every change, from what the node
 * already holds (its snapshots and the SDK keys' stored hashes). Changes are coalesced: marked
 * environments are brought up to date one at a time, each sending its current state, so a burst
 * of changes costs one state per environment. After a resync notice (`'all'`) or a failed read,
 * the whole covered set is compared again.
 */
export class RelayFeed {
  private readonly held = new Map<string, Held>();
  /** The covered environments, once read; environments learnt to lie outside are kept apart. */
  private covered = new Set<string>();
  private readonly outside = new Set<string>();
  private readonly dirty = new Set<string>();
  private resyncDue = true;
  private draining = false;
  private failed = false;
  private readySent = false;
  private closed = false;
  private readonly unsubscribe: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sources: RelayFeedSources,
    private readonly grant: RelayKeyGrant,
    private readonly response: ServerResponse,
  ) {}

  /** Whether the relay takes `patch` events (design record 060). */
  private patches = false;

  /**
   * Starts the stream from what the relay says it holds (`known`: environment id → version),
   * sending changes as `patch` events when it takes them.
   */
  start(known: Readonly<Record<string, number>>, patches: boolean): void {
    this.patches = patches;
    const { snapshots, signals, keepAliveMs } = this.sources;
    for (const [environmentId, version] of Object.entries(known))
      this.held.set(environmentId, { version, keys: undefined });
    // Subscribed before the initial set is read: a change meanwhile is marked, not missed.
    this.unsubscribe.push(
      snapshots.onChange((ids) => (ids === 'all' ? this.markAll() : this.mark(ids))),
      signals.onEnvironmentAccessChanged((id) => this.mark([id])),
      signals.onRelayKeyRevoked((id) => {
        if (id === this.grant.id) this.revoke();
      }),
    );
    this.response.on('close', () => this.close());
    this.timer = setInterval(() => void this.keepAlive(), keepAliveMs);
    this.timer.unref();
    this.send('hello', {
      protocol: RELAY_PROTOCOL_VERSION,
      upstream: this.sources.upstream,
      relayKeyId: this.grant.id,
    });
    void this.drain();
  }

  private mark(environmentIds: readonly string[]): void {
    for (const id of environmentIds) if (!this.outside.has(id)) this.dirty.add(id);
    void this.drain();
  }

  private markAll(): void {
    this.resyncDue = true;
    void this.drain();
  }

  /** Brings every marked environment up to date, one at a time, until none is left. */
  private async drain(): Promise<void> {
    if (this.draining || this.closed) return;
    this.draining = true;
    try {
      // `closed` changes while a read is awaited: checked again before each step.
      while (!this.isClosed() && (this.resyncDue || this.dirty.size > 0)) {
        if (this.resyncDue) {
          this.resyncDue = false;
          this.dirty.clear();
          await this.resync();
          if (!this.readySent) {
            this.readySent = true;
            this.send('ready', {});
          }
          continue;
        }
        const [id] = this.dirty;
        if (id === undefined) break;
        this.dirty.delete(id);
        if (!this.covered.has(id)) {
          // New to this feed: an environment created since, or one of another scope.
          if (!(await coversEnvironment(this.sources.db, this.grant, id))) {
            this.outside.add(id);
            await this.update(id, false);
            continue;
          }
          this.covered.add(id);
        }
        await this.update(id, true);
      }
      this.failed = false;
    } catch (error) {
      // The database is out: the next keep-alive compares everything again.
      this.failed = true;
      this.sources.log.warn({ err: error, relayKeyId: this.grant.id }, 'relay feed not updated');
    } finally {
      this.draining = false;
    }
  }

  /** Reads the covered set afresh and brings every environment of it, and of the relay's, up to date. */
  private async resync(): Promise<void> {
    this.covered = await coveredEnvironments(this.sources.db, this.grant);
    for (const id of [...this.held.keys()]) if (!this.covered.has(id)) await this.update(id, false);
    for (const id of this.covered) await this.update(id, true);
  }

  /**
   * Sends what the relay lacks of one environment: its whole state when its version differs from
   * the relay's (or what changed, when the relay takes patches and the node holds them), only its
   * key hashes when those alone differ, `removed` when it is gone or not
   * covered (and the relay holds it).
   */
  private async update(environmentId: string, covered: boolean): Promise<void> {
    const snapshot = covered ? await this.sources.snapshots.get(environmentId) : undefined;
    const held = this.held.get(environmentId);
    if (!snapshot) {
      this.covered.delete(environmentId);
      if (held) {
        this.held.delete(environmentId);
        this.send('removed', { environmentId });
      }
      return;
    }
    const keys = JSON.stringify(await activeKeyHashes(this.sources.db, environmentId));
    // Nothing to send but keys, or what changed when the node holds every change since.
    let changes: readonly ConfigurationChange[] | undefined;
    if (held?.version === snapshot.version) changes = [];
    else if (held && this.patches)
      changes = this.sources.snapshots.changes.since(snapshot, held.version);
    if (!held || !changes) {
      const frame = await relayEnvironmentFrame(snapshot, keys);
      this.held.set(environmentId, { version: snapshot.version, keys });
      this.write(...frame);
      return;
    }
    held.version = snapshot.version;
    this.write(...changes.map(relayPatchFrame));
    if (held.keys === keys) return;
    held.keys = keys;
    this.write(
      `event: keys\ndata: {"environmentId":${JSON.stringify(environmentId)},"sdkKeys":${keys}}\n\n`,
    );
  }

  private async keepAlive(): Promise<void> {
    this.write(': keep-alive\n\n');
    // The safety net for a revocation notice lost between nodes.
    try {
      if (!(await relayKeyActive(this.sources.db, this.grant.id))) this.revoke();
    } catch {
      // The database is out: the key is checked again at the next keep-alive.
    }
    if (this.failed) this.markAll();
  }

  private isClosed(): boolean {
    return this.closed;
  }

  private revoke(): void {
    if (this.closed) return;
    this.send('revoked', {});
    this.close();
  }

  /** Ends the stream (the relay reconnects) and stops following changes. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    if (!this.response.writableEnded) this.response.end();
  }

  private send<E extends RelayFeedEventName>(event: E, data: RelayFeedEvents[E]): void {
    this.write(relayFeedFrame(event, data));
  }

  private write(...chunks: (string | Buffer)[]): void {
    if (this.response.writableEnded || this.response.destroyed) return;
    for (const chunk of chunks) this.response.write(chunk);
  }
}
