import type { Dialect } from '../db/dialect.js';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from './harness.js';
import { SseReader } from './sse-reader.js';

const PROJECT = '/api/v1/orgs/acme/projects/web';

/**
 * A node listening on loopback for stream tests: the `web` project with a server SDK key and a
 * client SDK key for production, heartbeats every 50 ms, and readers of its streams over real
 * sockets (closed with the node).
 */
export async function startStreamingNode(dialect: Dialect) {
  const vexil: TestVexil = await createTestVexil(dialect, { config: { streamHeartbeatMs: 50 } });
  const org = await createOrg(vexil);
  const serverKey = (await createProjectWithFlag(vexil, org)).sdkKey;
  const manage = (method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) =>
    callOk(vexil, method, `${PROJECT}${path}`, org.token, body);
  const clientKey = (
    await manage('POST', '/environments/production/sdk-keys', { name: 'web', type: 'ClientSide' })
  ).key as string;
  const origin = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
  const open: SseReader[] = [];
  return {
    vexil,
    origin,
    token: org.token,
    serverKey,
    clientKey,
    /** A management call under the project, expected to succeed. */
    manage,
    /** Turns `flag` on or off in production. */
    toggle: (flag: string, enabled: boolean) =>
      manage('POST', `/flags/${flag}/environments/production/toggle`, { enabled }),
    /** Opens the stream at `path`: a GET, or a POST of `body`. */
    async stream(
      path: string,
      options: {
        key?: string;
        headers?: Record<string, string>;
        body?: unknown;
        lastEventId?: number;
      } = {},
    ): Promise<SseReader> {
      const abort = new AbortController();
      const response = await fetch(`${origin}${path}`, {
        method: options.body === undefined ? 'GET' : 'POST',
        headers: {
          ...(options.key ? { authorization: options.key } : {}),
          ...(options.lastEventId === undefined
            ? {}
            : { 'last-event-id': String(options.lastEventId) }),
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        signal: abort.signal,
      });
      const reader = new SseReader(response, abort);
      open.push(reader);
      return reader;
    },
    async close() {
      for (const reader of open) reader.close();
      await vexil.close();
    },
  };
}

export type StreamingNode = Awaited<ReturnType<typeof startStreamingNode>>;
