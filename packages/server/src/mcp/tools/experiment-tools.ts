import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { asTool } from '../management-client.js';
import { OrgArgument, PageArguments, type ToolContext } from './tool-context.js';

const PROJECT = '/api/v1/orgs/{org}/projects/{project}';
const EXPERIMENT = `${PROJECT}/flags/{flag}/environments/{env}/experiments/{experiment}`;

const ProjectArgument = z.string().min(1).describe('Project key or id.');

/** The experiment tools (contract `experiments.md`, section 2; design record 064). */
export function registerExperimentTools(server: McpServer, context: ToolContext): void {
  const { client, schemas } = context;

  server.registerTool(
    'list_experiments',
    {
      description:
        "The project's experiments, newest first: each flag and environment, variations and " +
        'weights, metrics, status (draft, running, stopped), decision, and the primary ' +
        "metric's verdict per variation at the last check. `get_experiment_results` reads one.",
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        status: z.enum(['draft', 'running', 'stopped']).optional().describe('Only these.'),
        ...PageArguments,
      },
      outputSchema: schemas('GET', `${PROJECT}/experiments`),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, ...query }) =>
      asTool(() =>
        client.send('GET', ['orgs', org, 'projects', project, 'experiments'], { query }),
      ),
  );

  server.registerTool(
    'get_experiment_results',
    {
      description:
        "An experiment's results now: exposed users per variation, the sample ratio check " +
        '(`srm.detected`: the results cannot be trusted), and per metric and variation the ' +
        'value, the difference against the control with an always-valid confidence interval ' +
        'of the relative difference, its p-value and the verdict (better, worse, inconclusive; ' +
        'none before every variation has `minimumUsers`). Safe to read as often as wanted.',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        flag: z.string().min(1).describe('Flag key or id.'),
        environment: z.string().min(1).describe('Environment key or id.'),
        experiment: z.string().min(1).describe('Experiment key or id.'),
      },
      outputSchema: schemas('GET', `${EXPERIMENT}/results`),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, flag, environment, experiment }) =>
      asTool(() =>
        client.send('GET', [
          'orgs',
          org,
          'projects',
          project,
          'flags',
          flag,
          'environments',
          environment,
          'experiments',
          experiment,
          'results',
        ]),
      ),
  );
}
