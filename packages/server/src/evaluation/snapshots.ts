import {
  compileLazily,
  selectFlags,
  type CompiledEnvironment,
  type SdkFlag,
  type SdkSegment,
} from '@vexil/engine';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.js';
import { ConfigurationChanges } from './configuration-changes.js';
import {
  ConfigurationDocumentWriter,
  type ConfigurationDocument,
} from './configuration-document.js';
import {
  readEnvironmentConfiguration,
  type ConfigurationSink,
  type EnvironmentConfiguration,
} from './sdk-configuration.js';
import { activeKeyHashes } from './sdk-keys.js';
import type { CopiedConfiguration, CopiedKey, SnapshotCopies } from './snapshot-copies.js';

/**
 * One outcome a client-visible flag has been served with, and its serialized `,"key":{...}` entry
 * as UTF-8 (with the comma that separates it from the entry before). A flag's entry depends only on its variation, reason and prerequisite (the value is
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
  /** The document's `environment`: the environment's key. */
  environmentKey: string;
  /** A digest of each flag's JSON in {@link document}, by position in `compiled.flagKeys`. */
  flagDigests: readonly string[];
  /** The document's segments, as in it. */
  segments: readonly SdkSegment[];
  /**
   * Each flag's stamp in the database (sdk-configuration.ts), by position in `compiled.flagKeys`:
   * what the next read compares to read only the flags changed since. Only on snapshots read
   * from the database.
   */
  flagStamps: readonly string[] | undefined;
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
 * Where a {@link SnapshotStore} reads configurations: the database ({@link databaseSnapshots}),
 * or what a relay has received from its upstream (design record 044).
 */
export interface SnapshotReader {
  /**
   * The environment's configuration as a snapshot; undefined when the environment does not
   * exist. `previous` is the environment's last snapshot, which the reader may build on.
   */
  read(environmentId: string, previous?: Snapshot): Promise<Snapshot | undefined>;
  /** The environment's active SDK keys, for its copy on disk. */
  activeKeys(environmentId: string): Promise<CopiedKey[]>;
}

/** The {@link SnapshotReader} of a node with a database. */
export function databaseSnapshots(db: Kysely<Schema>): SnapshotReader {
  return {
    read: (environmentId, previous) => readSnapshot(db, environmentId, previous),
    activeKeys: (environmentId) => activeKeyHashes(db, environmentId),
  };
}

/**
 * In-memory snapshots of environment configurations: the evaluation API never touches the
 * database on the hot path. A snapshot is built on first use and dropped when a committed change
 * touches its environment; concurrent first requests share one build.
 *
 * When a build cannot read the database, the environment's last good snapshot is served again:
 * the one held before, or else its copy on disk (design record 019). A copy is written after
 * every build when `copies` is given.
 */
export class SnapshotStore {
  /** The recent changes between the snapshots served, for clients that take them flag by flag. */
  readonly changes = new ConfigurationChanges();
  private readonly snapshots = new Map<string, Promise<Snapshot | undefined>>();
  /** The snapshots built so far and still current: read without awaiting by {@link ready}. */
  private readonly built = new Map<string, Snapshot>();
  /** When each held snapshot was built (epoch ms), for the snapshot-age metric. */
  private readonly builtAtMs = new Map<string, number>();
  private readonly listeners = new Set<(environmentIds: readonly string[] | 'all') => void>();
  /** Each environment's last snapshot built, kept after invalidation: served while the database is out. */
  private readonly lastGood = new Map<string, Snapshot>();
  /** Snapshots restored from copies on disk rather than read from the database. */
  private readonly restored = new WeakSet<Snapshot>();

  constructor(
    private readonly reader: SnapshotReader,
    private readonly options: {
      copies?: SnapshotCopies;
      log?: Pick<FastifyBaseLogger, 'warn'>;
    } = {},
  ) {}

  /** The environment's current snapshot, or undefined when the environment does not exist. */
  get(environmentId: string): Promise<Snapshot | undefined> {
    let snapshot = this.snapshots.get(environmentId);
    if (!snapshot) {
      const building = this.build(environmentId);
      snapshot = building;
      this.snapshots.set(environmentId, building);
      building.then(
        (built) => {
          if (built) this.changes.record(built);
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

  /**
   * Forgets the snapshots of environments whose configuration changed; each is kept only to be
   * served should its rebuild find the database unreachable.
   */
  invalidate(environmentIds: Iterable<string>): void {
    const ids = [...environmentIds];
    for (const id of ids) {
      this.snapshots.delete(id);
      this.built.delete(id);
      this.builtAtMs.delete(id);
    }
    if (ids.length > 0) this.announce(ids);
  }

  /**
   * Forgets every snapshot (after a lost change listener, notices may have been missed; after a
   * start without the database, restored copies are replaced).
   */
  invalidateAll(): void {
    this.snapshots.clear();
    this.built.clear();
    this.builtAtMs.clear();
    this.announce('all');
  }

  /** How many environments are served from copies on disk, not yet read from the database. */
  restoredCount(): number {
    return [...this.built.values()].filter((snapshot) => this.restored.has(snapshot)).length;
  }

  /** Whether evaluations can be answered without the database: from memory or from copies. */
  async canServeWithoutDatabase(): Promise<boolean> {
    return this.lastGood.size > 0 || ((await this.options.copies?.any()) ?? false);
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
    const { copies } = this.options;
    let snapshot: Snapshot | undefined;
    try {
      snapshot = await this.reader.read(environmentId, this.lastGood.get(environmentId));
    } catch (error) {
      const lastGood = this.lastGood.get(environmentId) ?? (await this.restore(environmentId));
      if (!lastGood) throw error;
      this.options.log?.warn(
        { err: error, environmentId, version: lastGood.version },
        'configuration not read from the database; serving the last good snapshot',
      );
      return lastGood;
    }
    if (!snapshot) {
      this.lastGood.delete(environmentId);
      this.changes.forget(environmentId);
      void copies?.remove(environmentId);
      return undefined;
    }
    this.lastGood.set(environmentId, snapshot);
    if (copies) {
      const copied = snapshot;
      void this.reader.activeKeys(environmentId).then(
        (keys) => copies.save(copied, keys),
        (error: unknown) =>
          this.options.log?.warn({ err: error, environmentId }, 'snapshot copy not written'),
      );
    }
    return snapshot;
  }

  /** The environment's snapshot rebuilt from its copy on disk, if there is a good one. */
  private async restore(environmentId: string): Promise<Snapshot | undefined> {
    const copy = await this.options.copies?.read(environmentId);
    if (!copy) return undefined;
    const snapshot = await snapshotFromCopy(copy);
    this.lastGood.set(environmentId, snapshot);
    this.restored.add(snapshot);
    return snapshot;
  }
}

/**
 * A snapshot of a configuration copied as its `GET /v1/sdk/flags` document (a copy on disk, or
 * a relay's upstream's `environment` event): the document is written again by the same writer,
 * so its bytes and ETag are those of the node it was copied from.
 */
export async function snapshotFromCopy(copy: CopiedConfiguration): Promise<Snapshot> {
  const { environment, version, flags, segments } = copy.configuration;
  const writer = new ConfigurationDocumentWriter();
  writer.begin(environment, version);
  await writer.addFlags(flags);
  const document = await writer.finish(segments);
  return compileSnapshot(
    copy.environmentId,
    { ...copy, environment, version, segments },
    writer,
    document,
  );
}

/** What changed in a configuration, as a relay receives it (the relay feed's `patch` event). */
export interface SnapshotPatch {
  version: number;
  clientSideKeys: string[];
  /** The flags added or changed; each is written as `JSON.stringify` gives it. */
  flags: SdkFlag[];
  deletedFlags: string[];
  /** The flag keys in document order, when flags were added or deleted. */
  flagKeys?: string[];
  segments: SdkSegment[];
  deletedSegments: string[];
  /** The segment keys in document order, when segments were added or deleted. */
  segmentKeys?: string[];
}

/**
 * `snapshot` with `patch` applied: its document written again with the changed flags and
 * segments in place and every other flag's JSON as it was, so that it is byte for byte the
 * document of the node the patch came from (whose ETag the caller compares).
 */
export async function patchedSnapshot(snapshot: Snapshot, patch: SnapshotPatch): Promise<Snapshot> {
  const changedFlags = new Map(patch.flags.map((flag) => [flag.key, flag]));
  const deletedFlags = new Set(patch.deletedFlags);
  const writer = new ConfigurationDocumentWriter();
  writer.begin(snapshot.environmentKey, patch.version);
  for (const key of patch.flagKeys ?? snapshot.compiled.flagKeys) {
    if (deletedFlags.has(key)) continue;
    const changed = changedFlags.get(key);
    const index = snapshot.compiled.flagIndex.get(key);
    if (changed) await writer.addFlagJson(key, JSON.stringify(changed));
    else if (index !== undefined)
      await writer.addFlagJson(key, snapshot.document.flagJson(index).toString());
    else throw new Error(`the patch names flag ${key} but neither holds nor sends it`);
  }
  const segments = new Map(snapshot.segments.map((segment) => [segment.key, segment]));
  for (const key of patch.deletedSegments) segments.delete(key);
  for (const segment of patch.segments) segments.set(segment.key, segment);
  const segmentList = (patch.segmentKeys ?? [...segments.keys()]).map((key) => {
    const segment = segments.get(key);
    if (!segment) throw new Error(`the patch names segment ${key} but neither holds nor sends it`);
    return segment;
  });
  const document = await writer.finish(segmentList);
  return compileSnapshot(
    snapshot.environmentId,
    {
      organizationId: snapshot.organizationId,
      projectId: snapshot.projectId,
      environment: snapshot.environmentKey,
      version: patch.version,
      segments: segmentList,
      clientSideKeys: patch.clientSideKeys,
    },
    writer,
    document,
  );
}

/**
 * Reads an environment's configuration from the database into a snapshot; undefined when gone.
 * Given the environment's `previous` snapshot read from the database, reads only the flags
 * changed since and writes the others' JSON as `previous` holds it (design record 061).
 */
async function readSnapshot(
  db: Kysely<Schema>,
  environmentId: string,
  previous: Snapshot | undefined,
): Promise<Snapshot | undefined> {
  const writer = new ConfigurationDocumentWriter();
  const sink: ConfigurationSink = {
    begin: (environment, version) => writer.begin(environment, version),
    addFlags: (flags) => writer.addFlags(flags),
    keepFlag: (key) => {
      const json = previous && flagDocument(previous, key);
      if (!json) throw new Error(`flag ${key} kept but not held`);
      return writer.addFlagJson(key, json.toString());
    },
  };
  const stamps = previous?.flagStamps;
  const held = previous &&
    stamps && {
      flagStamps: new Map(previous.compiled.flagKeys.map((key, i) => [key, stamps[i] ?? ''])),
      segmentKeys: previous.segments.map((segment) => segment.key),
    };
  const loaded = await readEnvironmentConfiguration(db, environmentId, sink, held);
  if (!loaded) return undefined;
  const document = await writer.finish(loaded.segments);
  return compileSnapshot(environmentId, loaded, writer, document);
}

/** A snapshot of a configuration held as `document`: flags compile when first evaluated. */
function compileSnapshot(
  environmentId: string,
  loaded: Omit<EnvironmentConfiguration, 'flagStamps'> & { flagStamps?: string[] },
  { flagKeys, flagDigests }: ConfigurationDocumentWriter,
  document: ConfigurationDocument,
): Snapshot {
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
    environmentKey: loaded.environment,
    flagDigests,
    segments: loaded.segments,
    flagStamps: loaded.flagStamps,
    clientSideKeys: new Set(loaded.clientSideKeys),
    clientFlags,
    clientEntries: clientFlags.map(() => []),
  };
}

/** One flag's JSON as in the snapshot's document (`GET /v1/sdk/flags/{key}`), if it has the flag. */
export function flagDocument(snapshot: Snapshot, key: string): Buffer | undefined {
  const index = snapshot.compiled.flagIndex.get(key);
  return index === undefined ? undefined : snapshot.document.flagJson(index);
}
