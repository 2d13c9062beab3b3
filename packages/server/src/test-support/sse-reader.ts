/** Upper bound for any awaited event; streams normally answer in milliseconds. */
const WAIT_MS = 5000;

/** One parsed Server-Sent Event. */
export interface SseEvent {
  event: string;
  id: string | undefined;
  data: string;
}

/**
 * A streaming SSE reader over a real socket (fetch), parsing frames as an EventSource would.
 * `next` consumes events in arrival order; `comments` counts heartbeats.
 */
export class SseReader {
  readonly events: SseEvent[] = [];
  comments = 0;
  ended = false;
  private consumed = 0;
  private wake: (() => void) | undefined;

  constructor(
    readonly response: Response,
    private readonly abort: AbortController,
  ) {
    void this.read();
  }

  private async read(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of this.response.body!) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          this.parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
        this.wake?.();
      }
    } catch {
      // Aborted by the test.
    }
    this.ended = true;
    this.wake?.();
  }

  private parse(block: string): void {
    const event: SseEvent = { event: 'message', id: undefined, data: '' };
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments += 1;
        continue;
      }
      const colon = line.indexOf(':');
      const field = line.slice(0, colon);
      const value = line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event.event = value;
      else if (field === 'id') event.id = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) return;
    event.data = data.join('\n');
    this.events.push(event);
  }

  /** Waits (bounded) until `ready()` holds. */
  async until(ready: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (!ready()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }

  /** The next unread event; fails when none arrives within the bounded wait. */
  async next(): Promise<SseEvent> {
    await this.until(() => this.events.length > this.consumed || this.ended, 'an event');
    const event = this.events[this.consumed];
    if (!event) throw new Error('stream ended');
    this.consumed += 1;
    return event;
  }

  /** Events not yet read by `next`. */
  unread(): SseEvent[] {
    return this.events.slice(this.consumed);
  }

  close(): void {
    this.abort.abort();
  }
}
