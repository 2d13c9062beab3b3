import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ToolArguments } from './invalid-params.js';
import { registerChangeRequestTools } from './tools/change-request-tools.js';
import { registerCodeReferenceTools } from './tools/code-reference-tools.js';
import { registerCreateTools } from './tools/create-tools.js';
import { registerExperimentTools } from './tools/experiment-tools.js';
import { registerFlagTools } from './tools/flag-tools.js';
import { registerMemberTools } from './tools/member-tools.js';
import type { ToolContext } from './tools/tool-context.js';
import { registerWebhookTools } from './tools/webhook-tools.js';

/**
 * One MCP server for one HTTP request (stateless Streamable HTTP: no sessions to share, so a
 * server never mixes two callers' credentials; design record 011), with its tools' argument
 * schemas (invalid arguments are answered -32602 before the SDK sees them).
 */
export function createMcpServer(context: ToolContext): {
  server: McpServer;
  toolArguments: ToolArguments;
} {
  const server = new McpServer(
    // The API generation, as the OpenAPI document names it.
    { name: 'vexil', version: 'v1' },
    {
      instructions:
        'Vexil feature flags, change requests, code references, outbound webhooks and members. ' +
        'Every tool takes ' +
        '`org` (slug or id). Refusals come back as tool errors reading "code: message", as the ' +
        'management API answers them (forbidden, not_found, validation_failed, ...). In an ' +
        'environment that requires change requests, a direct change is refused with ' +
        'change_request_required and names the propose_change_request call to make instead: ' +
        'agents propose, people approve.',
    },
  );
  const toolArguments = new ToolArguments(server);
  registerWebhookTools(server, context);
  registerFlagTools(server, context);
  registerCreateTools(server, context);
  registerMemberTools(server, context);
  registerChangeRequestTools(server, context);
  registerCodeReferenceTools(server, context);
  registerExperimentTools(server, context);
  return { server, toolArguments };
}
