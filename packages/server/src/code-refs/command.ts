import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { distance } from 'fastest-levenshtein';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { scanDirectory, ScanRefused, type ScanResult } from './scan.js';

/** Where the project's flags are read from and the scan is sent to. */
export interface ApiTarget {
  url: string;
  org: string;
  project: string;
  token: string;
}

interface ScanFlags {
  dir: string;
  keysFile?: string;
  url?: string;
  org?: string;
  project?: string;
  token?: string;
  repository?: string;
  branch?: string;
  commit?: string;
  contextLines: number;
  format: 'text' | 'json';
  upload?: boolean;
  failOnArchived?: boolean;
}

/**
 * One call to the project's management API (`path` below `…/projects/{project}`).
 * @throws Error with the method, path, status and body when the answer is not 2xx
 */
export async function api(target: ApiTarget, method: string, path: string, body?: unknown) {
  const response = await fetch(
    `${target.url.replace(/\/$/, '')}/api/v1/orgs/${encodeURIComponent(target.org)}/projects/${encodeURIComponent(target.project)}${path}`,
    {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    },
  );
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/** The project's flag keys, archived ones marked, page by page. */
async function projectKeys(target: ApiTarget): Promise<Map<string, { archived: boolean }>> {
  const keys = new Map<string, { archived: boolean }>();
  for (const archived of [false, true]) {
    let cursor: string | null = null;
    do {
      const page = (await api(
        target,
        'GET',
        `/flags?limit=200&archived=${archived}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      )) as { items: { key: string }[]; next_cursor: string | null };
      for (const item of page.items) keys.set(item.key, { archived });
      cursor = page.next_cursor;
    } while (cursor);
  }
  return keys;
}

/**
 * The server the `--url`, `--org`, `--project` and `--token` (or `VEXIL_TOKEN`) options name, or
 * null without `--url` (an offline run).
 * @throws InvalidArgumentError when `--url` comes without the others
 */
export function apiTarget(flags: Partial<ApiTarget>): ApiTarget | null {
  if (!flags.url) return null;
  if (!flags.org || !flags.project || !flags.token)
    throw new InvalidArgumentError('--url needs --org, --project and VEXIL_TOKEN');
  return { url: flags.url, org: flags.org, project: flags.project, token: flags.token };
}

/** The scan's JSON as the API takes it (`skipped` and `files` are the summary's). */
function uploadBody(result: ScanResult) {
  const { skipped: _skipped, files: _files, ...body } = result;
  return body;
}

/**
 * Read-but-suspicious keys for `--fail-on-archived`: archived flags the code still reads, and
 * keys the project lacks within edit distance 2 of one it has (a typo).
 */
function suspicious(result: ScanResult, keys: Map<string, { archived: boolean }>): string[] {
  const problems = new Set<string>();
  const known = [...keys.keys()];
  for (const reference of result.references) {
    const entry = keys.get(reference.key);
    if (entry?.archived) problems.add(`${reference.key}: archived, still read`);
    if (!entry) {
      const near = known.find((key) => distance(key, reference.key) <= 2);
      if (near) problems.add(`${reference.key}: no such flag (did you mean ${near}?)`);
    }
  }
  return [...problems].sort();
}

/**
 * `vexil code-refs scan` (flag-cleanup contract, section 1): prints the references (text or
 * JSON), uploads them with `--upload`, exits 1 with `--fail-on-archived` when code reads an
 * archived flag or a near-miss of a key, and 1 when the directory cannot be scanned.
 */
export function registerCodeRefsCommand(program: Command): void {
  const codeRefs = program
    .command('code-refs')
    .description('find where code reads flags, and send it to Vexil');
  codeRefs
    .command('scan')
    .description('scan a directory for the places that read flag keys')
    .option('--dir <dir>', 'the directory to scan', '.')
    .option('--keys-file <file>', 'flag keys, one a line (an offline scan)')
    .option('--url <url>', 'the Vexil server to read keys from and upload to')
    .option('--org <org>', 'the organization')
    .option('--project <project>', 'the project')
    .addOption(new Option('--token <token>', 'an API token').env('VEXIL_TOKEN'))
    .option('--repository <name>', 'the repository name (default: from git origin)')
    .option('--branch <name>', 'the branch (default: from git)')
    .option('--commit <sha>', 'the commit (default: from git)')
    .option(
      '--context-lines <n>',
      'lines before and after each reference, 0–5',
      (value: string) => {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 0 || n > 5)
          throw new InvalidArgumentError('must be 0 to 5');
        return n;
      },
      2,
    )
    .addOption(
      new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'),
    )
    .option('--upload', 'send the references to the server')
    .option('--fail-on-archived', 'exit 1 when code reads an archived flag or a mistyped key')
    .action(async (flags: ScanFlags) => {
      const target = apiTarget(flags);
      let keys: Map<string, { archived: boolean }>;
      if (flags.keysFile) {
        const lines = (await readFile(flags.keysFile, 'utf8')).split(/\r?\n/);
        keys = new Map(
          lines
            .map((line) => line.trim())
            .filter(Boolean)
            .map((key) => [key, { archived: false }]),
        );
      } else if (target) keys = await projectKeys(target);
      else throw new InvalidArgumentError('give --keys-file, or --url with --org and --project');
      let result: ScanResult;
      try {
        result = await scanDirectory({
          dir: resolve(flags.dir),
          keys: [...keys.keys()],
          ...(flags.repository ? { repository: flags.repository } : {}),
          ...(flags.branch ? { branch: flags.branch } : {}),
          ...(flags.commit ? { commit: flags.commit } : {}),
          contextLines: flags.contextLines,
        });
      } catch (error) {
        if (!(error instanceof ScanRefused)) throw error;
        console.error(error.message);
        process.exitCode = 1;
        return;
      }
      if (flags.format === 'json') process.stdout.write(`${JSON.stringify(uploadBody(result))}\n`);
      else
        for (const reference of result.references)
          console.log(
            `${reference.path}:${reference.line}:${reference.column} ${reference.key} ${reference.kind}`,
          );
      const summary = [
        `${result.references.length} references to ${new Set(result.references.map((r) => r.key)).size} flags in ${result.files} files (${result.repository}, ${result.branch}${result.commit ? ` at ${result.commit.slice(0, 12)}` : ''})`,
        ...result.unparsed.map((path) => `not parsed, searched as text: ${path}`),
        ...result.skipped.map(({ path, reason }) => `skipped, unreadable (${reason}): ${path}`),
      ];
      console.error(summary.join('\n'));
      if (flags.upload) {
        if (!target) throw new InvalidArgumentError('--upload needs --url, --org and --project');
        await api(
          target,
          'PUT',
          `/code-references/${encodeURIComponent(result.repository)}/branches/${encodeURIComponent(result.branch)}`,
          uploadBody(result),
        );
        console.error(`uploaded to ${target.url} (${target.org}/${target.project})`);
      }
      if (flags.failOnArchived) {
        const problems = suspicious(result, keys);
        for (const problem of problems) console.error(problem);
        if (problems.length > 0) process.exitCode = 1;
      }
    });
}
