import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import pg from 'pg';
import type { Schema } from '../db/schema.js';
import type { SdkKeyResolver } from './sdk-keys.js';
import type { SnapshotStore } from './snapshots.js';

const CHANNEL = 'vexil_changes';

/** A change notice: a configuration version, or a revoked SDK key (by hash). Never the data itself. */
type Notice = { environmentId: string; version: number } | { revokedKeyHash: string };

/**
 * Keeps every node's evaluation snapshots and SDK-key cache current (design record 010).
 *
 * - A committed change is applied locally at once and, on PostgreSQL, announced with
 *   `NOTIFY vexil_changes` (environment id and version only; listeners re-read the data).
 * - Every node LISTENs on a dedicated connection; a lost connection is re-established and
 *   followed by a full resync (every snapshot and cached key dropped).
 * - A periodic version check is the safety net for a notice lost in between.
 * On SQLite (one node) only the local path and the periodic check run.
 */
export class ChangeFeed {
  private listener: pg.Client | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly postgresUrl: string | undefined,
    private readonly snapshots: SnapshotStore,
    private readonly sdkKeys: SdkKeyResolver,
    private readonly log: FastifyBaseLogger,
    private readonly checkIntervalMs: number,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    if (this.postgresUrl) await this.listen();
    this.checkTimer = setInterval(() => void this.checkVersions(), this.checkIntervalMs);
    this.checkTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.checkTimer);
    clearTimeout(this.reconnectTimer);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  /** After commit: environments whose configuration changed. */
  configChanged(environmentIds: string[]): void {
    this.snapshots.invalidate(environmentIds);
    if (!this.postgresUrl || environmentIds.length === 0) return;
    void this.announce(environmentIds);
  }

  /** After commit: an SDK key was revoked. */
  keyRevoked(keyHash: string): void {
    this.sdkKeys.forget(keyHash);
    if (this.postgresUrl) void this.notify({ revokedKeyHash: keyHash });
  }

  private async announce(environmentIds: string[]): Promise<void> {
    try {
      const rows = await this.db
        .selectFrom('environments')
        .select(['id', 'version'])
        .where('id', 'in', environmentIds)
        .execute();
      const versions = new Map(rows.map((row) => [row.id, row.version]));
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

  private async notify(notice: Notice): Promise<void> {
    await sql`select pg_notify(${CHANNEL}, ${JSON.stringify(notice)})`.execute(this.db);
  }

  private apply(payload: string | undefined): void {
    if (!payload) return;
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    if ('revokedKeyHash' in notice) {
      this.sdkKeys.forget(notice.revokedKeyHash);
      return;
    }
    // A build in flight (nothing held yet) may have read the data before the change: drop it too.
    if (this.snapshots.heldVersion(notice.environmentId) !== notice.version) {
      this.snapshots.invalidate([notice.environmentId]);
    }
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.postgresUrl });
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
      this.log.warn({ err: error }, 'change listener could not connect; retrying');
      await client.end().catch(() => undefined);
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.listener = undefined;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      // Notices may have been missed while disconnected: start again from the database.
      this.snapshots.invalidateAll();
      this.sdkKeys.forgetAll();
      void this.listen();
    }, 1000);
    this.reconnectTimer.unref();
  }

  /** The safety net: drop any snapshot whose environment version moved on without a notice. */
  async checkVersions(): Promise<void> {
    const held = new Map(this.snapshots.heldVersions());
    if (held.size === 0) return;
    try {
      const rows = await this.db
        .selectFrom('environments')
        .select(['id', 'version'])
        .where('id', 'in', [...held.keys()])
        .execute();
      const current = new Map(rows.map((row) => [row.id, row.version]));
      const stale = [...held]
        .filter(([id, version]) => current.get(id) !== version)
        .map(([id]) => id);
      if (stale.length > 0) this.snapshots.invalidate(stale);
    } catch (error) {
      this.log.warn({ err: error }, 'snapshot version check failed');
    }
  }
}
