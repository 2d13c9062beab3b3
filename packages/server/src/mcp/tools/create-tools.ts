import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { asTool } from '../management-client.js';
import { OrgArgument, type ToolContext } from './tool-context.js';

const FLAGS = '/api/v1/orgs/{org}/projects/{project}/flags';
const SEGMENTS = '/api/v1/orgs/{org}/projects/{project}/segments';

// The twins' enums, repeated rather than imported: MCP reaches management through HTTP only
// (design record 011). A value the twin stops accepting is still refused by it.
const FLAG_TYPES = ['Boolean', 'String', 'Number', 'Json'] as const;
const LOGICAL_OPERATORS = ['And', 'Or'] as const;

const ProjectArgument = z.string().min(1).describe('Project key or id.');

/** A new resource's key, as `KeySchema` of the management API checks it (api/fields.ts). */
const KeyArgument = z
  .string()
  .min(1)
  .max(100)
  .regex(
    /^(?![0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)[A-Za-z0-9][A-Za-z0-9._-]*$/,
    "must start with a letter or digit, contain only letters, digits, '.', '_' and '-', and not be a UUID",
  );
const NameArgument = z.string().min(1).max(200).optional().describe('Display name.');
const DescriptionArgument = z.string().max(2000).optional();

/**
 * Tools that create a flag or a segment (issue 43: agents could only toggle), Member or above.
 * Each sends its HTTP twin's request (`POST …/flags`, `POST …/segments`), so the twin's
 * validation, role check, `mutateAs` transaction, audit entry and webhook event are the ones that
 * run; arguments of the wrong shape are refused -32602 before (mcp/invalid-params.ts), and the
 * twin's own checks (a duplicate key, a value that does not fit the type) come back as
 * `validation_failed` or `conflict` tool errors with their fields.
 */
export function registerCreateTools(server: McpServer, context: ToolContext): void {
  const { client, schemas } = context;

  server.registerTool(
    'create_flag',
    {
      description:
        'Creates a flag in a project (off in every environment; emits flag.created), as ' +
        'POST /flags does. Without `variations` a Boolean flag gets `true` and `false`; other ' +
        'types need them. Member or above.',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        key: KeyArgument.describe('The flag key SDKs evaluate.'),
        name: NameArgument,
        description: DescriptionArgument,
        type: z.enum(FLAG_TYPES).optional().describe('Default Boolean.'),
        variations: z
          .array(
            z.object({
              key: KeyArgument,
              name: z.string().max(200).optional(),
              value: z.string().max(65536).describe('The value, as text ("true", "42", "{}").'),
              description: DescriptionArgument,
            }),
          )
          .min(1)
          .max(100)
          .optional(),
        offVariationKey: z
          .string()
          .min(1)
          .optional()
          .describe('The variation served while off. Default: `false`, or the first variation.'),
        tags: z.array(z.string().min(1).max(64)).max(50).optional(),
        clientSideVisible: z
          .boolean()
          .optional()
          .describe('Whether client-side SDK keys see the flag. Default false.'),
      },
      outputSchema: schemas('POST', FLAGS, 201),
    },
    ({ org, project, ...body }) =>
      asTool(() => client.send('POST', ['orgs', org, 'projects', project, 'flags'], { body })),
  );

  server.registerTool(
    'create_segment',
    {
      description:
        'Creates a user segment in a project (emits segment.created), as POST /segments does: ' +
        'conditions over context attributes, all (`And`, default) or any (`Or`) must hold. ' +
        'Member or above.',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        key: KeyArgument.describe('The segment key rules refer to.'),
        name: NameArgument,
        description: DescriptionArgument,
        conditions: z
          .array(
            z.object({
              attribute: z.string().min(1).max(256).describe('Context attribute, e.g. `country`.'),
              operator: z
                .string()
                .min(1)
                .max(64)
                .describe('e.g. `In`, `EndsWith`, `SemVerGreaterThan`.'),
              values: z.array(z.string().max(1024)).max(1000),
            }),
          )
          .max(100)
          .optional(),
        conditionLogic: z.enum(LOGICAL_OPERATORS).optional(),
      },
      outputSchema: schemas('POST', SEGMENTS, 201),
    },
    ({ org, project, ...body }) =>
      asTool(() => client.send('POST', ['orgs', org, 'projects', project, 'segments'], { body })),
  );
}
