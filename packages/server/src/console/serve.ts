import fastifyStatic from '@fastify/static';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { App } from '../http/app-instance.js';

/** Where `npm run build` puts the console (packages/console/dist), seen from dist/console/. */
const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

/**
 * The console's Content-Security-Policy (design record 023): scripts, styles, fonts and API calls
 * from this origin only. `style-src` allows inline styles because the dialog primitives set
 * positioning and scroll-lock styles at run time; no inline script is ever allowed.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The paths the console routes on the client; each is answered with its index.html. */
const CLIENT_ROUTES = [
  '/',
  '/sign-in',
  '/forgot-password',
  '/reset-password',
  '/orgs/*',
  '/invitations/*',
];

/**
 * Serves the built web console at `/` (design record 023): hashed `/assets/*` files cached for a
 * year and sent as the Brotli or gzip copy written at build time when `accept-encoding` admits it
 * (design record 037), `index.html` never cached and answered for every client-side route, each
 * with a strict Content-Security-Policy. Nothing is registered when the console was not built (a server-only
 * build), so the API's own answers are unchanged.
 */
export async function registerConsole(app: App, directory = CONSOLE_DIST): Promise<void> {
  if (!existsSync(`${directory}/index.html`)) {
    app.log.warn({ directory }, 'web console not built; / is not served');
    return;
  }
  await app.register(async (console) => {
    console.addHook('onSend', async (_request, reply) => {
      reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
      reply.header('referrer-policy', 'no-referrer');
    });
    await console.register(fastifyStatic, {
      root: directory,
      wildcard: false,
      index: false,
      cacheControl: false,
      preCompressed: true,
      setHeaders: (response, path) => {
        const asset = path.includes('/assets/');
        response.setHeader(
          'cache-control',
          asset ? 'public, max-age=31536000, immutable' : 'no-cache',
        );
        // Caches must keep the compressed and the plain answer apart.
        if (asset) response.setHeader('vary', 'accept-encoding');
      },
    });
    // Browsers and crawlers that ask for the conventional icon get the console's SVG one.
    console.get('/favicon.ico', { schema: { hide: true } }, (_request, reply) =>
      reply.redirect('/favicon.svg', 301),
    );
    for (const route of CLIENT_ROUTES)
      console.get(route, { schema: { hide: true } }, (_request, reply) =>
        reply.sendFile('index.html'),
      );
  });
}
