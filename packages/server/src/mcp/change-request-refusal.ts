import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ErrorEnvelope } from '../http/envelope.js';

/** The tool an agent calls instead of a direct write refused in a protected environment. */
export const PROPOSAL_TOOL = 'propose_change_request';

/** The arguments of {@link PROPOSAL_TOOL} that would propose what a refused tool call asked. */
export interface ProposalArguments {
  org: string;
  project: string;
  environment: string;
  title: string;
  changes: Record<string, unknown>[];
  submit: boolean;
}

/**
 * How a 409 `change_request_required` reads to an agent (contract, section 1: the refusal names
 * the change-request call that proposes the same change): the first text says which tool to call
 * instead, the second is the envelope as the API answered it, and the third, when the refused
 * tool could work it out, is that call ready to make: `{ tool, arguments }`.
 */
export function changeRequestRequired(
  envelope: ErrorEnvelope,
  proposal: ProposalArguments | undefined,
): CallToolResult {
  const instead = proposal
    ? `Call ${PROPOSAL_TOOL} with the arguments in the last text instead (the same change, against the current revision).`
    : `Call ${PROPOSAL_TOOL} instead, with org, project, environment, a title and the changes (read the current state and its revision first).`;
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `${envelope.error}: ${envelope.message} ${instead} A person reviews it; once approved, apply_change_request applies it.`,
      },
      { type: 'text', text: JSON.stringify(envelope) },
      ...(proposal
        ? [
            {
              type: 'text' as const,
              text: JSON.stringify({ tool: PROPOSAL_TOOL, arguments: proposal }),
            },
          ]
        : []),
    ],
  };
}
