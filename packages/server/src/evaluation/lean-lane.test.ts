import { createServer, request as httpRequest, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InjectOptions } from 'light-my-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from '../test-support/harness.js';
import { leanLane, type LeanRoute } from './lean-lane.js';

/** Headers that differ between two answers for reasons of time, not of content. */
const TIMING_HEADERS = ['date'];

const answerOf = (response: {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}) => ({
  status: response.statusCode,
  headers: Object.fromEntries(
    Object.entries(response.headers).filter(([name]) => !TIMING_HEADERS.includes(name)),
  ),
  body: response.body,
});

describe('the lean lane answers exactly as the Fastify routes do (design record 030)', () => {
  let vexil: TestVexil;
  let serverKey: string;
  let clientKey: string;

  beforeAll(async () => {
    vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    ({ sdkKey: serverKey } = await createProjectWithFlag(vexil, org, {
      flag: { clientSideVisible: true },
    }));
    const created = await callOk(
      vexil,
      'POST',
      `/api/v1/orgs/${org.slug}/projects/web/environments/production/sdk-keys`,
      org.token,
      { name: 'browser', type: 'ClientSide' },
    );
    clientKey = created.key as string;
  });
  afterAll(() => vexil.close());

  const json = { 'content-type': 'application/json' };
  const cases = (): [string, InjectOptions][] => {
    const server = (headers: Record<string, string>, payload: string, url = '/v1/sdk/evaluate') =>
      ({ method: 'POST', url, headers, payload }) as InjectOptions;
    const client = (headers: Record<string, string>, payload: string) =>
      server(headers, payload, '/v1/client/evaluate');
    const ofrep = (headers: Record<string, string>, payload: string) =>
      server(headers, payload, '/ofrep/v1/evaluate/flags');
    const flag = JSON.stringify({ flagKey: 'new-checkout', context: { userId: 'u1' } });
    const context = JSON.stringify({ context: { userId: 'u1', plan: 'pro' } });
    const withKey = { ...json, authorization: serverKey };
    return [
      ['server evaluate', server(withKey, flag)],
      [
        'with Bearer and a charset',
        server(
          {
            ...withKey,
            authorization: `Bearer ${serverKey}`,
            'content-type': 'application/json; charset=utf-8',
          },
          flag,
        ),
      ],
      [
        'from a browser (CORS headers)',
        server({ ...withKey, origin: 'https://app.example.com' }, flag),
      ],
      ['with a query string', server(withKey, flag, '/v1/sdk/evaluate?debug=1')],
      [
        'reporting its own evaluations',
        server({ ...withKey, 'x-service-reports-evaluations': '1' }, flag),
      ],
      ['an unknown flag', server(withKey, JSON.stringify({ flagKey: 'nope', context: {} }))],
      ['malformed JSON', server(withKey, '{"flagKey": ')],
      ['a poisoned prototype', server(withKey, '{"flagKey":"a","context":{},"__proto__":{"x":1}}')],
      [
        'a body that fails the schema',
        server(withKey, JSON.stringify({ flagKey: '', context: 3 })),
      ],
      ['a body that is not an object', server(withKey, '[]')],
      ['no SDK key', server(json, flag)],
      ['an invalid SDK key', server({ ...json, authorization: 'vxl_srv_nope' }, flag)],
      ['a client key on the server route', server({ ...json, authorization: clientKey }, flag)],
      ['a refused key from a browser', server({ ...json, origin: 'https://a.example' }, flag)],
      ['client evaluate', client({ ...json, authorization: clientKey }, context)],
      [
        'client evaluate from a browser',
        client({ ...json, authorization: clientKey, origin: 'https://a.example' }, context),
      ],
      ['a server key on the client route', client({ ...json, authorization: serverKey }, context)],
      ['client evaluate without a context', client({ ...json, authorization: clientKey }, '{}')],
      ['OFREP bulk, client key', ofrep({ ...json, authorization: `Bearer ${clientKey}` }, context)],
      ['OFREP bulk, server key in X-API-Key', ofrep({ ...json, 'x-api-key': serverKey }, context)],
      [
        'OFREP bulk from a browser',
        ofrep({ ...json, authorization: clientKey, origin: 'https://a.example' }, context),
      ],
      [
        'OFREP bulk, naming a stale ETag',
        ofrep({ ...json, authorization: clientKey, 'if-none-match': '"stale"' }, context),
      ],
      [
        'OFREP bulk, reporting its own evaluations',
        ofrep({ ...json, authorization: clientKey, 'x-service-reports-evaluations': '1' }, context),
      ],
      ['OFREP bulk, malformed JSON', ofrep({ ...json, authorization: clientKey }, '{"context": ')],
      [
        'OFREP bulk, a context that is not an object',
        ofrep({ ...json, authorization: clientKey }, JSON.stringify({ context: 3 })),
      ],
      ['OFREP bulk without a key', ofrep(json, context)],
      ['OFREP bulk, an invalid key', ofrep({ ...json, authorization: 'vxl_cli_nope' }, context)],
      // Not the lane's: these reach Fastify's route from the lane.
      ['text/plain', server({ ...withKey, 'content-type': 'text/plain' }, flag)],
      [
        'a +json media type',
        server({ ...withKey, 'content-type': 'application/merge-patch+json' }, flag),
      ],
      ['an empty body', server(withKey, '')],
    ];
  };

  it('for every kind of request, valid or not', async () => {
    for (const [name, options] of cases()) {
      const throughLane = answerOf(await vexil.inject(options));
      const throughFastify = answerOf(await vexil.app.inject(options));
      expect(throughLane, name).toEqual(throughFastify);
    }
  });

  it('for an OFREP bulk request naming the answer’s ETag: 304 alike', async () => {
    const bulk = (headers: Record<string, string>): InjectOptions => ({
      method: 'POST',
      url: '/ofrep/v1/evaluate/flags',
      headers: { ...json, authorization: clientKey, ...headers },
      payload: JSON.stringify({ context: { targetingKey: 'u1' } }),
    });
    const etag = (await vexil.inject(bulk({}))).headers.etag as string;
    const throughLane = answerOf(await vexil.inject(bulk({ 'if-none-match': etag })));
    expect(throughLane.status).toBe(304);
    expect(throughLane).toEqual(answerOf(await vexil.app.inject(bulk({ 'if-none-match': etag }))));
  });

  it("over a real socket, where the lane is the server's request listener", async () => {
    await vexil.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = vexil.app.server.address() as AddressInfo;
    const [name, options] = cases()[0] ?? [];
    const headers = options?.headers as Record<string, string>;
    const body = options?.payload as string;
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const outgoing = httpRequest(
        { host: '127.0.0.1', port, method: 'POST', path: '/v1/sdk/evaluate', headers },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
    const expected = await vexil.app.inject(options ?? {});
    expect(answer, name).toEqual({ status: expected.statusCode, body: expected.body });
  });
});

describe('the lean lane takes only the common case, and hands the rest to Fastify untouched', () => {
  const served: string[] = [];
  const route: LeanRoute = {
    path: '/v1/sdk/evaluate',
    validate: Object.assign((body: unknown) => typeof body === 'object', { errors: null }),
    answer: () => '{"served":"lane"}',
    observe: (status: number) => served.push(`observed ${status}`),
  } as unknown as LeanRoute;
  let accepting = true;
  const fallback: RequestListener = (request, response) => {
    request.resume();
    request.on('end', () => response.end('fallback'));
  };
  const listener = leanLane(
    [route],
    { bodyLimit: 100, accepting: () => accepting, log: { error() {}, warn() {} } as never },
    fallback,
  );
  let baseUrl = '';
  const node = createServer(listener);

  beforeAll(async () => {
    await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(node.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => node.close(() => resolve())));

  const post = async (init: { path?: string; headers?: Record<string, string>; body?: string }) => {
    const response = await fetch(baseUrl + (init.path ?? '/v1/sdk/evaluate'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...init.headers },
      body: init.body ?? '{}',
    });
    return response.text();
  };

  it('serves a JSON POST to its route, and records its duration', async () => {
    served.length = 0;
    expect(await post({})).toBe('{"served":"lane"}');
    expect(served).toEqual(['observed 200']);
  });

  it('hands other routes, media types, encodings, large bodies and shutdown to Fastify', async () => {
    expect(await post({ path: '/v1/other' })).toBe('fallback');
    expect(await post({ headers: { 'content-type': 'text/plain' } })).toBe('fallback');
    expect(await post({ headers: { 'content-encoding': 'gzip' } })).toBe('fallback');
    expect(await post({ body: JSON.stringify({ padding: 'x'.repeat(200) }) })).toBe('fallback');
    expect(await post({ body: '' })).toBe('fallback');
    accepting = false;
    expect(await post({})).toBe('fallback');
    accepting = true;
    expect(await (await fetch(`${baseUrl}/v1/sdk/evaluate`)).text()).toBe('fallback');
  });
});
