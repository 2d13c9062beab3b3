import { resolve } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { api, apiTarget, type ApiTarget } from '../command.js';
import { cleanupDirectory, CleanupRefused, writeChanges, type FlagToRemove } from './cleanup.js';
import type { FlagValue } from './constants.js';
import { keptValue, type EnvironmentServing, type FlagDescription } from '../kept-value.js';
import { unifiedDiff } from './patch.js';

interface CleanupFlags {
  flag?: string;
  removalCandidates?: boolean;
  status: 'dead' | 'stale';
  treatment?: 'on' | 'off';
  value?: string;
  dir: string;
  write?: boolean;
  url?: string;
  org?: string;
  project?: string;
  token?: string;
}

/** Exit codes of the contract: 3 when places were left for a person. */
const EXIT_PERSON = 3;

interface Candidate {
  key: string;
  treatment: boolean;
}

async function removalCandidates(
  target: ApiTarget,
  status: 'dead' | 'stale',
): Promise<Candidate[]> {
  const found: Candidate[] = [];
  let cursor: string | null = null;
  do {
    const page = (await api(
      target,
      'GET',
      `/flags/removal-candidates?staleness=${status}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )) as { items: Candidate[]; next_cursor: string | null };
    found.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return found;
}

/** The value a flag's reads become, read from the API; a string when refused. */
async function valueFromApi(
  target: ApiTarget,
  key: string,
  treatment: 'on' | 'off',
): Promise<{ value: FlagValue; variation: string } | { refused: string }> {
  const path = `/flags/${encodeURIComponent(key)}`;
  const flag = (await api(target, 'GET', path)) as FlagDescription;
  const environments = (await api(target, 'GET', `${path}/environments`)) as Omit<
    EnvironmentServing,
    'rules'
  >[];
  const serving: EnvironmentServing[] = [];
  for (const environment of environments) {
    const rules = (await api(
      target,
      'GET',
      `${path}/environments/${encodeURIComponent(environment.environmentKey ?? '')}/rules`,
    )) as { items: unknown[] };
    serving.push({ ...environment, rules: rules.items.length });
  }
  return keptValue(flag, serving, treatment);
}

/** `--value`: JSON (`true`, `42`, `"dark"`, `{…}`), or else the text itself (a String flag). */
function parseValue(text: string): FlagValue {
  try {
    return JSON.parse(text) as FlagValue;
  } catch {
    return text;
  }
}

/**
 * `vexil cleanup` (flag-cleanup contract, section 3): prints the diff that takes the flag (or
 * every removal candidate) out of the code under `--dir`, or writes it with `--write`; a summary
 * on standard error. Exit 0 when everything was replaced, 3 when places were left for a person,
 * 1 on an error (a refused value, not a git repository, an API error).
 */
export function registerCleanupCommand(program: Command): void {
  program
    .command('cleanup')
    .description('write the change that takes a finished flag out of the code')
    .option('--flag <key>', 'the flag to take out')
    .option('--removal-candidates', 'take out every removal candidate (needs --url)')
    .addOption(
      new Option('--status <status>', 'which candidates')
        .choices(['dead', 'stale'])
        .default('dead'),
    )
    .addOption(
      new Option('--treatment <treatment>', 'keep what the flag serves when on, or off').choices([
        'on',
        'off',
      ]),
    )
    .option('--value <json>', 'the value reads become, without asking the server (JSON or text)')
    .option('--dir <dir>', 'the directory to change (a git repository)', '.')
    .option('--write', 'change the files in place instead of printing a diff')
    .option('--url <url>', 'the Vexil server')
    .option('--org <org>', 'the organization')
    .option('--project <project>', 'the project')
    .addOption(new Option('--token <token>', 'an API token').env('VEXIL_TOKEN'))
    .action(async (flags: CleanupFlags) => {
      const target = apiTarget(flags);
      const toRemove: FlagToRemove[] = [];
      const refused: string[] = [];
      if (flags.removalCandidates) {
        if (!target)
          throw new InvalidArgumentError('--removal-candidates needs --url, --org and --project');
        for (const candidate of await removalCandidates(target, flags.status)) {
          const kept = await valueFromApi(
            target,
            candidate.key,
            candidate.treatment ? 'on' : 'off',
          );
          if ('refused' in kept) refused.push(kept.refused);
          else toRemove.push({ key: candidate.key, value: kept.value });
        }
      } else if (flags.flag) {
        if (flags.value !== undefined)
          toRemove.push({ key: flags.flag, value: parseValue(flags.value) });
        else {
          if (!target)
            throw new InvalidArgumentError('give --value, or --url with --org and --project');
          let treatment = flags.treatment;
          if (!treatment) {
            const candidate = (await removalCandidates(target, 'stale')).find(
              (item) => item.key === flags.flag,
            );
            if (!candidate) {
              console.error(`${flags.flag} is not a removal candidate: pass --treatment on or off`);
              process.exitCode = 1;
              return;
            }
            treatment = candidate.treatment ? 'on' : 'off';
          }
          const kept = await valueFromApi(target, flags.flag, treatment);
          if ('refused' in kept) {
            console.error(kept.refused);
            process.exitCode = 1;
            return;
          }
          console.error(`${flags.flag}: keeping ${kept.variation} (${JSON.stringify(kept.value)})`);
          toRemove.push({ key: flags.flag, value: kept.value });
        }
      } else throw new InvalidArgumentError('give --flag KEY or --removal-candidates');

      const dir = resolve(flags.dir);
      let result;
      try {
        result = await cleanupDirectory(dir, toRemove);
      } catch (error) {
        if (!(error instanceof CleanupRefused)) throw error;
        console.error(error.message);
        process.exitCode = 1;
        return;
      }
      if (flags.write) await writeChanges(dir, result);
      else process.stdout.write(unifiedDiff(result.changed));
      const lines = [
        ...refused.map((reason) => `not taken out: ${reason}`),
        ...result.places.map(
          (place) => `${place.path}:${place.line}:${place.column} ${place.key}: ${place.reason}`,
        ),
      ];
      if (result.changed.length === 0 && lines.length === 0) console.error('nothing to change');
      else
        console.error(
          [
            `${result.changed.length} files ${flags.write ? 'changed' : 'in the diff'}, ${result.reads} reads replaced, ${result.branches} branches removed, ${result.places.length + refused.length} places left for a person`,
            ...lines,
          ].join('\n'),
        );
      if (lines.length > 0) process.exitCode = EXIT_PERSON;
    });
}
