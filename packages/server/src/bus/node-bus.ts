import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import pg from 'pg';
import { foldVersionBumps, readVersions } from '../db/environment-versions.js';
import type { Schema } from '../db/schema.js';
import type { LiveChange } from '../events/live-feed.js';
import type { SdkKeyResolver } from '../evaluation/sdk-keys.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import type { StreamIdentifier, StreamRelay } from '../evaluation/streaming.js';
import type { NoticeRelay } from './worker-relay.js';

const CHANNEL = 'vexil_changes';
/** How long `identify` waits for the node that holds a client stream to confirm the switch (ms). */
const IDENTIFY_TIMEOUT_MS = 500;
/** PostgreSQL refuses notice payloads of 8,000 bytes or more. */
const MAX_NOTICE_BYTES = 7_999;

type Context = Record<string, unknown>;

/**
 * A notice between nodes: a configuration version or a revoked SDK key (by hash), never the data
 * itself; or a client stream to switch to a new context (`identify` answered by another node
 * than the one holding the stream), and its confirmation; or that webhook deliveries were queued
 * (by the node named); or a committed management change for the console's live feed; or, for
 * the relay feeds (design record 045), an environment created or whose SDK keys changed, or a revoked relay key.
 */
type Notice =
  | { environmentId: string; version: number }
  | { revokedKeyHash: string }
  | { deliveriesQueuedBy: string }
  | { identify: { requestId: string; environmentId: string; streamId: string; context: Context } }
  | { identified: string }
  | { liveChange: LiveChange; from: string }
  | { accessChangedIn: string; from: string }
  | { revokedRelayKeyId: string; from: string };

/**
 * The cross-node bus: keeps every node's evaluation snapshots, SDK-key cache and client streams
 * current, and wakes every node's delivery worker (design records 010, 018). The event hub hands
 * it each committed change; it is the only part that talks to other nodes.
 *
 * - A committed change is applied locally at once and, on PostgreSQL, announced with
 *   `NOTIFY vexil_changes` (environment id and version only; listeners re-read the data).
 * - Every node LISTENs on a dedicated connection; a lost connection is re-established and
 *   followed by a full resync (every snapshot and cached key dropped).
 * - A periodic version check is the safety net for a notice lost in between.
 * - `identify` for a client stream held by another node travels as a notice too.
 * - Queued webhook deliveries wake the delivery worker here at once, and on every other node
 *   through a notice, so they need not wait for a worker's next poll.
 * On SQLite (one node) only the local path and the periodic check run, unless the node runs
 * several worker processes (`vexil serve --workers`): then notices travel between them through
 * the cluster primary (`relay`, design record 029), as they would by NOTIFY.
 */
export class NodeBus implements StreamRelay {
  private listener: pg.Client | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private identifyHere: StreamIdentifier = () => false;
  private wakeDeliveryWorker: () => void = () => {};
  private publishLiveChange: (change: LiveChange) => void = () => {};
  /** Names this node in its own notices, which its listener receives too. */
  private readonly nodeId = randomUUID();
  /** Confirmations awaited by `identifyElsewhere`, by request id. */
  private readonly awaitingIdentified = new Map<string, (confirmed: boolean) => void>();
  private stopRelaying: () => void = () => {};
  private readonly accessListeners = new Set<(environmentId: string) => void>();
  private readonly relayKeyListeners = new Set<(relayKeyId: string) => void>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly postgresUrl: string | undefined,
    private readonly snapshots: SnapshotStore,
    private readonly sdkKeys: SdkKeyResolver,
    private readonly log: FastifyBaseLogger,
    private readonly checkIntervalMs: number,
    private readonly relay?: NoticeRelay,
  ) {}

  /** Whether notices reach other processes: by NOTIFY on PostgreSQL, or by the worker relay. */
  private get reachesOthers(): boolean {
    return this.postgresUrl !== undefined || this.relay !== undefined;
  }

  async start(): Promise<void> {
    this.stopped = false;
    if (this.relay) this.stopRelaying = this.relay.onNotice((payload) => this.apply(payload));
    else if (this.postgresUrl) await this.listen();
    this.checkTimer = setInterval(() => {
      void this.checkVersions();
      void this.foldVersions();
    }, this.checkIntervalMs);
    this.checkTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.checkTimer);
    clearTimeout(this.reconnectTimer);
    this.stopRelaying();
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  /** After commit: environments whose configuration changed. */
  configChanged(environmentIds: string[]): void {
    this.snapshots.invalidate(environmentIds);
    if (!this.reachesOthers || environmentIds.length === 0) return;
    void this.announce(environmentIds);
  }

  /** After commit: an SDK key was revoked. */
  keyRevoked(keyHash: string): void {
    this.sdkKeys.forget(keyHash);
    if (this.reachesOthers) void this.notify({ revokedKeyHash: keyHash });
  }

  /**
   * After commit: the environment was created, or one of its SDK keys was created or revoked. The
   * relay feeds of every node compare it again (design record 045).
   */
  environmentAccessChanged(environmentId: string): void {
    for (const listener of this.accessListeners) listener(environmentId);
    if (!this.reachesOthers) return;
    this.notify({ accessChangedIn: environmentId, from: this.nodeId }).catch((error: unknown) =>
      this.log.warn(
        { err: error },
        'environment notice not sent; relay feeds catch up at a resync',
      ),
    );
  }

  /** After commit: a relay key was revoked; its open feeds close on every node. */
  relayKeyRevoked(relayKeyId: string): void {
    for (const listener of this.relayKeyListeners) listener(relayKeyId);
    if (!this.reachesOthers) return;
    this.notify({ revokedRelayKeyId: relayKeyId, from: this.nodeId }).catch((error: unknown) =>
      this.log.warn(
        { err: error },
        'relay key notice not sent; its feeds close at their next keep-alive check',
      ),
    );
  }

  /** Calls `listener` with each environment created, or whose SDK keys changed, here or elsewhere. */
  onEnvironmentAccessChanged(listener: (environmentId: string) => void): () => void {
    this.accessListeners.add(listener);
    return () => this.accessListeners.delete(listener);
  }

  /** Calls `listener` with each relay key revoked here or on another node. */
  onRelayKeyRevoked(listener: (relayKeyId: string) => void): () => void {
    this.relayKeyListeners.add(listener);
    return () => this.relayKeyListeners.delete(listener);
  }

  /** After commit: webhook deliveries were queued. */
  deliveriesQueued(): void {
    this.wakeDeliveryWorker();
    if (!this.reachesOthers) return;
    this.notify({ deliveriesQueuedBy: this.nodeId }).catch((error: unknown) =>
      this.log.warn({ err: error }, 'delivery notice not sent; workers find it at their next poll'),
    );
  }

  /** Lets this node's queued deliveries, and other nodes' notices of theirs, wake its worker. */
  onDeliveriesQueued(wake: () => void): void {
    this.wakeDeliveryWorker = wake;
  }

  /** After commit: a management change, for the live feeds of the other nodes (design record 026). */
  liveChange(change: LiveChange): void {
    if (!this.reachesOthers) return;
    const payload = JSON.stringify({ liveChange: change, from: this.nodeId });
    // Keys are short, so a change fits; one that would not is left to the consoles' slow poll.
    if (Buffer.byteLength(payload) > MAX_NOTICE_BYTES) return;
    this.send(payload).catch((error: unknown) =>
      this.log.warn({ err: error }, 'live change notice not sent; consoles catch up at their poll'),
    );
  }

  /** Lets other nodes' management changes reach this node's live feed. */
  onLiveChange(publish: (change: LiveChange) => void): void {
    this.publishLiveChange = publish;
  }

  /** Lets notices from other nodes switch the client streams this node holds. */
  onIdentify(identify: StreamIdentifier): void {
    this.identifyHere = identify;
  }

  /**
   * Asks the other nodes to switch a client stream to a new context (spec: Evaluation API rule 2,
   * behind a load balancer). Resolves true once the node holding the stream confirms; false on
   * SQLite in a single process, without a listener, for a context too large for a notice, or when no node confirms
   * within {@link IDENTIFY_TIMEOUT_MS}.
   */
  async identifyElsewhere(
    environmentId: string,
    streamId: string,
    context: Context,
  ): Promise<boolean> {
    if (!this.listener && !this.relay) return false;
    const requestId = randomUUID();
    const payload = JSON.stringify({ identify: { requestId, environmentId, streamId, context } });
    if (Buffer.byteLength(payload) > MAX_NOTICE_BYTES) return false;
    const confirmed = new Promise<boolean>((resolve) => {
      const settle = (result: boolean) => {
        clearTimeout(timer);
        this.awaitingIdentified.delete(requestId);
        resolve(result);
      };
      const timer = setTimeout(() => settle(false), IDENTIFY_TIMEOUT_MS);
      this.awaitingIdentified.set(requestId, settle);
    });
    try {
      await this.send(payload);
    } catch (error) {
      this.log.warn({ err: error }, 'identify notice not sent');
      this.awaitingIdentified.get(requestId)?.(false);
    }
    return confirmed;
  }

  private async announce(environmentIds: string[]): Promise<void> {
    try {
      const versions = await readVersions(this.db, environmentIds);
      for (const environmentId of environmentIds) {
        // A deleted environment is announced with version 0: listeners drop it all the same.
        await this.notify({ environmentId, version: versions.get(environmentId) ?? 0 });
      }
    } catch (error) {
      this.log.warn(
        { err: error },
        'change notice not sent; other nodes catch up at their next version check',
      );
    }
  }

  private notify(notice: Notice): Promise<void> {
    return this.send(JSON.stringify(notice));
  }

  private async send(payload: string): Promise<void> {
    if (this.relay) {
      this.relay.send(payload);
      return;
    }
    await sql`select pg_notify(${CHANNEL}, ${payload})`.execute(this.db);
  }

  private apply(payload: string | undefined): void {
    if (!payload) return;
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    if ('deliveriesQueuedBy' in notice) {
      if (notice.deliveriesQueuedBy !== this.nodeId) this.wakeDeliveryWorker();
      return;
    }
    if ('liveChange' in notice) {
      if (notice.from !== this.nodeId) this.publishLiveChange(notice.liveChange);
      return;
    }
    if ('accessChangedIn' in notice) {
      if (notice.from !== this.nodeId)
        for (const listener of this.accessListeners) listener(notice.accessChangedIn);
      return;
    }
    if ('revokedRelayKeyId' in notice) {
      if (notice.from !== this.nodeId)
        for (const listener of this.relayKeyListeners) listener(notice.revokedRelayKeyId);
      return;
    }
    if ('revokedKeyHash' in notice) {
      this.sdkKeys.forget(notice.revokedKeyHash);
      return;
    }
    if ('identify' in notice) {
      const { requestId, environmentId, streamId, context } = notice.identify;
      if (this.identifyHere(environmentId, streamId, context)) {
        this.notify({ identified: requestId }).catch((error: unknown) =>
          this.log.warn({ err: error }, 'identify confirmation not sent'),
        );
      }
      return;
    }
    if ('identified' in notice) {
      this.awaitingIdentified.get(notice.identified)?.(true);
      return;
    }
    // A build in flight (nothing held yet) may have read the data before the change: drop it too.
    if (this.snapshots.heldVersion(notice.environmentId) !== notice.version) {
      this.snapshots.invalidate([notice.environmentId]);
    }
  }

  /** Connects the listener; after a lost connection (`resync`), starts again from the database. */
  private async listen(resync = false): Promise<void> {
    const client = new pg.Client({
      connectionString: this.postgresUrl,
      connectionTimeoutMillis: 5_000,
    });
    client.on('notification', (message) => this.apply(message.payload));
    client.on('error', (error) => {
      this.log.warn({ err: error }, 'change listener connection lost; reconnecting');
      void client.end().catch(() => undefined);
      this.scheduleReconnect();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.listener = client;
    } catch (error) {
      if (!resync) this.log.warn({ err: error }, 'change listener could not connect; retrying');
      await client.end().catch(() => undefined);
      this.scheduleReconnect();
      return;
    }
    if (resync) {
      // Notices may have been missed while disconnected. Dropped only now that the database
      // answers: during an outage the held snapshots keep being served (design record 019).
      this.log.info('change listener reconnected; configurations re-read from the database');
      this.snapshots.invalidateAll();
      this.sdkKeys.forgetAll();
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.listener = undefined;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => void this.listen(true), 1000);
    this.reconnectTimer.unref();
  }

  /** Keeps environment versions cheap to read (`db/environment-versions.ts`). */
  private async foldVersions(): Promise<void> {
    try {
      await foldVersionBumps(this.db);
    } catch (error) {
      this.log.warn(
        { err: error },
        'environment version bumps not folded; retried at the next check',
      );
    }
  }

  /** The safety net: drop any snapshot whose environment version moved on without a notice. */
  async checkVersions(): Promise<void> {
    const held = this.snapshots.heldVersions();
    if (held.size === 0) return;
    try {
      const current = await readVersions(this.db, [...held.keys()]);
      const stale = [...held]
        .filter(([id, version]) => current.get(id) !== version)
        .map(([id]) => id);
      if (stale.length > 0) this.snapshots.invalidate(stale);
    } catch (error) {
      this.log.warn({ err: error }, 'snapshot version check failed');
    }
  }
}
