import type { SdkConfiguration, SdkFlag, SdkSegment } from '@vexil/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, testDialects } from '../test-support/harness.js';
import type { SseEvent, SseReader } from '../test-support/sse-reader.js';
import { startStreamingNode, type StreamingNode } from '../test-support/streaming-node.js';
import { patchEvents, type ConfigurationChange } from './configuration-changes.js';

describe('patch events of one change', () => {
  it('segments first, then flags, then deletions; only the last event carries the version', () => {
    const change: ConfigurationChange = {
      environmentId: 'e',
      from: 6,
      to: 9,
      etag: 'W/"x"',
      flags: [{ key: 'a', json: '{"key":"a","version":3}' }],
      deletedFlags: ['b'],
      segments: [{ key: 's', version: 2, conditions: [], conditionLogic: 'And' }],
      deletedSegments: ['t'],
      flagKeys: ['a'],
      segmentKeys: ['s'],
      clientSideKeys: [],
    };
    expect(patchEvents(change)).toBe(
      'event: patch\ndata: {"path":"/segments/s","data":{"key":"s","version":2,"conditions":[],"conditionLogic":"And"}}\n\n' +
        'event: patch\ndata: {"path":"/flags/a","data":{"key":"a","version":3}}\n\n' +
        'event: delete\ndata: {"path":"/flags/b"}\n\n' +
        'event: delete\ndata: {"path":"/segments/t"}\nid: 9\n\n',
    );
  });
});

/** Applies `patch`/`delete` events to a configuration, as an SDK would. */
function applyEvents(configuration: SdkConfiguration, events: SseEvent[]): SdkConfiguration {
  let flags = [...configuration.flags];
  let segments = [...configuration.segments];
  let version = configuration.version;
  for (const event of events) {
    const { path, data } = JSON.parse(event.data) as { path: string; data?: unknown };
    const [, kind, key] = /^\/(flags|segments)\/(.+)$/.exec(path) as unknown as [
      string,
      string,
      string,
    ];
    if (kind === 'flags') {
      flags = flags.filter((flag) => flag.key !== key);
      if (event.event === 'patch') flags.push(data as SdkFlag);
    } else {
      segments = segments.filter((segment) => segment.key !== key);
      if (event.event === 'patch') segments.push(data as SdkSegment);
    }
    if (event.id !== undefined) version = Number(event.id);
  }
  const byKey = <T extends { key: string }>(items: T[]) =>
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { ...configuration, version, flags: byKey(flags), segments: byKey(segments) };
}

describe.each(testDialects())('GET /v1/sdk/stream?patches=true on %s', (dialect) => {
  let node: StreamingNode;
  let serverKey: string;
  let clientKey: string;

  const manage = (...call: Parameters<StreamingNode['manage']>) => node.manage(...call);
  const toggle = (flag: string, enabled: boolean) => node.toggle(flag, enabled);
  const download = async () =>
    (await call(node.vexil, 'GET', '/v1/sdk/flags', { token: serverKey })).body as SdkConfiguration;
  const sorted = (configuration: SdkConfiguration) => applyEvents(configuration, []);
  const stream = (path: string, key: string, lastEventId?: number) =>
    node.stream(path, { key, ...(lastEventId === undefined ? {} : { lastEventId }) });
  /** The events of the next change: up to and including the one that carries an id. */
  async function nextChange(reader: SseReader): Promise<SseEvent[]> {
    const events: SseEvent[] = [];
    for (;;) {
      const event = await reader.next();
      events.push(event);
      if (event.id !== undefined) return events;
    }
  }

  beforeAll(async () => {
    node = await startStreamingNode(dialect);
    ({ serverKey, clientKey } = node);
    for (const key of ['checkout-copy', 'pricing']) await manage('POST', '/flags', { key });
    await manage('POST', '/flags', { key: 'banner', clientSideVisible: true });
  });

  afterAll(() => node.close());

  it('a toggle is one patch with the flag as downloaded, its id the new version, far smaller than a put', async () => {
    const reader = await stream('/v1/sdk/stream?patches=true', serverKey);
    const put = await reader.next();
    expect(put.event).toBe('put');

    await toggle('pricing', true);
    const events = await nextChange(reader);
    expect(events).toHaveLength(1);
    const patch = events[0]!;
    const current = await download();
    expect(patch).toMatchObject({ event: 'patch', id: String(current.version) });
    expect(JSON.parse(patch.data)).toEqual({
      path: '/flags/pricing',
      data: current.flags.find((flag) => flag.key === 'pricing'),
    });
    // Every other flag stays where it was: only the toggled one is sent.
    expect(patch.data.length).toBeLessThan(put.data.length / 2);
    reader.close();
  });

  it('new flags and segments come as patches, an archived flag as a delete; applied to the put they give the download', async () => {
    const reader = await stream('/v1/sdk/stream?patches=true', serverKey);
    let held = JSON.parse((await reader.next()).data) as SdkConfiguration;
    const follow = async () => {
      const events = await nextChange(reader);
      held = applyEvents(held, events);
      expect(held).toEqual(sorted(await download()));
      return events;
    };

    const segment = await manage('POST', '/segments', {
      key: 'dutch',
      conditions: [{ attribute: 'country', operator: 'Equals', values: ['NL'] }],
    });
    expect((await follow()).map((event) => JSON.parse(event.data).path)).toEqual([
      '/segments/dutch',
    ]);
    const flag = await manage('POST', '/flags', { key: 'dutch-banner' });
    expect((await follow()).map((event) => event.event)).toEqual(['patch']);
    await manage('POST', '/flags/dutch-banner/environments/production/rules', {
      variationId: flag.variations[0].id,
      userSegmentId: segment.id,
    });
    await follow();
    await manage('PATCH', `/segments/dutch`, {
      conditions: [{ attribute: 'country', operator: 'Equals', values: ['NL', 'BE'] }],
    });
    expect((await follow()).map((event) => JSON.parse(event.data).path)).toEqual([
      '/segments/dutch',
    ]);
    await manage('POST', '/flags/dutch-banner/archive?force=true');
    const archived = (await follow())[0]!;
    expect(archived).toMatchObject({ event: 'delete' });
    expect(JSON.parse(archived.data)).toEqual({ path: '/flags/dutch-banner' });
    reader.close();
  });

  it('resumes from a version it holds changes since with those changes, from any other with a put', async () => {
    const first = await stream('/v1/sdk/stream?patches=true', serverKey);
    const { version } = JSON.parse((await first.next()).data) as SdkConfiguration;
    first.close();
    await toggle('checkout-copy', true);
    await toggle('new-checkout', true);
    const current = await download();

    const resumed = await stream('/v1/sdk/stream?patches=true', serverKey, version);
    const events: SseEvent[] = [];
    while (events.at(-1)?.id !== String(current.version))
      events.push(...(await nextChange(resumed)));
    // One change or two, as the node happened to see them.
    expect(events.map((event) => [event.event, JSON.parse(event.data).path]).sort()).toEqual([
      ['patch', '/flags/checkout-copy'],
      ['patch', '/flags/new-checkout'],
    ]);
    resumed.close();

    // A version before the node's first stream, and one it never served.
    for (const from of [1, current.version + 5]) {
      const reader = await stream('/v1/sdk/stream?patches=true', serverKey, from);
      expect(await reader.next()).toMatchObject({ event: 'put', id: String(current.version) });
      reader.close();
    }
  });

  it('a client stream hears of a change only when its answers change', async () => {
    const context = Buffer.from(JSON.stringify({ userId: 'u1' })).toString('base64url');
    const reader = await stream(`/v1/client/stream?context=${context}`, clientKey);
    expect((await reader.next()).event).toBe('stream');
    expect(JSON.parse((await reader.next()).data).flags.banner.reason).toBe('DISABLED');

    // A real change of a flag the client does not see.
    const pricing = (await download()).flags.find((flag) => flag.key === 'pricing');
    await toggle('pricing', !pricing?.enabled);
    const pings = reader.comments;
    await reader.until(() => reader.comments >= pings + 3, 'three heartbeats after the change');
    expect(reader.unread()).toEqual([]);

    await toggle('banner', true);
    expect(JSON.parse((await reader.next()).data).flags.banner.reason).not.toBe('DISABLED');
    reader.close();
  });
});
