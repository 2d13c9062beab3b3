/** A custom event, as passed to `track`. */
export interface TrackEvent {
  /** The event key (for example `checkout-completed`). */
  key: string;
  /** Who did it, when known. */
  userId?: string;
  /** Free-form details. */
  metadata?: Record<string, unknown>;
}

/** One item of the `POST /v1/sdk/events` body (spec: Evaluation API rule 4). */
interface WireEvent {
  type: 'Evaluation' | 'Custom';
  flagKey: string;
  variation?: string;
  userId?: string;
  /** The evaluation's reason: a `SPLIT` is what an experiment counts as its exposure. */
  reason?: string;
  timestamp: string;
  metadata?: Record<string, unknown>;
}

/** The server refuses larger batches (design record 008). */
const MAX_EVENTS_PER_REQUEST = 1000;
/** Custom events kept while the server is unreachable; older ones are dropped first. */
const MAX_QUEUED_CUSTOM_EVENTS = 10_000;
/**
 * Users named per flush: past this many (flag, variation, user) entries, what is served is
 * summarised without the user, so memory and the report stay bounded however many users a
 * process serves between two flushes.
 */
export const MAX_USERS_PER_FLUSH = 10_000;

export interface ReporterOptions {
  baseUrl: string;
  sdkKey: string;
  requestTimeoutMs: number;
  fetch: typeof fetch;
  onError: (error: Error) => void;
}

/**
 * Batches what the SDK reports to `POST /v1/sdk/events`: an evaluation summary and the `track`
 * calls. The summary is one `Evaluation` event per flag, variation and user served since the last
 * flush, at the time first served; for contexts without a `userId`, and past
 * {@link MAX_USERS_PER_FLUSH}, one per flag and variation, at the time last served. Naming the user is what lets a release plan's guard count who was
 * exposed to which variation (design record 047). A server without the endpoint (404) is
 * remembered and never asked again.
 */
export class EventReporter {
  private readonly served = new Map<
    string,
    {
      flagKey: string;
      variation: string;
      userId: string | undefined;
      reason: string | undefined;
      atMs: number;
    }
  >();
  private namedUsers = 0;
  private custom: WireEvent[] = [];
  private endpointMissing = false;

  constructor(private readonly options: ReporterOptions) {}

  /**
   * Notes that `variation` of `flagKey` was served at `atMs`, to `userId` when known, for
   * `reason` (the engine's; sent with a named user's entry, so that the server counts an
   * experiment's exposure only where its split served the user).
   */
  recordEvaluation(
    flagKey: string,
    variation: string,
    atMs: number,
    userId?: string,
    reason?: string,
  ): void {
    if (this.endpointMissing) return;
    const named = userId !== undefined && userId !== '' ? userId : undefined;
    const id = `${flagKey}\u0000${variation}`;
    const userEntryId =
      named === undefined ? undefined : `${id}\u0000${reason ?? ''}\u0000${named}`;
    // A named user keeps the time first served: a guard counts metric events after it.
    if (userEntryId !== undefined && this.served.has(userEntryId)) return;
    if (userEntryId !== undefined && this.namedUsers < MAX_USERS_PER_FLUSH) {
      this.namedUsers++;
      this.served.set(userEntryId, { flagKey, variation, userId: named, reason, atMs });
      return;
    }
    const entry = this.served.get(id);
    if (entry) entry.atMs = atMs;
    else this.served.set(id, { flagKey, variation, userId: undefined, reason: undefined, atMs });
  }

  track(event: TrackEvent, atMs: number): void {
    if (this.endpointMissing) return;
    if (this.custom.length >= MAX_QUEUED_CUSTOM_EVENTS) this.custom.shift();
    this.custom.push({
      type: 'Custom',
      flagKey: event.key,
      timestamp: new Date(atMs).toISOString(),
      ...(event.userId !== undefined ? { userId: event.userId } : {}),
      ...(event.metadata !== undefined ? { metadata: event.metadata } : {}),
    });
  }

  /** Sends everything queued. Failures are reported through `onError`; never throws. */
  async flush(): Promise<void> {
    const events: WireEvent[] = [...this.served.values()].map((entry) => ({
      type: 'Evaluation',
      flagKey: entry.flagKey,
      variation: entry.variation,
      ...(entry.userId !== undefined ? { userId: entry.userId } : {}),
      ...(entry.reason !== undefined ? { reason: entry.reason } : {}),
      timestamp: new Date(entry.atMs).toISOString(),
    }));
    events.push(...this.custom);
    this.served.clear();
    this.namedUsers = 0;
    this.custom = [];
    for (let start = 0; start < events.length && !this.endpointMissing;) {
      const batch = events.slice(start, start + MAX_EVENTS_PER_REQUEST);
      start += batch.length;
      await this.send(batch);
    }
  }

  private async send(events: WireEvent[]): Promise<void> {
    const { baseUrl, sdkKey, requestTimeoutMs } = this.options;
    try {
      const response = await this.options.fetch(`${baseUrl}/v1/sdk/events`, {
        method: 'POST',
        headers: { authorization: sdkKey, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
      await response.body?.cancel();
      if (response.status === 404) this.endpointMissing = true;
      else if (response.status >= 300)
        this.options.onError(new Error(`POST /v1/sdk/events answered ${response.status}`));
    } catch (error) {
      // Analytics are best effort: a batch that cannot be sent is dropped, not retried forever.
      this.options.onError(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
