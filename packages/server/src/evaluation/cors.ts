import fastifyCors from '@fastify/cors';
import type { App } from '../app.js';

/**
 * Browsers call the evaluation API and OFREP directly (client SDKs, the OFREP web provider): any
 * origin may, because client keys are public by design (spec: Authentication rule 6) and no
 * cookie is ever involved. The management API sends no CORS headers.
 */
export async function allowBrowserCalls(app: App): Promise<void> {
  await app.register(fastifyCors, {
    origin: '*',
    methods: ['GET', 'POST'],
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'If-None-Match',
      'Last-Event-ID',
      'X-API-Key',
      'X-Service-Reports-Evaluations',
      'X-Vexil-Stream-Id',
    ],
    exposedHeaders: ['ETag', 'Retry-After', 'X-Vexil-Stream-Id', 'X-Vexil-Stream-Updated'],
    maxAge: 600,
  });
}
