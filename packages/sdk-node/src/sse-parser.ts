/** One dispatched Server-Sent Events message. */
export interface SseMessage {
  /** The `event` field; `message` when the frame named none. */
  event: string;
  /** The `data` lines joined with `\n`. */
  data: string;
  /** The last `id` seen on the stream so far (it persists across messages, as in EventSource). */
  id: string | undefined;
  /** Whether this message itself had an `id` field. */
  hasId: boolean;
}

const LINE_END = /\r\n|\r|\n/g;

/**
 * An incremental parser of the `text/event-stream` format (WHATWG HTML, "Server-sent events",
 * §9.2.6 Interpreting an event stream). Feed it decoded text in chunks of any size; it returns
 * the messages completed by each chunk. Comments (`: ping`) and unknown fields are ignored;
 * `retry` is kept in {@link retryMs}.
 */
export class SseParser {
  /** The server's `retry` field, in milliseconds, when it sent one. */
  retryMs: number | undefined;
  private buffer = '';
  /** The previous chunk ended in `\r`: a `\n` opening the next one belongs to the same line end. */
  private skipLineFeed = false;
  private data: string[] = [];
  private eventType = '';
  private lastEventId: string | undefined;
  private idSeen = false;

  push(chunk: string): SseMessage[] {
    if (chunk.length === 0) return [];
    const text = this.skipLineFeed && chunk.startsWith('\n') ? chunk.slice(1) : chunk;
    this.skipLineFeed = false;
    this.buffer += text;
    const messages: SseMessage[] = [];
    let start = 0;
    LINE_END.lastIndex = 0;
    for (let match = LINE_END.exec(this.buffer); match; match = LINE_END.exec(this.buffer)) {
      if (match[0] === '\r' && match.index === this.buffer.length - 1) this.skipLineFeed = true;
      this.line(this.buffer.slice(start, match.index), messages);
      start = match.index + match[0].length;
    }
    this.buffer = this.buffer.slice(start);
    return messages;
  }

  private line(line: string, messages: SseMessage[]): void {
    if (line === '') {
      this.dispatch(messages);
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const raw = colon < 0 ? '' : line.slice(colon + 1);
    const value = raw.startsWith(' ') ? raw.slice(1) : raw;
    if (field === 'event') this.eventType = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\u0000')) {
      this.lastEventId = value;
      this.idSeen = true;
    } else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
  }

  private dispatch(messages: SseMessage[]): void {
    if (this.data.length > 0) {
      messages.push({
        event: this.eventType || 'message',
        data: this.data.join('\n'),
        id: this.lastEventId,
        hasId: this.idSeen,
      });
    }
    this.data = [];
    this.eventType = '';
    this.idSeen = false;
  }
}
