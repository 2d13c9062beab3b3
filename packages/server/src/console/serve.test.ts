import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { registerConsole } from './serve.js';

async function consoleApp(directory?: string) {
  const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
  await registerConsole(app, directory);
  return app;
}

describe('the console is served pre-compressed (design record 037)', () => {
  const directory = mkdtempSync(join(tmpdir(), 'vexil-console-'));
  const script = 'console.log("a script long enough to be worth compressing");\n'.repeat(50);
  mkdirSync(join(directory, 'assets'));
  writeFileSync(join(directory, 'index.html'), '<!doctype html><title>Vexil</title>');
  writeFileSync(join(directory, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(directory, 'assets/index-abc123.js'), script);
  writeFileSync(join(directory, 'assets/index-abc123.js.br'), brotliCompressSync(script));
  writeFileSync(join(directory, 'assets/index-abc123.js.gz'), gzipSync(script));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('sends the Brotli copy to a browser accepting br and gzip, cached for a year', async () => {
    const app = await consoleApp(directory);
    const response = await app.inject({
      url: '/assets/index-abc123.js',
      headers: { 'accept-encoding': 'br, gzip' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-encoding']).toBe('br');
    expect(response.headers['vary']).toBe('accept-encoding');
    expect(response.headers['content-type']).toMatch(/javascript/);
    expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(response.rawPayload.length).toBeLessThan(script.length / 10);
    expect(brotliDecompressSync(response.rawPayload).toString()).toBe(script);
  });

  it('sends gzip to a browser without Brotli, and the file itself to one accepting neither', async () => {
    const app = await consoleApp(directory);
    const gzip = await app.inject({
      url: '/assets/index-abc123.js',
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.rawPayload).toString()).toBe(script);
    const plain = await app.inject({ url: '/assets/index-abc123.js' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['vary']).toBe('accept-encoding');
    expect(plain.body).toBe(script);
  });

  it('answers a client-side route with index.html, never cached', async () => {
    const app = await consoleApp(directory);
    const response = await app.inject({
      url: '/orgs/acme/projects/web/flags',
      headers: { 'accept-encoding': 'br, gzip' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-cache');
    expect(response.headers['content-encoding']).toBeUndefined();
    expect(response.body).toContain('<title>Vexil</title>');
  });

  it('answers /favicon.ico with the SVG icon', async () => {
    const app = await consoleApp(directory);
    const ico = await app.inject({ url: '/favicon.ico' });
    expect(ico.statusCode).toBe(301);
    expect(ico.headers['location']).toBe('/favicon.svg');
    const svg = await app.inject({ url: '/favicon.svg' });
    expect(svg.statusCode).toBe(200);
    expect(svg.headers['content-type']).toMatch(/^image\/svg\+xml/);
  });

  // The built console (the root `npm test` builds it first): what a first visit downloads.
  it('sends the initial JavaScript of the built console in under 300 KB', async () => {
    const app = await consoleApp();
    const index = await app.inject({ url: '/' });
    expect(index.statusCode, 'the console is built (npm run build)').toBe(200);
    const scripts = [...index.body.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map(
      (match) => match[1]!,
    );
    expect(scripts.length).toBeGreaterThan(0);
    let sent = 0;
    for (const url of scripts) {
      const response = await app.inject({ url, headers: { 'accept-encoding': 'br, gzip' } });
      expect(response.headers['content-encoding']).toBe('br');
      sent += response.rawPayload.length;
    }
    expect(sent).toBeLessThan(300 * 1024);
  });

  it('sends every compressed copy of the built console with the same content as its original', async () => {
    const app = await consoleApp();
    const assets = join(
      fileURLToPath(new URL('../../../console/dist/', import.meta.url)),
      'assets',
    );
    const originals = readdirSync(assets).filter((name) => /\.(js|css|svg)$/.test(name));
    expect(originals.length).toBeGreaterThan(0);
    for (const name of originals) {
      const plain = await app.inject({
        url: `/assets/${name}`,
        headers: { 'accept-encoding': '' },
      });
      for (const [encoding, decode] of [
        ['br', brotliDecompressSync],
        ['gzip', gunzipSync],
      ] as const) {
        const response = await app.inject({
          url: `/assets/${name}`,
          headers: { 'accept-encoding': encoding },
        });
        expect(response.headers['content-encoding'], name).toBe(encoding);
        expect(decode(response.rawPayload).equals(plain.rawPayload), `${name} as ${encoding}`).toBe(
          true,
        );
      }
    }
  });
});
