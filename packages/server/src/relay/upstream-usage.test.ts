import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import type { UsageBatch } from '../usage/aggregator.js';
import { MAX_RELAY_USAGE_ROWS, type RelayUsageBody } from '../relay-feed/protocol.js';
import { UpstreamBackingOff, UpstreamUsageStore } from './upstream-usage.js';

/** A batch of two evaluation buckets, one custom-event bucket and one key use. */
function batch(): UsageBatch {
  const hourMs = Date.UTC(2026, 5, 1, 12);
  return {
    evaluations: new Map([
      [
        'env-1',
        new Map([
          [
            'checkout',
            new Map([
              ['on', { variationKey: 'on', hourMs, count: 3, lastMs: hourMs + 5 }],
              ['off', { variationKey: 'off', hourMs, count: 1, lastMs: hourMs + 9 }],
            ]),
          ],
        ]),
      ],
    ]),
    customEvents: new Map([
      ['env-1', new Map([[`signup\n${hourMs}`, { eventKey: 'signup', hourMs, count: 2 }]])],
    ]),
    customBucketCount: 1,
    lastUses: {
      sdk_keys: new Map([['key-1', hourMs + 7]]),
      api_tokens: new Map(),
      users: new Map(),
    },
  };
}

describe('a relay sends its usage upstream', () => {
  let server: Server;
  let origin: string;
  let status = 204;
  /** The body of a 200 answer. */
  let answer = '';
  const received: { authorization?: string; body: RelayUsageBody }[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString()));
      request.on('end', () => {
        received.push({
          authorization: request.headers.authorization,
          body: JSON.parse(text) as RelayUsageBody,
        });
        if (status === 200) {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(answer);
          return;
        }
        response.writeHead(status, { 'content-type': 'application/problem+json' });
        response.end(status === 204 ? undefined : JSON.stringify({ detail: 'refused' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const store = (refused: string[] = []) =>
    new UpstreamUsageStore({
      upstreamUrl: origin,
      relayKey: 'vxr_test',
      intervalMs: 60_000,
      clock: systemClock,
      onRefused: (code, detail) => refused.push(`${String(code)} ${detail}`),
    });

  it('posts the protocol body with the relay key', async () => {
    received.length = 0;
    status = 204;
    await store().write(batch());
    expect(received).toEqual([
      {
        authorization: 'Bearer vxr_test',
        body: {
          evaluations: [
            expect.objectContaining({ flagKey: 'checkout', variation: 'on', count: 3 }),
            expect.objectContaining({ flagKey: 'checkout', variation: 'off', count: 1 }),
          ],
          customEvents: [expect.objectContaining({ eventKey: 'signup', count: 2 })],
          keyUses: [{ keyId: 'key-1', atMs: Date.UTC(2026, 5, 1, 12) + 7 }],
        },
      },
    ]);
    expect(received[0]?.body.evaluations[0]?.lastAtMs).toBe(Date.UTC(2026, 5, 1, 12) + 5);
  });

  it('keeps a batch the upstream could not take, and backs off before sending again', async () => {
    status = 503;
    const sending = store();
    await expect(sending.write(batch())).rejects.toThrow(/503/);
    received.length = 0;
    await expect(sending.write(batch())).rejects.toBeInstanceOf(UpstreamBackingOff);
    expect(received).toEqual([]);
  });

  it('records the guarded plans the upstream names, and sends their exposures in bodies of their own', async () => {
    const plan = {
      planId: 'plan-1',
      environmentId: 'env-1',
      flagKey: 'checkout',
      targetVariationKey: 'on',
      metric: 'refund',
    };
    const sending = store();
    status = 200;
    answer = JSON.stringify({ plans: [plan] });
    await sending.write(batch());
    expect(await sending.activePlans()).toEqual([plan]);

    received.length = 0;
    const rows = Array.from({ length: MAX_RELAY_USAGE_ROWS + 1 }, (_, i) => ({
      planId: 'plan-1',
      userHash: `user-${i}`,
      side: i % 2,
      exposedMs: 1000 + i,
      metricMs: null,
    }));
    expect([...(await sending.writeExposures(rows))]).toEqual(['plan-1']);
    expect(received.map(({ body }) => body.exposures?.length)).toEqual([MAX_RELAY_USAGE_ROWS, 1]);
    expect(received[1]?.body).toEqual({
      evaluations: [],
      customEvents: [],
      keyUses: [],
      exposures: [rows[MAX_RELAY_USAGE_ROWS]],
    });

    // An answer it cannot read, or an upstream that answers 204 (an older version): no plans.
    answer = '{"plans":[{"planId":1}]}';
    await sending.write(batch());
    expect(await sending.activePlans()).toEqual([]);
    answer = JSON.stringify({ plans: [plan] });
    await sending.write(batch());
    status = 204;
    await sending.write(batch());
    expect(await sending.activePlans()).toEqual([]);
  });

  it('drops a batch the upstream refuses, counting and reporting it', async () => {
    status = 403;
    const refused: string[] = [];
    const sending = store(refused);
    await sending.write(batch());
    expect(sending.refusedCounts).toBe(6);
    expect(refused).toEqual(['403 {"detail":"refused"}']);
  });
});
