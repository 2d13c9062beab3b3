import type { SdkFlag } from '@vexil/engine';
import { createParser } from 'eventsource-parser';
import { describe, expect, it } from 'vitest';
import { snapshotFromCopy } from '../evaluation/snapshots.js';
import { relayEnvironmentFrame, relayFeedFrame, type RelayEnvironmentEvent } from './protocol.js';

const flag = (index: number): SdkFlag => ({
  key: `flag-${index}-${'ü€😀'.repeat(index % 3)}`,
  version: index,
  type: 'String',
  enabled: index % 2 === 0,
  variations: [
    { key: 'a', value: `Grüße ${index}` },
    { key: 'b', value: 'line\nbreak "quoted"\u2028' },
  ],
  rules: [],
  fallthrough: { type: 'Fixed', variation: 'a' },
  offVariation: 'b',
  prerequisites: [],
});

const event: RelayEnvironmentEvent = {
  environmentId: '0190a000-0000-7000-8000-000000000001',
  organizationId: '0190a000-0000-7000-8000-000000000002',
  projectId: '0190a000-0000-7000-8000-000000000003',
  version: 12,
  clientSideKeys: ['flag-1-ü€😀', 'flag-0-'],
  configuration: {
    environment: 'production',
    version: 12,
    flags: Array.from({ length: 70 }, (_, index) => flag(index)),
    segments: [{ key: 'beta', version: 1, conditions: [], conditionLogic: 'And' }],
  },
  sdkKeys: [{ id: '0190a000-0000-7000-8000-000000000004', hash: 'ab12', type: 'ServerSide' }],
};

describe('relayEnvironmentFrame', () => {
  it('writes, from a snapshot alone, the environment event the snapshot was built from', async () => {
    // A relay holds only the snapshot; the frame it passes on must be what its upstream sent.
    const snapshot = await snapshotFromCopy(event);
    const chunks = await relayEnvironmentFrame(snapshot, JSON.stringify(event.sdkKeys));
    const frame = Buffer.concat(chunks.map((chunk) => Buffer.from(chunk))).toString('utf8');
    expect(frame).toBe(relayFeedFrame('environment', event));
    const parsed: unknown[] = [];
    createParser({ onEvent: (message) => parsed.push(JSON.parse(message.data)) }).feed(frame);
    expect(parsed).toEqual([event]);
  });
});
