import { gunzipSync } from 'node:zlib';
import type { SdkConfiguration, SdkFlag } from '@vexil/engine';
import { describe, expect, it } from 'vitest';
import { ConfigurationDocumentWriter } from './configuration-document.js';

const flag = (index: number): SdkFlag => ({
  key: `flag-${index}-${'ü€😀'.repeat(index % 4)}`,
  version: index,
  type: 'String',
  enabled: index % 3 !== 0,
  variations: [
    { key: 'a', value: `Grüße ${index}` },
    { key: 'b', value: 'line\nbreak "quoted"' },
  ],
  rules: [],
  fallthrough: { type: 'Fixed', variation: index % 2 ? 'a' : 'b' },
  offVariation: 'b',
  prerequisites: [],
});

const configuration = (flagCount: number): SdkConfiguration => ({
  environment: 'production',
  version: 7,
  flags: Array.from({ length: flagCount }, (_, index) => flag(index)),
  segments: [
    { key: 'beta', version: 1, conditions: [], conditionLogic: 'And' },
  ] as SdkConfiguration['segments'],
});

/** Writes `config` with its flags in pages of `pageSize`, as the snapshot store does. */
async function build(config: SdkConfiguration, pageSize = 500) {
  const writer = new ConfigurationDocumentWriter();
  writer.begin(config.environment!, config.version);
  for (let start = 0; start < config.flags.length; start += pageSize) {
    await writer.addFlags(config.flags.slice(start, start + pageSize));
  }
  return writer.finish(config.segments);
}

describe('ConfigurationDocument and its writer', () => {
  it('holds exactly JSON.stringify of the configuration, gzipped and inflated', async () => {
    const config = configuration(100);
    const document = await build(config);
    expect(gunzipSync(await document.gzipped()).toString()).toBe(JSON.stringify(config));
    expect((await document.plain()).toString()).toBe(JSON.stringify(config));
    expect((await document.gzipped()).length).toBeLessThan(JSON.stringify(config).length / 4);
  });

  it('reads every flag on its own, across blocks and multi-byte characters', async () => {
    const config = configuration(100);
    const document = await build(config);
    config.flags.forEach((sdkFlag, index) => {
      expect(document.flagJson(index).toString()).toBe(JSON.stringify(sdkFlag));
    });
    expect(() => document.flagJson(100)).toThrow(RangeError);
  });

  it('writes the same document whatever the pages the flags come in', async () => {
    const config = configuration(100);
    const whole = await build(config);
    for (const pageSize of [1, 7, 32, 33]) {
      const paged = await build(config, pageSize);
      expect(gunzipSync(await paged.gzipped()).toString()).toBe(JSON.stringify(config));
      expect(paged.etag).toBe(whole.etag);
      expect(paged.flagJson(99).toString()).toBe(JSON.stringify(config.flags[99]));
    }
  });

  it('has a weak ETag that follows the content', async () => {
    const first = await build(configuration(3));
    const same = await build(configuration(3));
    const other = await build(configuration(4));
    expect(first.etag).toMatch(/^W\/"[\w-]+"$/);
    expect(same.etag).toBe(first.etag);
    expect(other.etag).not.toBe(first.etag);
  });

  it('shares one inflated copy between concurrent readers', async () => {
    const document = await build(configuration(10));
    const [a, b] = await Promise.all([document.plain(), document.plain()]);
    expect(a).toBe(b);
    expect(await document.plain()).toBe(a);
  });

  it('serializes an empty environment', async () => {
    const config = configuration(0);
    const document = await build(config);
    expect((await document.plain()).toString()).toBe(JSON.stringify(config));
  });

  it("carries a flag's metadata, which changes the ETag", async () => {
    const plain = configuration(3);
    const described = configuration(3);
    described.flags[1] = { ...described.flags[1]!, metadata: { team: 'payments', since: 3 } };
    const [before, after] = await Promise.all([build(plain), build(described)]);
    expect(JSON.parse(after.flagJson(1).toString()).metadata).toEqual({
      team: 'payments',
      since: 3,
    });
    expect(after.etag).not.toBe(before.etag);
  });
});
