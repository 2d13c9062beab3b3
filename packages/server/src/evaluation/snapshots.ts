import { compileLazily, selectFlags, type CompiledEnvironment, type SdkFlag } from '@vexil/engine';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.js';
import {
  ConfigurationDocumentWriter,
  type ConfigurationDocument,
} from './configuration-document.js';
import { readEnvironmentConfiguration } from './sdk-configuration.js';

/**
 * One outcome a client-visible flag has been served with, and its serialized `"key":{...}` entry
 * as UTF-8. A flag's entry depends only on its variation, reason and prerequisite (the value is
 * the variation's), and a flag has few of those, so each is serialized once per snapshot.
 */
export interface ServedEntry {
  variation: string | null;
  reason: string;
  prerequisiteKey: string | undefined;
  bytes: Buffer;
}

/** One environment's configuration, compiled and serialized once per version. */
export interface Snapshot {
  environmentId: string;
  organizationId: string;
  projectId: string;
  version: number;
  /** Compiles each flag from {@link document} when it is first evaluated. */
  compiled: CompiledEnvironment;
  /** The `GET /v1/sdk/flags` body: the only copy of the configuration the snapshot holds. */
  document: ConfigurationDocument;
  clientSideKeys: ReadonlySet<string>;
  /** The client-visible flags' positions in {@link compiled}, as the engine selects them. */
  clientFlags: readonly number[];
  /**
   * For each of {@link clientFlags}, the outcomes served so far with their serialized entries
   * (see clientFlagsBody). Bounded by the configuration: a flag has few variations, reasons and
   * prerequisites.
   */
  clientEntries: ServedEntry[][];
}

/**
 * In-memory snapshots of environment configurations: the evaluation API never touches the
 * database on the hot path. A snapshot is built on first use and dropped when a committed change
 * touches its environment; concurrent first requests share one build.
 */
export class SnapshotStore {
  private readonly snapshots = new Map<string, Promise<Snapshot | undefined>>();
  /** The snapshots built so far and still current: read without awaiting by {@link ready}. */
  private readonly built = new Map<string, Snapshot>();
  /** When each held snapshot was built (epoch ms), for the snapshot-age metric. */
  private readonly builtAtMs = new Map<string, number>();
  private readonly listeners = new Set<(environmentIds: readonly string[] | 'all') => void>();

  constructor(private readonly db: Kysely<Schema>) {}

  /** The environment's current snapshot, or undefined when the environment does not exist. */
  get(environmentId: string): Promise<Snapshot | undefined> {
    let snapshot = this.snapshots.get(environmentId);
    if (!snapshot) {
      const building = this.build(environmentId);
      snapshot = building;
      this.snapshots.set(environmentId, building);
      building.then(
        (built) => {
          if (built && this.snapshots.get(environmentId) === building)
            this.built.set(environmentId, built);
          this.builtAtMs.set(environmentId, Date.now());
        },
        // A failed build must not stick: the next request tries again.
        () => {
          if (this.snapshots.get(environmentId) === building) this.snapshots.delete(environmentId);
        },
      );
    }
    return snapshot;
  }

  /**
   * The environment's snapshot when it is built and current, without waiting; otherwise
   * undefined, and {@link get} builds it. The evaluation routes answer from here, so that the
   * common case costs no promise (design record 016).
   */
  ready(environmentId: string): Snapshot | undefined {
    return this.built.get(environmentId);
  }

  /** Forgets the snapshots of environments whose configuration changed. */
  invalidate(environmentIds: Iterable<string>): void {
    const ids = [...environmentIds];
    for (const id of ids) {
      this.snapshots.delete(id);
      this.built.delete(id);
      this.builtAtMs.delete(id);
    }
    if (ids.length > 0) this.announce(ids);
  }

  /** Forgets every snapshot (after a lost change listener: notices may have been missed). */
  invalidateAll(): void {
    this.snapshots.clear();
    this.built.clear();
    this.builtAtMs.clear();
    this.announce('all');
  }

  /**
   * Calls `listener` whenever environments' configurations change (on this node or, through the
   * node bus, on another). Returns the unsubscribe function. Used by streaming connections.
   */
  onChange(listener: (environmentIds: readonly string[] | 'all') => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private announce(environmentIds: readonly string[] | 'all'): void {
    for (const listener of this.listeners) listener(environmentIds);
  }

  /** The version of the environment's built snapshot, if one is held. */
  heldVersion(environmentId: string): number | undefined {
    return this.built.get(environmentId)?.version;
  }

  /** When the environment's held snapshot was built (epoch ms), if one is held. */
  builtAt(environmentId: string): number | undefined {
    return this.builtAtMs.get(environmentId);
  }

  /** Every held snapshot's version, by environment id. */
  heldVersions(): Map<string, number> {
    return new Map([...this.built].map(([environmentId, { version }]) => [environmentId, version]));
  }

  private async build(environmentId: string): Promise<Snapshot | undefined> {
    const read = await readDocument(this.db, environmentId);
    if (!read) return undefined;
    const { loaded, flagKeys, document } = read;
    const compiled = compileLazily({
      environment: loaded.environment,
      version: loaded.version,
      flagKeys,
      segments: loaded.segments,
      flag: (index) => JSON.parse(document.flagJson(index).toString()) as SdkFlag,
    });
    const clientFlags = selectFlags(compiled, loaded.clientSideKeys);
    return {
      environmentId,
      organizationId: loaded.organizationId,
      projectId: loaded.projectId,
      version: loaded.version,
      compiled,
      document,
      clientSideKeys: new Set(loaded.clientSideKeys),
      clientFlags,
      clientEntries: clientFlags.map(() => []),
    };
  }
}

/** Reads an environment's configuration into its compressed document, as it is read. */
async function readDocument(db: Kysely<Schema>, environmentId: string) {
  const writer = new ConfigurationDocumentWriter();
  const loaded = await readEnvironmentConfiguration(db, environmentId, writer);
  if (!loaded) return undefined;
  const document = await writer.finish(loaded.segments);
  return { loaded, flagKeys: writer.flagKeys, document };
}

/** One flag's JSON as in the snapshot's document (`GET /v1/sdk/flags/{key}`), if it has the flag. */
export function flagDocument(snapshot: Snapshot, key: string): Buffer | undefined {
  const index = snapshot.compiled.flagIndex.get(key);
  return index === undefined ? undefined : snapshot.document.flagJson(index);
}
