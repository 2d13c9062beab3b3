import { extname } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { JAVASCRIPT_EXTENSIONS } from '../../code-refs/javascript-references.js';
import {
  keptValue,
  type EnvironmentServing,
  type FlagDescription,
} from '../../code-refs/kept-value.js';
import { asTool, type ManagementClient } from '../management-client.js';
import { OrgArgument, type ToolContext } from './tool-context.js';

const FLAGS = '/api/v1/orgs/{org}/projects/{project}/flags';
/** Removal candidates read per page while looking for one flag among them. */
const CANDIDATE_PAGE = 200;

const ProjectArgument = z.string().min(1).describe('Project key or id.');
const FlagArgument = z.string().min(1).describe('Flag key or id.');

interface Candidate {
  key: string;
  status: 'Stale' | 'Dead';
  reason: string;
  treatment: boolean;
  codeReferences: number | null;
}

interface FlagReferences {
  flagKey: string;
  repositories: {
    name: string;
    defaultBranch: string | null;
    branches: {
      name: string;
      commit: string | null;
      scannedAt: string;
      references: {
        path: string;
        line: number;
        column: number;
        kind: string;
        url: string | null;
      }[];
    }[];
  }[];
}

const Place = z.object({
  repository: z.string(),
  branch: z.string(),
  commit: z.string().nullable(),
  path: z.string(),
  line: z.number().int(),
  column: z.number().int(),
  kind: z.string(),
  url: z.string().nullable(),
  handledBy: z
    .enum(['vexil cleanup', 'a person'])
    .describe(
      'JavaScript and TypeScript reads are rewritten by `vexil cleanup` (which may still leave ' +
        'some for a person); other languages are changed by a person.',
    ),
});

/** `flag_cleanup_plan`'s answer (flag-cleanup contract, section 2: section 3's plan, unwritten). */
const CleanupPlan = z.object({
  flagKey: z.string(),
  flagType: z.string(),
  archived: z.boolean(),
  removalCandidate: z
    .object({ status: z.string(), reason: z.string(), treatment: z.boolean() })
    .nullable(),
  treatment: z.enum(['on', 'off']).nullable(),
  keep: z
    .object({
      variation: z.string().nullable(),
      value: z.string().nullable(),
      environments: z.array(z.string()),
    })
    .nullable()
    .describe('The variation whose value replaces every read, and the environments deciding it.'),
  refusal: z
    .string()
    .nullable()
    .describe('Why no cleanup can be written as things are (null when one can).'),
  scanned: z.boolean().describe('False while no repository of the project was ever scanned.'),
  places: z.array(Place).describe("The references on each repository's default branch."),
  otherBranches: z.array(
    z.object({ repository: z.string(), branch: z.string(), references: z.number().int() }),
  ),
  command: z.string().nullable().describe('The `vexil cleanup` command to run in a checkout.'),
  steps: z.array(z.string()),
});
type CleanupPlan = z.infer<typeof CleanupPlan>;

/** The flag's removal candidate entry (stale or dead), or null: pages are sorted by key. */
async function findCandidate(
  client: ManagementClient,
  projectPath: readonly string[],
  flagKey: string,
): Promise<Candidate | null> {
  let cursor: string | undefined;
  do {
    const page = await client.send<{ items: Candidate[]; next_cursor: string | null }>(
      'GET',
      [...projectPath, 'flags', 'removal-candidates'],
      { query: { staleness: 'stale', limit: CANDIDATE_PAGE, cursor } },
    );
    const found = page.items.find((item) => item.key === flagKey);
    if (found) return found;
    if (page.items.some((item) => item.key > flagKey)) return null;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return null;
}

/** The shell command that writes the cleanup's diff, as `vexil cleanup` takes it. */
export function cleanupCommand(
  flagKey: string,
  treatment: 'on' | 'off',
  target: { url: string; org: string; project: string },
): string {
  return `npx vexil cleanup --flag ${flagKey} --treatment ${treatment} --url ${target.url} --org ${target.org} --project ${target.project} > cleanup.diff`;
}

/**
 * Code-reference tools (flag-cleanup contract, section 2; design record 054), read-only for
 * Viewers and up: where code reads a flag, and the plan that removes it from the code.
 */
export function registerCodeReferenceTools(server: McpServer, context: ToolContext): void {
  const { client, schemas, publicUrl } = context;

  server.registerTool(
    'list_code_references',
    {
      description:
        "Where code reads a flag: the references of the project's scanned repositories, by " +
        'repository and branch (path, line, column, kind, context lines, link). Empty while ' +
        'no scan has found the flag; `list_flags` gives each flag’s count on default branches.',
      inputSchema: { org: OrgArgument, project: ProjectArgument, flag: FlagArgument },
      outputSchema: schemas('GET', `${FLAGS}/{flag}/code-references`),
      annotations: { readOnlyHint: true },
    },
    ({ org, project, flag }) =>
      asTool(() =>
        client.send('GET', ['orgs', org, 'projects', project, 'flags', flag, 'code-references']),
      ),
  );

  server.registerTool(
    'flag_cleanup_plan',
    {
      description:
        'The plan that removes a finished flag from the code, without writing anything: the ' +
        'value to keep (from `treatment`, else the removal candidate’s), the places on default ' +
        'branches and who changes each, the `vexil cleanup` command to run in a checkout, and ' +
        'what follows (scan again, archive). `refusal` says why no cleanup can be written yet.',
      inputSchema: {
        org: OrgArgument,
        project: ProjectArgument,
        flag: FlagArgument,
        treatment: z
          .enum(['on', 'off'])
          .optional()
          .describe(
            'Keep what the flag serves when on, or its off variation. Default: the removal ' +
              'candidate’s treatment.',
          ),
      },
      outputSchema: CleanupPlan,
      annotations: { readOnlyHint: true },
    },
    ({ org, project, flag, treatment }) =>
      asTool(async () => {
        const projectPath = ['orgs', org, 'projects', project];
        const found = await client.send<FlagDescription & { isArchived: boolean }>('GET', [
          ...projectPath,
          'flags',
          flag,
        ]);
        const [environments, references, repositories, candidate] = await Promise.all([
          servingOf(client, [...projectPath, 'flags', found.key]),
          client.send<FlagReferences>('GET', [
            ...projectPath,
            'flags',
            found.key,
            'code-references',
          ]),
          client.send<{ items: unknown[] }>('GET', [
            ...projectPath,
            'code-references',
            'repositories',
          ]),
          findCandidate(client, projectPath, found.key),
        ]);
        const plan = cleanupPlan({
          flag: found,
          environments,
          references,
          scanned: repositories.items.length > 0,
          candidate,
          treatment,
          target: { url: publicUrl, org, project },
        });
        return plan;
      }),
  );
}

/** Each environment's configuration of the flag at `flagPath`, with its number of rules. */
async function servingOf(
  client: ManagementClient,
  flagPath: string[],
): Promise<EnvironmentServing[]> {
  const environments = await client.send<Omit<EnvironmentServing, 'rules'>[]>('GET', [
    ...flagPath,
    'environments',
  ]);
  return Promise.all(
    environments.map(async (environment) => {
      const rules = await client.send<{ items: unknown[] }>('GET', [
        ...flagPath,
        'environments',
        environment.environmentKey ?? '',
        'rules',
      ]);
      return { ...environment, rules: rules.items.length };
    }),
  );
}

/** The plan from what the API said; pure, so the rules read in one place. */
function cleanupPlan(input: {
  flag: FlagDescription & { isArchived: boolean };
  environments: EnvironmentServing[];
  references: FlagReferences;
  scanned: boolean;
  candidate: Candidate | null;
  treatment: 'on' | 'off' | undefined;
  target: { url: string; org: string; project: string };
}): CleanupPlan {
  const { flag, candidate, scanned } = input;
  const treatment = input.treatment ?? (candidate ? (candidate.treatment ? 'on' : 'off') : null);
  const kept = treatment ? keptValue(flag, input.environments, treatment) : null;
  const keep =
    kept && !('refused' in kept)
      ? {
          variation: kept.variation,
          // As the API stores it (JSON text for a Json flag), like the flag's variations.
          value:
            flag.variations.find((variation) => variation.key === kept.variation)?.value ?? null,
          environments: kept.environments,
        }
      : null;
  const places: CleanupPlan['places'] = [];
  const otherBranches: CleanupPlan['otherBranches'] = [];
  for (const repository of input.references.repositories)
    for (const branch of repository.branches) {
      if (branch.name !== repository.defaultBranch) {
        otherBranches.push({
          repository: repository.name,
          branch: branch.name,
          references: branch.references.length,
        });
        continue;
      }
      for (const reference of branch.references)
        places.push({
          repository: repository.name,
          branch: branch.name,
          commit: branch.commit,
          path: reference.path,
          line: reference.line,
          column: reference.column,
          kind: reference.kind,
          url: reference.url,
          handledBy: JAVASCRIPT_EXTENSIONS.has(extname(reference.path).toLowerCase())
            ? 'vexil cleanup'
            : 'a person',
        });
    }
  const refusal =
    treatment === null
      ? `"${flag.key}" is not a removal candidate: pass treatment (on or off) to say which value the code keeps.`
      : kept && 'refused' in kept
        ? kept.refused
        : null;
  const command =
    treatment && refusal === null ? cleanupCommand(flag.key, treatment, input.target) : null;
  const repositories = [...new Set(places.map((place) => place.repository))];
  const byPerson = places.filter((place) => place.handledBy === 'a person');
  const steps: string[] = [];
  if (!scanned)
    steps.push(
      'No repository of the project was ever scanned, so where code reads the flag is unknown: ' +
        'run `npx vexil code-refs scan --upload` in each repository first.',
    );
  else if (places.length === 0)
    steps.push(
      `No default branch reads "${flag.key}" any more: it is safe to archive as far as code is concerned.`,
    );
  else {
    if (command && places.length > byPerson.length)
      steps.push(
        `In a checkout of ${repositories.join(', ')} on its default branch, run \`${command}\`, ` +
          'review the diff and apply it with `git apply cleanup.diff` (exit 3 lists places left for a person).',
      );
    if (byPerson.length > 0)
      steps.push(
        `Change by hand: ${byPerson.map((place) => `${place.repository}:${place.path}:${place.line}`).join(', ')}` +
          (keep ? `, keeping ${keep.variation} (${keep.value ?? 'null'}).` : '.'),
      );
    steps.push(
      'Merge, then scan the default branch again (`npx vexil code-refs scan --upload`) so that Vexil sees the references gone.',
    );
  }
  if (!flag.isArchived && scanned)
    steps.push(
      places.length === 0
        ? `Archive the flag (POST …/flags/${flag.key}/archive).`
        : 'Archive the flag once no default branch reads it: until then archiving is refused with FLAG_STILL_REFERENCED.',
    );
  return {
    flagKey: flag.key,
    flagType: flag.type,
    archived: flag.isArchived,
    removalCandidate: candidate && {
      status: candidate.status,
      reason: candidate.reason,
      treatment: candidate.treatment,
    },
    treatment,
    keep,
    refusal,
    scanned,
    places,
    otherBranches,
    command,
    steps,
  };
}
