import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from '@playwright/test';
import { build } from 'vite';
import { apiCall, server } from './fixtures';
import { freePort } from './server';

/**
 * OFREP event streams (design record 052) with clients no one here wrote: a React page on an
 * origin of its own, the stock OpenFeature web SDK, React SDK and OFREP web provider with polling
 * off. A toggle re-renders it through the full node and through a relay following that node.
 */
const CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));
const PAGE = fileURLToPath(new URL('./ofrep-page', import.meta.url));
const project = '/api/v1/orgs/acme/projects/ofrep-shop';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
};

let pageOrigin: string;
let pageServer: Server;
let pageDir: string;
let relay: ChildProcess;
let relayUrl: string;
let clientKey: string;

/** Serves the built page from a directory on a second local origin. */
async function servePage(directory: string): Promise<Server> {
  const listener = createServer((request, response) => {
    const path = normalize(new URL(request.url ?? '/', 'http://page').pathname).replace(/^\/+/, '');
    try {
      const body = readFileSync(join(directory, path === '' ? 'index.html' : path));
      response.writeHead(200, { 'content-type': TYPES[extname(path) || '.html'] ?? 'text/plain' });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  return listener;
}

test.beforeAll(async () => {
  test.setTimeout(180_000);
  pageDir = mkdtempSync(join(tmpdir(), 'vexil-ofrep-page-'));
  await build({
    root: PAGE,
    configFile: false,
    logLevel: 'warn',
    base: './',
    build: { outDir: pageDir, emptyOutDir: true },
  });
  pageServer = await servePage(pageDir);
  pageOrigin = `http://localhost:${(pageServer.address() as AddressInfo).port}`;

  await apiCall('POST', '/api/v1/orgs/acme/projects', { key: 'ofrep-shop', name: 'OFREP shop' });
  await apiCall('POST', `${project}/flags`, { key: 'headline', clientSideVisible: true });
  clientKey = (
    await apiCall<{ key: string }>('POST', `${project}/environments/production/sdk-keys`, {
      name: 'shop',
      type: 'ClientSide',
    })
  ).key;
  const relayKey = (
    await apiCall<{ key: string }>('POST', '/api/v1/orgs/acme/relay-keys', { name: 'ofrep-edge' })
  ).key;
  const port = await freePort();
  relay = spawn(process.execPath, [CLI, 'relay', '--upstream', server.url], {
    env: {
      ...process.env,
      VEXIL_RELAY_KEY: relayKey,
      VEXIL_PORT: String(port),
      VEXIL_LOG_LEVEL: 'warn',
      VEXIL_SNAPSHOT_CACHE_DIR: '',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  relayUrl = `http://127.0.0.1:${port}`;
  await expect
    .poll(
      () =>
        fetch(`${relayUrl}/readyz`).then(
          (r) => r.ok,
          () => false,
        ),
      { timeout: 60_000 },
    )
    .toBe(true);
});

test.afterAll(async () => {
  relay?.kill('SIGTERM');
  await new Promise<void>((resolve) => pageServer?.close(() => resolve()));
  rmSync(pageDir, { recursive: true, force: true });
  await apiCall('DELETE', project).catch(() => undefined);
});

const toggle = (enabled: boolean) =>
  apiCall('POST', `${project}/flags/headline/environments/production/toggle`, { enabled });

for (const through of ['full node', 'relay'] as const) {
  test(`a toggle re-renders a page on another origin through the ${through}, polling off`, async ({
    page,
  }) => {
    await toggle(false);
    const vexil = through === 'relay' ? relayUrl : server.url;
    const streams: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/v1/ofrep/events')) streams.push(request.url());
    });
    await page.goto(`${pageOrigin}/?vexil=${encodeURIComponent(vexil)}&key=${clientKey}`);
    const headline = page.getByTestId('headline');
    await expect(headline).toHaveText('off');
    await expect.poll(() => streams.length).toBeGreaterThan(0);
    expect(new URL(streams[0]!).origin).toBe(new URL(vexil).origin);

    // The relay hears of the change over its feed; the page only over the event stream.
    const started = Date.now();
    await toggle(true);
    await expect(headline).toHaveText('on');
    test.info().annotations.push({
      type: 'toggle → re-render (ms)',
      description: String(Date.now() - started),
    });
    await toggle(false);
    await expect(headline).toHaveText('off');
  });
}
