import { evaluateFlag } from '@vexil/engine';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { docsUrl } from '../../http/envelope.js';
import type { ProposalArguments } from '../change-request-refusal.js';
import { asTool, type ManagementClient, ToolRefusal } from '../management-client.js';
import { OrgArgument, PageArguments, type ToolContext } from './tool-context.js';

const FLAGS = '/api/v1/orgs/{org}/projects/{project}/flags';

const ProjectArgument = z.string().min(1).describe('Project key or id.');
const FlagArgument = z.string().min(1).describe('Flag key or id.');
const EnvironmentArgument = z.string().min(1).describe('Environment key or id.');

/**
 * The answer of `POST /v1/sdk/evaluate`, written out here: a management-only node does not
 * serve the evaluation API, so its OpenAPI document lacks that route.
 */
const EvaluationOutput = z.object({
  key: z.string(),
  variation: z.string().nullable(),
  value: z.unknown(),
  reason: z.string(),
  prerequisiteKey: z.string().optional(),
});

/**
 * Flag tools beyond the spec (design record 011): reads for Viewers and up, `toggle_flag` for
 * Members and up, each with the authorization of its HTTP twin in management/flags/.
 */
export function registerFlagTools(server: McpServer, context: ToolContext): void {
  const { client, schemas, snapshots, publicUrl } = context;

  server.registerTool(
    'list_flags',
    {
      description: "Lists a project's flags (paged), optionally by tag, search text or archived.",
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        tag: z.string().max(64).optional().describe('Only flags with this tag.'),
        q: z.string().max(200).optional().describe('Search in keys and names.'),
        archived: z.boolean().optional().describe('List archived flags instead of active ones.'),
        ...PageArguments,
      },
      outputSchema: schemas('GET', FLAGS),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, ...query }) =>
      asTool(() => client.send('GET', ['orgs', org, 'projects', project, 'flags'], { query })),
  );

  server.registerTool(
    'get_flag',
    {
      description: 'Reads one flag: type, variations, tags, owner, lifecycle fields.',
      inputSchema: { org: OrgArgument, project: ProjectArgument, flag: FlagArgument },
      outputSchema: schemas('GET', `${FLAGS}/{flag}`),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, flag }) =>
      asTool(() => client.send('GET', ['orgs', org, 'projects', project, 'flags', flag])),
  );

  server.registerTool(
    'evaluate_flag',
    {
      description:
        'Evaluates a flag for a context in one environment, exactly as a server SDK would ' +
        '(same engine, same configuration snapshot). Does not count as flag usage.',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        environment: EnvironmentArgument,
        flag: FlagArgument,
        context: z
          .object({
            userId: z.string().optional(),
            attributes: z.record(z.string(), z.unknown()).optional(),
          })
          .default({})
          .describe('The evaluation context, as POST /v1/sdk/evaluate takes it.'),
      },
      outputSchema: EvaluationOutput,
      annotations: { readOnlyHint: true },
    },
    ({ org, project, environment, flag, context: evaluationContext }) =>
      asTool(async () => {
        const projectPath = ['orgs', org, 'projects', project];
        // The twins check the caller's access and resolve keys to ids (with near-match hints).
        const [found, env] = await Promise.all([
          client.send<{ key: string }>('GET', [...projectPath, 'flags', flag]),
          client.send<{ id: string; key: string }>('GET', [
            ...projectPath,
            'environments',
            environment,
          ]),
        ]);
        const snapshot = await snapshots.get(env.id);
        const result = snapshot && evaluateFlag(snapshot.compiled, found.key, evaluationContext);
        if (!result || result.errorCode === 'FLAG_NOT_FOUND')
          throw new ToolRefusal({
            error: 'bad_request',
            message: `Flag "${found.key}" is not served in "${env.key}" (archived flags are not); SDKs get FLAG_NOT_FOUND.`,
            docs_url: docsUrl(publicUrl, 'bad_request'),
            fields: {},
          });
        return {
          key: result.key,
          variation: result.variation,
          value: result.value,
          reason: result.reason,
          ...(result.prerequisiteKey ? { prerequisiteKey: result.prerequisiteKey } : {}),
        };
      }),
  );

  server.registerTool(
    'list_removal_candidates',
    {
      description:
        'Lists flags that look safe to remove from code (paged): `dead` (default) or `stale`, ' +
        'each with `codeReferences` (references on default branches, null before any scan).',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        staleness: z.enum(['dead', 'stale']).optional(),
        references: z
          .enum(['none', 'some'])
          .optional()
          .describe(
            '`none`: only those no default branch reads (safe to archive); `some`: still read.',
          ),
        ...PageArguments,
      },
      outputSchema: schemas('GET', `${FLAGS}/removal-candidates`),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, ...query }) =>
      asTool(() =>
        client.send('GET', ['orgs', org, 'projects', project, 'flags', 'removal-candidates'], {
          query,
        }),
      ),
  );

  server.registerTool(
    'toggle_flag',
    {
      description:
        'Turns a flag on or off in one environment (emits flag.toggled). Returns the flag’s ' +
        'configuration in that environment. Member or above.',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        flag: FlagArgument,
        environment: EnvironmentArgument,
        enabled: z.boolean(),
      },
      outputSchema: schemas('GET', `${FLAGS}/{flag}/environments/{env}`),
      annotations: { idempotentHint: true },
    },
    (toggle) =>
      asTool(
        async () => {
          const { org, project, flag, environment, enabled } = toggle;
          const path = [
            'orgs',
            org,
            'projects',
            project,
            'flags',
            flag,
            'environments',
            environment,
          ];
          await client.send('POST', [...path, 'toggle'], { body: { enabled } });
          return client.send('GET', path);
        },
        { proposal: () => toggleProposal(client, toggle) },
      ),
  );
}

/** A flag's configuration in one environment as flags-as-code documents (and changes) hold it. */
type DocumentConfiguration = Record<string, unknown> & { enabled: boolean };

/**
 * The change request that proposes a toggle refused in a protected environment: the flag's whole
 * configuration there, as the project's export writes it, with `enabled` changed, against the
 * configuration's current revision.
 * @returns undefined when the export holds no such configuration
 * @throws ToolRefusal when a read is refused (the refusal then names the tool without arguments)
 */
async function toggleProposal(
  client: ManagementClient,
  toggle: { org: string; project: string; flag: string; environment: string; enabled: boolean },
): Promise<ProposalArguments | undefined> {
  const { org, project, flag, environment, enabled } = toggle;
  const projectPath = ['orgs', org, 'projects', project];
  const [found, configuration] = await Promise.all([
    client.send<{ key: string }>('GET', [...projectPath, 'flags', flag]),
    client.send<{ environmentKey: string; revision: number }>('GET', [
      ...projectPath,
      'flags',
      flag,
      'environments',
      environment,
    ]),
  ]);
  const environmentKey = configuration.environmentKey;
  const exported = await client.send<{
    flags?: { key: string; environments?: Record<string, DocumentConfiguration> }[];
  }>('GET', [...projectPath, 'export'], { query: { environment: environmentKey, format: 'json' } });
  const current = exported.flags?.find((f) => f.key === found.key)?.environments?.[environmentKey];
  if (!current) return undefined;
  return {
    org,
    project,
    environment: environmentKey,
    title: `Turn "${found.key}" ${enabled ? 'on' : 'off'} in "${environmentKey}"`,
    changes: [
      {
        kind: 'flag',
        flagKey: found.key,
        baseRevision: configuration.revision,
        configuration: { ...current, enabled },
      },
    ],
    submit: true,
  };
}
