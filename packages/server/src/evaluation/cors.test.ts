import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from '../test-support/harness.js';

describe('CORS: browsers may call the evaluation API and OFREP, not the management API', () => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let clientKey: string;

  beforeAll(async () => {
    vexil = await createTestVexil('sqlite');
    org = await createOrg(vexil);
    ({ sdkKey: clientKey } = await createProjectWithFlag(vexil, org, { keyType: 'ClientSide' }));
  });
  afterAll(() => vexil.close());

  const preflight = (url: string) =>
    call(vexil, 'OPTIONS', url, {
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });

  it('answers preflights on /v1 and /ofrep/v1', async () => {
    for (const url of ['/v1/client/evaluate', '/ofrep/v1/evaluate/flags']) {
      const response = await preflight(url);
      expect(response.status, url).toBe(204);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(String(response.headers['access-control-allow-headers'])).toContain('Authorization');
    }
  });

  it('marks evaluation responses readable cross-origin, with the ETag exposed', async () => {
    const response = await call(vexil, 'POST', '/v1/client/evaluate', {
      token: clientKey,
      body: { context: { userId: 'u' } },
      headers: { origin: 'https://app.example.com' },
    });
    expect(response.status).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(String(response.headers['access-control-expose-headers'])).toContain('ETag');
  });

  it('adds no CORS headers to requests without an Origin (server SDKs)', async () => {
    const response = await call(vexil, 'POST', '/v1/client/evaluate', {
      token: clientKey,
      body: { context: { userId: 'u' } },
    });
    expect(response.status).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
    expect(response.headers['access-control-expose-headers']).toBeUndefined();
  });

  it('marks error answers readable cross-origin, so browsers see the problem body', async () => {
    const response = await call(vexil, 'POST', '/v1/client/evaluate', {
      token: 'vxl_cli_unknown',
      body: { context: { userId: 'u' } },
      headers: { origin: 'https://app.example.com' },
    });
    expect(response.status).toBe(401);
    expect(response.headers['access-control-allow-origin']).toBe('*');
  });

  it('marks event streams readable cross-origin too', async () => {
    // A stream takes its response over from Fastify, so the headers set before must go with it.
    const origin = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const context = Buffer.from(JSON.stringify({ userId: 'u' })).toString('base64url');
    const abort = new AbortController();
    const response = await fetch(
      `${origin}/v1/client/stream?sdkKey=${clientKey}&context=${context}`,
      { headers: { origin: 'https://app.example.com' }, signal: abort.signal },
    );
    abort.abort();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-expose-headers')).toContain('X-Vexil-Stream-Id');
  });

  it('sends no CORS headers from the management API', async () => {
    const response = await call(vexil, 'GET', '/api/v1/me', {
      token: org.token,
      headers: { origin: 'https://app.example.com' },
    });
    expect(response.status).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
  });
});
