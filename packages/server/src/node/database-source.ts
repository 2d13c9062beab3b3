import type { FastifyBaseLogger } from 'fastify';
import { NodeBus } from '../bus/node-bus.js';
import { clusterWorkerRelay } from '../bus/worker-relay.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { databaseSdkKeys, SdkKeyResolver } from '../evaluation/sdk-keys.js';
import { SnapshotCopies } from '../evaluation/snapshot-copies.js';
import { databaseSnapshots, SnapshotStore } from '../evaluation/snapshots.js';
import type { EvaluationSource } from '../evaluation/routes.js';

/** The database as the evaluation role's source, and the bus that keeps it current across nodes. */
export interface DatabaseSource extends EvaluationSource {
  bus: NodeBus;
}

/**
 * The evaluation source of a node with a database (design record 044): snapshots and SDK key
 * grants read from the database, with last-known-good copies on disk when
 * `VEXIL_SNAPSHOT_CACHE_DIR` is set (design record 019), kept current by the node bus (design
 * record 010). Every node builds one, whatever its roles: the management API reads its
 * snapshots, and the bus carries its changes to the other nodes.
 */
export function databaseSource(
  database: Database,
  config: Config,
  log: FastifyBaseLogger,
  clusterWorker: boolean,
): DatabaseSource {
  const copies = config.snapshotCacheDir
    ? new SnapshotCopies(config.snapshotCacheDir, config.databaseUrl, log)
    : undefined;
  const snapshots = new SnapshotStore(databaseSnapshots(database.db), { copies, log });
  const sdkKeys = new SdkKeyResolver(databaseSdkKeys(database.db), copies);
  const bus = new NodeBus(
    database.db,
    database.dialect === 'postgres' ? config.databaseUrl : undefined,
    snapshots,
    sdkKeys,
    log,
    config.snapshotCheckIntervalMs,
    database.dialect === 'sqlite' && clusterWorker ? clusterWorkerRelay() : undefined,
  );
  return { snapshots, sdkKeys, streams: bus, bus };
}
