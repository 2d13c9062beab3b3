import { describe, expect, it } from 'vitest';
import { SseParser } from './sse-parser.js';

describe('SseParser', () => {
  it('parses events, ids, multi-line data and ignores comments', () => {
    const parser = new SseParser();
    expect(
      parser.push('event: put\nid: 7\ndata: {"a":\ndata: 1}\n\n: ping\n\ndata:plain\n\n'),
    ).toEqual([
      { event: 'put', id: '7', hasId: true, data: '{"a":\n1}' },
      // The last id persists, as in EventSource.
      { event: 'message', id: '7', hasId: false, data: 'plain' },
    ]);
  });

  it('joins frames split anywhere across chunks, with any line ending', () => {
    const text = 'event: put\r\nid: 3\rdata: x\r\n\r\nevent: put\ndata: y\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const parser = new SseParser();
      const messages = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut))];
      expect(messages).toEqual([
        { event: 'put', id: '3', hasId: true, data: 'x' },
        { event: 'put', id: '3', hasId: false, data: 'y' },
      ]);
    }
  });

  it('keeps retry, skips frames without data and fields it does not know', () => {
    const parser = new SseParser();
    expect(parser.push('retry: 2500\nevent: put\nfoo: bar\n\ndata\n\n')).toEqual([
      { event: 'message', id: undefined, hasId: false, data: '' },
    ]);
    expect(parser.retryMs).toBe(2500);
  });
});
