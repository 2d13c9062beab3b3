import type { FastifyRequest } from 'fastify';

/**
 * The header the MCP server sets on the management calls it makes in-process for an agent
 * (`mcp/management-client.ts`), so that the management API knows a call came through `/mcp`.
 * A caller sending it from outside only restricts itself (it may then not review).
 */
export const MCP_CALL_HEADER = 'x-vexil-mcp-call';

/** Whether the management request came through `/mcp` (an agent's tool call). */
export function isMcpCall(request: FastifyRequest): boolean {
  return request.headers[MCP_CALL_HEADER] !== undefined;
}
