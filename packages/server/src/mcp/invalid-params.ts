import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** A JSON-RPC error answer (JSON-RPC 2.0, section 5.1). */
export interface JsonRpcErrorAnswer {
  jsonrpc: '2.0';
  id: string | number | null;
  error: { code: number; message: string };
}

/**
 * The argument schemas of an MCP server's tools, recorded as they are registered, so that a
 * `tools/call` with invalid arguments is answered as JSON-RPC says: error -32602 "Invalid params"
 * (issue 43). The MCP SDK would wrap its own -32602 into a tool result, and an agent could not
 * tell a malformed call from a refusal of a well-formed one.
 */
export class ToolArguments {
  private readonly schemas = new Map<string, z.ZodType>();

  /** Records the argument schema of every tool `server` registers from now on. */
  constructor(server: McpServer) {
    const register = server.registerTool.bind(server);
    server.registerTool = ((
      name: string,
      config: { inputSchema?: z.ZodRawShape | z.ZodType },
      ...rest: unknown[]
    ) => {
      const input = config.inputSchema;
      // A tool's arguments are a shape of arguments, or a whole schema (with refinements).
      if (input) this.schemas.set(name, input instanceof z.ZodType ? input : z.object(input));
      return (register as (...args: unknown[]) => unknown)(name, config, ...rest);
    }) as typeof server.registerTool;
  }

  /**
   * The -32602 answer to `message` when it is one `tools/call` of a recorded tool whose arguments
   * do not fit its schema ("must be a string at project; is required at flag"), else undefined
   * (the SDK answers everything else, unknown tools included).
   */
  refusal(message: unknown): JsonRpcErrorAnswer | undefined {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) return;
    const { method, params, id } = message as { method?: unknown; params?: unknown; id?: unknown };
    if (method !== 'tools/call' || typeof params !== 'object' || params === null) return;
    const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
    const schema = typeof name === 'string' ? this.schemas.get(name) : undefined;
    if (!schema) return;
    const parsed = schema.safeParse(args ?? {});
    if (parsed.success) return;
    const problems = parsed.error.issues.map((issue) =>
      issue.path.length > 0 ? `${issue.message} at ${issue.path.join('.')}` : issue.message,
    );
    return {
      jsonrpc: '2.0',
      id: typeof id === 'string' || typeof id === 'number' ? id : null,
      error: {
        code: ErrorCode.InvalidParams,
        message: `Invalid arguments for tool ${name as string}: ${problems.join('; ')}`,
      },
    };
  }
}
