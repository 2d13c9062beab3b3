import type { SdkConfiguration, SdkFlag, SdkSegment } from '@vexil/engine';

/** A `patch` or `delete` event of `GET /v1/sdk/stream?patches=true` (docs/streaming.md). */
export interface PatchEvent {
  event: 'patch' | 'delete';
  /** The event's data: `{ "path": "/flags/<key>" | "/segments/<key>", "data"?: … }`. */
  data: string;
}

const PATH = /^\/(flags|segments)\/(.+)$/s;

/**
 * The patches of one change, gathered until the event that carries the change's version (the
 * last one) arrives; then {@link apply} gives the configuration they make. Patches of a change
 * cut off by a disconnection are dropped: the stream resumes from the version before it.
 */
export class PatchBatch {
  private readonly flags = new Map<string, SdkFlag | null>();
  private readonly segments = new Map<string, SdkSegment | null>();

  /** Takes one event; throws a `SyntaxError` or `TypeError` for data that is not a patch. */
  add({ event, data }: PatchEvent): void {
    const parsed = JSON.parse(data) as { path?: unknown; data?: unknown };
    const match = typeof parsed.path === 'string' ? PATH.exec(parsed.path) : null;
    if (!match) throw new TypeError(`not a flag or segment path: ${String(parsed.path)}`);
    const [, kind, key] = match as unknown as [string, 'flags' | 'segments', string];
    const value = event === 'delete' ? null : parsed.data;
    if (value !== null && (typeof value !== 'object' || Array.isArray(value)))
      throw new TypeError(`a patch of ${String(parsed.path)} without its document`);
    if (kind === 'flags') this.flags.set(key, value as SdkFlag | null);
    else this.segments.set(key, value as SdkSegment | null);
  }

  /** `configuration` with the gathered patches applied, at `version`. */
  apply(configuration: SdkConfiguration, version: number): SdkConfiguration {
    return {
      environment: configuration.environment,
      version,
      flags: patched(configuration.flags, this.flags),
      segments: patched(configuration.segments, this.segments),
    };
  }
}

/** `items` with each key of `changes` replaced (or added, in the end) or, when null, removed. */
function patched<T extends { key: string }>(
  items: readonly T[],
  changes: Map<string, T | null>,
): T[] {
  const result: T[] = [];
  const left = new Map(changes);
  for (const item of items) {
    if (!left.has(item.key)) result.push(item);
    else {
      const replacement = left.get(item.key);
      left.delete(item.key);
      if (replacement) result.push(replacement);
    }
  }
  for (const added of left.values()) if (added) result.push(added);
  return result;
}
