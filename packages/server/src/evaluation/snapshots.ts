import { createHash } from 'node:crypto';
import { compileEnvironment, type CompiledEnvironment } from '@vexil/engine';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.js';
import { readEnvironmentConfiguration } from './sdk-configuration.js';

/** One environment's configuration, compiled and serialized once per version. */
export interface Snapshot {
  environmentId: string;
  organizationId: string;
  projectId: string;
  version: number;
  compiled: CompiledEnvironment;
  /** `GET /v1/sdk/flags` body, serialized once. */
  body: string;
  /** Serialized SDK flags by key, for `GET /v1/sdk/flags/{key}`. */
  flagBodies: ReadonlyMap<string, string>;
  etag: string;
  clientSideKeys: ReadonlySet<string>;
}

/**
 * In-memory snapshots of environment configurations: the evaluation API never touches the
 * database on the hot path. A snapshot is built on first use and dropped when a committed change
 * touches its environment; concurrent first requests share one build.
 */
export class SnapshotStore {
  private readonly snapshots = new Map<string, Promise<Snapshot | undefined>>();

  constructor(private readonly db: Kysely<Schema>) {}

  /** The environment's current snapshot, or undefined when the environment does not exist. */
  get(environmentId: string): Promise<Snapshot | undefined> {
    let snapshot = this.snapshots.get(environmentId);
    if (!snapshot) {
      snapshot = this.build(environmentId);
      this.snapshots.set(environmentId, snapshot);
      // A failed build must not stick: the next request tries again.
      snapshot.catch(() => this.snapshots.delete(environmentId));
    }
    return snapshot;
  }

  /** Forgets the snapshots of environments whose configuration changed. */
  invalidate(environmentIds: Iterable<string>): void {
    for (const id of environmentIds) this.snapshots.delete(id);
  }

  private async build(environmentId: string): Promise<Snapshot | undefined> {
    const loaded = await readEnvironmentConfiguration(this.db, environmentId);
    if (!loaded) return undefined;
    const { configuration } = loaded;
    const body = JSON.stringify(configuration);
    return {
      environmentId,
      organizationId: loaded.organizationId,
      projectId: loaded.projectId,
      version: configuration.version,
      compiled: compileEnvironment(configuration),
      body,
      flagBodies: new Map(configuration.flags.map((flag) => [flag.key, JSON.stringify(flag)])),
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      clientSideKeys: new Set(loaded.clientSideKeys),
    };
  }
}
