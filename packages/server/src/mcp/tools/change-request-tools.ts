import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { CHANGE_REQUEST_STATES } from '../../db/schema.js';
import { PROPOSAL_TOOL } from '../change-request-refusal.js';
import { asTool } from '../management-client.js';
import { OrgArgument, PageArguments, type ToolContext } from './tool-context.js';

const CHANGE_REQUESTS = '/api/v1/orgs/{org}/projects/{project}/change-requests';
const CHANGE_REQUEST = `${CHANGE_REQUESTS}/{number}`;

/** Why there is no review tool, said where agents read it (contract, section 2). */
const PEOPLE_APPROVE =
  'Agents propose, people approve: there is no review tool, and reviews are refused through ' +
  'MCP and from service tokens, so a change to a protected environment always has a person’s ' +
  'approval behind it.';

const ProjectArgument = z.string().min(1).describe('Project key or id.');
const NumberArgument = z
  .number()
  .int()
  .min(1)
  .describe('The change request’s number in its project ("CR 12" is 12).');
const ApplyAtArgument = z
  .string()
  .max(64)
  .describe('RFC 3339 date-time with offset, in the future, e.g. 2026-12-01T09:00:00+01:00.');

/**
 * One change of a change request, as `POST …/change-requests` takes it (contract, section 2).
 * Only the kind and its target are spelled out here: the twin checks the rest and answers 400
 * naming the path of any problem.
 */
const ChangeArgument = z
  .discriminatedUnion('kind', [
    z.looseObject({
      kind: z.literal('flag'),
      flagKey: z.string().min(1),
      baseRevision: z.number().int().min(0).describe('The configuration’s `revision` now.'),
      configuration: z
        .record(z.string(), z.unknown())
        .describe(
          'The whole desired configuration of the flag in the request’s environment, in the ' +
            'flags-as-code shape: enabled, defaultVariation, offVariation, strategy, rollout, ' +
            'prerequisites, rules (variations and segments by key).',
        ),
    }),
    z.looseObject({
      kind: z.literal('segment'),
      segmentKey: z.string().min(1),
      baseRevision: z.number().int().min(0).describe('The segment’s `revision` now.'),
      definition: z
        .record(z.string(), z.unknown())
        .describe('The segment’s desired conditions (project-wide once applied).'),
    }),
    z.looseObject({
      kind: z.literal('variations'),
      flagKey: z.string().min(1),
      baseRevision: z.number().int().min(0).describe('The variation set’s `revision` now.'),
      variations: z
        .array(z.record(z.string(), z.unknown()))
        .min(1)
        .describe('The flag’s whole desired variation set: key, name, value, description.'),
    }),
  ])
  .describe('What to change, its desired state and the revision it was written against.');

/**
 * Change-request tools (contract, section 2; design record 042): list, read, propose and apply,
 * each a call to its HTTP twin in change-requests/. No review tool, on purpose.
 */
export function registerChangeRequestTools(server: McpServer, context: ToolContext): void {
  const { client, schemas } = context;
  const path = (org: string, project: string, ...rest: string[]) => [
    'orgs',
    org,
    'projects',
    project,
    'change-requests',
    ...rest,
  ];

  server.registerTool(
    'list_change_requests',
    {
      description:
        "Lists a project's change requests (paged), optionally by state, environment or your " +
        'own (`author: "me"`). Viewer or above.',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        state: z.enum(CHANGE_REQUEST_STATES).optional(),
        environment: z.string().min(1).optional().describe('Environment key or id.'),
        author: z.literal('me').optional().describe('Only requests you opened.'),
        ...PageArguments,
      },
      outputSchema: schemas('GET', CHANGE_REQUESTS),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, ...query }) => asTool(() => client.send('GET', path(org, project), { query })),
  );

  server.registerTool(
    'get_change_request',
    {
      description:
        'Reads one change request with its reviews and `diff`: for each change the current ' +
        'state (`before`), the desired one (`after`) and `conflict` (the target changed since ' +
        'the request was written, or is gone). Viewer or above.',
      inputSchema: { org: OrgArgument, project: ProjectArgument, number: NumberArgument },
      outputSchema: schemas('GET', CHANGE_REQUEST),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, number }) =>
      asTool(() => client.send('GET', path(org, project, String(number)))),
  );

  server.registerTool(
    PROPOSAL_TOOL,
    {
      description:
        'Proposes changes to one environment as a change request: what a flag tool refused ' +
        'with change_request_required, or any flag configuration, segment or variation change. ' +
        'With `submit: true` it is opened for review at once (otherwise a draft). ' +
        `${PEOPLE_APPROVE} Returns the request with its diff. Member or above.`,
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        environment: z.string().min(1).describe('Environment key or id the changes are for.'),
        title: z.string().min(1).max(200),
        description: z.string().max(10000).optional().describe('Markdown: why, and how to verify.'),
        changes: z.array(ChangeArgument).min(1).max(100),
        applyAt: ApplyAtArgument.optional().describe(
          'Apply at this time once approved (RFC 3339 with offset, in the future).',
        ),
        submit: z.boolean().optional().describe('Open for review now rather than as a draft.'),
        idempotencyKey: z
          .string()
          .min(1)
          .max(255)
          .optional()
          .describe('Sent as Idempotency-Key: a retried call with the same key opens one request.'),
      },
      outputSchema: schemas('POST', CHANGE_REQUESTS, 201),
    },
    ({ org, project, idempotencyKey, ...body }) =>
      asTool(() =>
        client.send('POST', path(org, project), {
          body,
          ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
        }),
      ),
  );

  server.registerTool(
    'apply_change_request',
    {
      description:
        'Applies an approved change request now, all changes in one transaction, or schedules ' +
        'it with `applyAt`. Refused with change_request_conflict when a target changed since ' +
        `(propose again against the new revisions). ${PEOPLE_APPROVE} Its author or an Admin.`,
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        number: NumberArgument,
        applyAt: ApplyAtArgument.optional().describe(
          'Schedule instead of applying now (RFC 3339 with offset, in the future).',
        ),
      },
      outputSchema: schemas('POST', `${CHANGE_REQUEST}/apply`),
    },
    ({ org, project, number, applyAt }) =>
      asTool(() =>
        client.send('POST', path(org, project, String(number), 'apply'), {
          body: applyAt ? { applyAt } : {},
        }),
      ),
  );
}
