import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { App } from '../http/app-instance.js';
import type { ErrorEnvelope } from '../http/envelope.js';
import { MCP_CALL_HEADER } from '../http/mcp-call.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A management API refusal, carried back to the agent as an MCP tool error. */
export class ToolRefusal extends Error {
  constructor(readonly envelope: ErrorEnvelope) {
    super(`${envelope.error}: ${envelope.message}`);
  }
}

/**
 * The management API called in-process as the MCP caller: every tool goes through its HTTP twin,
 * so validation, authorization, rate limits, events and transactions happen one way only
 * (design record 011).
 */
export class ManagementClient {
  constructor(
    private readonly app: App,
    private readonly authorization: string,
  ) {}

  /**
   * Sends one request to `/api/v1` + the path built from `segments` (each percent-encoded).
   * @returns the parsed JSON body, or undefined for an empty (204) answer
   * @throws ToolRefusal carrying the management error envelope for any 4xx/5xx answer
   */
  async send<T>(
    method: Method,
    segments: readonly string[],
    options: { query?: Record<string, string | number | boolean | undefined>; body?: object } = {},
  ): Promise<T> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) query.set(name, String(value));
    const search = query.size > 0 ? `?${query.toString()}` : '';
    const response = await this.app.inject({
      method,
      url: `/api/v1/${segments.map(encodeURIComponent).join('/')}${search}`,
      headers: {
        authorization: this.authorization,
        // Only people review change requests: the API refuses reviews that come this way.
        [MCP_CALL_HEADER]: '1',
        ...(options.body ? { 'content-type': 'application/json' } : {}),
      },
      ...(options.body ? { payload: JSON.stringify(options.body) } : {}),
    });
    const body: unknown = response.body ? JSON.parse(response.body) : undefined;
    if (response.statusCode >= 400) throw new ToolRefusal(body as ErrorEnvelope);
    return body as T;
  }
}

/** A successful tool answer: the structured output, and the same as JSON text for older clients. */
export function toolOutput(structured: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(structured) }],
    structuredContent: structured,
  };
}

/**
 * Runs a tool body and turns a management refusal into an MCP tool error (`isError: true`): the
 * first text reads `code: message`, the second is the full error envelope (fields, near matches,
 * next actions). No structured content: clients check it against the success schema.
 */
export async function asTool(
  work: () => Promise<Record<string, unknown>>,
): Promise<CallToolResult> {
  try {
    return toolOutput(await work());
  } catch (error) {
    if (!(error instanceof ToolRefusal)) throw error;
    return {
      isError: true,
      content: [
        { type: 'text', text: error.message },
        { type: 'text', text: JSON.stringify(error.envelope) },
      ],
    };
  }
}
