import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from '../test-support/harness.js';
import { COMPRESS_FROM_BYTES } from './answer-compression.js';

/** Design record 062: large bulk answers are compressed for clients that accept it. */
describe('bulk answers compressed', () => {
  let vexil: TestVexil;
  let clientKey: string;
  let serverKey: string;

  beforeAll(async () => {
    vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    ({ sdkKey: clientKey } = await createProjectWithFlag(vexil, org, { keyType: 'ClientSide' }));
    serverKey = (
      await callOk(
        vexil,
        'POST',
        '/api/v1/orgs/acme/projects/web/environments/production/sdk-keys',
        org.token,
        {
          name: 'server',
          type: 'ServerSide',
        },
      )
    ).key as string;
    // Enough client-visible flags for an answer over the threshold.
    for (let i = 0; i < 60; i++)
      await callOk(vexil, 'POST', '/api/v1/orgs/acme/projects/web/flags', org.token, {
        key: `client-flag-${i}`,
        clientSideVisible: true,
      });
  });
  afterAll(() => vexil.close());

  const ask = (url: string, headers: Record<string, string>) =>
    vexil.inject({
      method: 'POST',
      url,
      headers: { authorization: clientKey, 'content-type': 'application/json', ...headers },
      payload: JSON.stringify({ context: { userId: 'u1', targetingKey: 'u1' } }),
    });

  for (const url of ['/v1/client/evaluate', '/ofrep/v1/evaluate/flags']) {
    it(`${url}: Brotli for browsers, gzip where only it is accepted, the same answer`, async () => {
      const plain = await ask(url, {});
      expect(plain.statusCode).toBe(200);
      expect(plain.rawPayload.length).toBeGreaterThanOrEqual(COMPRESS_FROM_BYTES);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers.vary).toContain('accept-encoding');

      const browser = await ask(url, { 'accept-encoding': 'gzip, deflate, br, zstd' });
      expect(browser.headers['content-encoding']).toBe('br');
      expect(Number(browser.headers['content-length'])).toBe(browser.rawPayload.length);
      expect(browser.rawPayload.length).toBeLessThan(plain.rawPayload.length / 4);
      expect(brotliDecompressSync(browser.rawPayload).equals(plain.rawPayload)).toBe(true);

      const gzip = await ask(url, { 'accept-encoding': 'gzip' });
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gzip.rawPayload).equals(plain.rawPayload)).toBe(true);

      const refused = await ask(url, { 'accept-encoding': 'br;q=0, gzip;q=0' });
      expect(refused.headers['content-encoding']).toBeUndefined();
      expect(refused.rawPayload.equals(plain.rawPayload)).toBe(true);
    });
  }

  it('OFREP: the compressed answer’s ETag is the answer’s, weak, and revalidates', async () => {
    const url = '/ofrep/v1/evaluate/flags';
    const plain = await ask(url, {});
    const browser = await ask(url, { 'accept-encoding': 'br' });
    expect(browser.headers.etag).toBe(`W/${String(plain.headers.etag)}`);
    const again = await ask(url, {
      'accept-encoding': 'br',
      'if-none-match': String(browser.headers.etag),
    });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
  });

  it('a small answer is sent as it is', async () => {
    const server = await vexil.inject({
      method: 'POST',
      url: '/v1/sdk/evaluate',
      headers: {
        authorization: serverKey,
        'content-type': 'application/json',
        'accept-encoding': 'br',
      },
      payload: JSON.stringify({ flagKey: 'client-flag-0', context: { userId: 'u1' } }),
    });
    expect(server.statusCode).toBe(200);
    expect(server.headers['content-encoding']).toBeUndefined();
    expect(server.headers.vary).toBeUndefined();
  });
});
