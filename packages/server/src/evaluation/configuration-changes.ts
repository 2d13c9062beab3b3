import type { SdkSegment } from '@vexil/engine';

/** What a change is worked out from: the parts of a snapshot (`snapshots.ts`) it reads. */
export interface SnapshotParts {
  environmentId: string;
  version: number;
  environmentKey: string;
  compiled: { flagKeys: readonly string[] };
  flagDigests: readonly string[];
  segments: readonly SdkSegment[];
  document: { etag: string; flagJson(index: number): Buffer };
  clientSideKeys: ReadonlySet<string>;
}

/**
 * What changed in one environment's configuration from one version to a later one: what the
 * per-flag events of `GET /v1/sdk/stream?patches=true` and the relay feed's `patch` event send
 * instead of the whole configuration (design record 060).
 */
export interface ConfigurationChange {
  environmentId: string;
  from: number;
  to: number;
  /** The configuration's ETag at {@link to}: a receiver that rebuilds the document checks it. */
  etag: string;
  /** The flags added or changed, each as its JSON in the document at {@link to}. */
  flags: { key: string; json: string }[];
  deletedFlags: string[];
  /** The segments added or changed, as in the document at {@link to}. */
  segments: SdkSegment[];
  deletedSegments: string[];
  /** The flag keys in document order at {@link to}; only when flags were added or deleted. */
  flagKeys: readonly string[] | undefined;
  /** The segment keys in document order at {@link to}; only when segments were added or deleted. */
  segmentKeys: readonly string[] | undefined;
  /** Keys of the flags client-side SDKs see at {@link to}. */
  clientSideKeys: string[];
}

/** What a change is computed against: the parts of an environment's last snapshot seen. */
interface Seen {
  version: number;
  environmentKey: string;
  flagKeys: readonly string[];
  flagDigests: readonly string[];
  segments: readonly SdkSegment[];
}

/** The changes held per environment: enough for a client that missed a few to catch up. */
const HELD_CHANGES = 64;
/** And at most this many bytes of flag JSON per environment, so a burst of large changes is not hoarded. */
const HELD_BYTES = 4 * 1024 * 1024;

/**
 * The recent changes of each environment's configuration, worked out from the snapshots the
 * node serves: a change is the difference between two consecutive snapshots it saw (several
 * versions at once when changes came in a burst). One instance per node, shared by its streams
 * and relay feeds, so a change is computed once however many clients receive it.
 */
export class ConfigurationChanges {
  private readonly environments = new Map<
    string,
    { seen: Seen; changes: ConfigurationChange[]; bytes: number }
  >();

  /**
   * The changes that lead from `version` to `snapshot`'s, oldest first: empty when `version`
   * is the snapshot's, undefined when they are not all held or `version` is (the client then
   * needs the whole configuration). `snapshot` is the environment's current one: from here on,
   * changes are worked out from it.
   */
  since(
    snapshot: SnapshotParts,
    version: number | undefined,
  ): readonly ConfigurationChange[] | undefined {
    const held = this.record(snapshot);
    if (version === undefined) return undefined;
    if (version === snapshot.version) return [];
    if (held.seen.version !== snapshot.version) return undefined;
    const first = held.changes.findIndex((change) => change.from === version);
    return first === -1 ? undefined : held.changes.slice(first);
  }

  /** Drops what is held of an environment that is gone. */
  forget(environmentId: string): void {
    this.environments.delete(environmentId);
  }

  /**
   * Records the change from the environment's last snapshot seen to `snapshot`, when it is
   * newer. The snapshot store calls it with every snapshot it builds.
   */
  record(snapshot: SnapshotParts) {
    let held = this.environments.get(snapshot.environmentId);
    if (!held) {
      held = { seen: seen(snapshot), changes: [], bytes: 0 };
      this.environments.set(snapshot.environmentId, held);
      return held;
    }
    // An older snapshot is served while the database is out: nothing to record.
    if (snapshot.version <= held.seen.version) return held;
    const change = difference(held.seen, snapshot);
    held.seen = seen(snapshot);
    if (!change) {
      // Nothing to send but the version: clients of older versions get the whole configuration.
      held.changes = [];
      held.bytes = 0;
      return held;
    }
    held.changes.push(change);
    held.bytes += size(change);
    while (
      held.changes.length > HELD_CHANGES ||
      (held.bytes > HELD_BYTES && held.changes.length > 1)
    )
      held.bytes -= size(held.changes.shift() as ConfigurationChange);
    return held;
  }
}

function seen(snapshot: SnapshotParts): Seen {
  return {
    version: snapshot.version,
    environmentKey: snapshot.environmentKey,
    flagKeys: snapshot.compiled.flagKeys,
    flagDigests: snapshot.flagDigests,
    segments: snapshot.segments,
  };
}

const size = (change: ConfigurationChange) =>
  change.flags.reduce((total, flag) => total + flag.json.length, 0);

/**
 * The change from `before` to `after`; undefined when it cannot be told flag by flag (the
 * environment's key changed) or there is nothing to tell but the version.
 */
function difference(before: Seen, after: SnapshotParts): ConfigurationChange | undefined {
  if (before.environmentKey !== after.environmentKey) return undefined;
  const digests = new Map(before.flagKeys.map((key, index) => [key, before.flagDigests[index]]));
  const flags: ConfigurationChange['flags'] = [];
  let added = false;
  for (const [index, key] of after.compiled.flagKeys.entries()) {
    const digest = digests.get(key);
    if (digest === undefined) added = true;
    else digests.delete(key);
    if (digest !== after.flagDigests[index])
      flags.push({ key, json: after.document.flagJson(index).toString() });
  }
  const deletedFlags = [...digests.keys()];

  const segmentsBefore = new Map(before.segments.map((segment) => [segment.key, segment]));
  const segments: SdkSegment[] = [];
  let segmentAdded = false;
  for (const segment of after.segments) {
    const previous = segmentsBefore.get(segment.key);
    if (!previous) segmentAdded = true;
    segmentsBefore.delete(segment.key);
    if (!previous || JSON.stringify(previous) !== JSON.stringify(segment)) segments.push(segment);
  }
  const deletedSegments = [...segmentsBefore.keys()];

  const changed = flags.length + deletedFlags.length + segments.length + deletedSegments.length > 0;
  if (!changed) return undefined;
  return {
    environmentId: after.environmentId,
    from: before.version,
    to: after.version,
    etag: after.document.etag,
    flags,
    deletedFlags,
    segments,
    deletedSegments,
    flagKeys: added || deletedFlags.length > 0 ? after.compiled.flagKeys : undefined,
    segmentKeys:
      segmentAdded || deletedSegments.length > 0
        ? after.segments.map((segment) => segment.key)
        : undefined,
    clientSideKeys: [...after.clientSideKeys],
  };
}

/**
 * The SSE events of `GET /v1/sdk/stream?patches=true` for one change: a `patch` per flag or
 * segment added or changed (data `{"path":"/flags/<key>","data":<the flag>}`), a `delete` per one
 * gone (data `{"path":"/segments/<key>"}`), segments first (a flag may use a new one), and only
 * the last event carries the id, the change's version: a client cut off in the middle resumes
 * from the version before it.
 */
export function patchEvents(change: ConfigurationChange): string {
  let events = written.get(change);
  if (events === undefined) written.set(change, (events = writePatchEvents(change)));
  return events;
}

/** Each change's events, written once for every stream that sends them. */
const written = new WeakMap<ConfigurationChange, string>();

function writePatchEvents(change: ConfigurationChange): string {
  const events = [
    ...change.segments.map(
      (segment) =>
        `event: patch\ndata: {"path":${JSON.stringify(`/segments/${segment.key}`)},"data":${JSON.stringify(segment)}}\n`,
    ),
    ...change.flags.map(
      (flag) =>
        `event: patch\ndata: {"path":${JSON.stringify(`/flags/${flag.key}`)},"data":${flag.json}}\n`,
    ),
    ...change.deletedFlags.map(
      (key) => `event: delete\ndata: {"path":${JSON.stringify(`/flags/${key}`)}}\n`,
    ),
    ...change.deletedSegments.map(
      (key) => `event: delete\ndata: {"path":${JSON.stringify(`/segments/${key}`)}}\n`,
    ),
  ];
  const last = events.length - 1;
  events[last] = `${events[last]}id: ${change.to}\n`;
  return events.join('\n') + '\n';
}
