import type { App } from './app-instance.js';

/**
 * `X-Content-Type-Options: nosniff` as a flat name/value pair (the lean lane's header form): a
 * browser must never read an answer as another type than the one it declares.
 */
export const NO_SNIFF = ['x-content-type-options', 'nosniff'] as const;

/** Every answer `app` (and what is registered in it afterwards) sends carries {@link NO_SNIFF}. */
export function forbidSniffing(app: App): void {
  app.addHook('onRequest', async (_request, reply) => {
    void reply.header(...NO_SNIFF);
  });
}

/**
 * Every answer of `api` carries `Cache-Control: no-store`: management and sign-in answers are the
 * caller's own, and some show a secret once (tokens, SDK keys, invitation links, webhook
 * secrets), which no browser or proxy cache may keep.
 */
export function forbidStoring(api: App): void {
  api.addHook('onRequest', async (_request, reply) => {
    void reply.header('cache-control', 'no-store');
  });
}
