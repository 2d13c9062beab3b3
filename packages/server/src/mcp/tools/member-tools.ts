import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { asTool } from '../management-client.js';
import { OrgArgument, PageArguments, type ToolContext } from './tool-context.js';

/**
 * Who is in an organization (design record 022), read-only: an agent can find a flag owner or
 * a reviewer. Invitations stay out of MCP: their links are secrets meant for one person.
 */
export function registerMemberTools(server: McpServer, context: ToolContext): void {
  const { client, schemas } = context;
  server.registerTool(
    'list_members',
    {
      description:
        "Lists an organization's members (paged): e-mail, name, role, project allowlist.",
      inputSchema: { org: OrgArgument, ...PageArguments },
      outputSchema: schemas('GET', '/api/v1/orgs/{org}/members'),
      annotations: { readOnlyHint: true },
    },
    ({ org, ...query }) => asTool(() => client.send('GET', ['orgs', org, 'members'], { query })),
  );
}
