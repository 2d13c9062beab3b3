import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyReply } from 'fastify';
import type { App } from '../http/app-instance.js';
import { authenticate } from '../auth/caller.js';
import type { SnapshotStore } from '../evaluation/snapshots.js';
import { managementErrorHandler } from '../http/envelope.js';
import type { ManagementRateLimiter } from '../http/rate-limit.js';
import type { Services } from '../services.js';
import { ManagementClient } from './management-client.js';
import { useArgumentMessages } from './argument-messages.js';
import { createMcpServer } from './server.js';
import { twinSchemas, type TwinSchema } from './twin-schemas.js';

/** A JSON-RPC error answered outside any MCP exchange. */
function jsonRpcError(message: string) {
  return { jsonrpc: '2.0', error: { code: -32000, message }, id: null };
}

/**
 * The AI-agent tool server (spec: Management API, last paragraph; design record 011): Model
 * Context Protocol over stateless Streamable HTTP, at the prefix this is registered under.
 * The bearer credential is checked before any MCP handling (401 in the management error
 * envelope); each tool then calls its management twin with that same credential.
 */
export function registerMcpApi(
  app: App,
  {
    services,
    snapshots,
    limiter,
  }: {
    services: Services;
    snapshots: SnapshotStore;
    /** The management limiter: failed credentials count per client IP, as in the management API. */
    limiter: ManagementRateLimiter;
  },
): void {
  app.setErrorHandler(managementErrorHandler(services.config.publicUrl));
  useArgumentMessages();
  // Built on first use: the OpenAPI document is complete only once every route is registered.
  let schemas: TwinSchema | undefined;

  // Before the body is read: an anonymous caller costs no parsing and never reaches MCP.
  app.addHook('onRequest', async (request, reply) => {
    const now = services.clock.now();
    try {
      await authenticate(services.db, request.headers.authorization, now);
    } catch (error) {
      void reply.header('www-authenticate', 'Bearer');
      await limiter.consume(`ip:${request.ip}`, reply, now.getTime());
      throw error;
    }
  });

  app.post('/', { schema: { hide: true } }, async (request, reply) => {
    schemas ??= twinSchemas(app);
    const { server, toolArguments } = createMcpServer({
      client: new ManagementClient(app, request.headers.authorization ?? ''),
      schemas,
      snapshots,
      publicUrl: services.config.publicUrl,
    });
    const invalid = toolArguments.refusal(request.body);
    if (invalid) return reply.type('application/json').send(invalid);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (error) {
      request.log.error({ err: error }, 'MCP request failed');
      if (!reply.raw.headersSent)
        reply.raw
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify(jsonRpcError('Internal error.')));
    }
  });

  // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
  const noSessions = async (_request: unknown, reply: FastifyReply) =>
    reply.status(405).header('allow', 'POST').send(jsonRpcError('Method not allowed.'));
  app.get('/', { schema: { hide: true } }, noSessions);
  app.delete('/', { schema: { hide: true } }, noSessions);
}
