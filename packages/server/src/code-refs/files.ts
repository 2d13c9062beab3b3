import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import picomatch from 'picomatch';
import { parse as parseYaml } from 'yaml';

const run = promisify(execFile);

/** A project's `.vexil/code-refs.yaml` (flag-cleanup contract, sections 1 and 3). */
export interface CodeRefsSettings {
  /** Globs of paths (relative to the scanned directory) not to scan. */
  exclude: string[];
  /** The project's own functions that read a flag: `isOn('key')` with `keyArgument: 0`. */
  wrappers: { name: string; keyArgument: number }[];
}

/** What git says about a directory, or null values outside a repository. */
export interface GitFacts {
  isRepository: boolean;
  repository: string | null;
  branch: string | null;
  commit: string | null;
}

async function git(dir: string, ...args: string[]): Promise<string | null> {
  try {
    const { stdout } = await run('git', ['-C', dir, ...args], { maxBuffer: 256 * 1024 * 1024 });
    return stdout;
  } catch {
    return null;
  }
}

/**
 * Reads `.vexil/code-refs.yaml` under `dir` (absent: no exclusions, no wrappers).
 * @throws Error naming the file when it is not the expected shape
 */
export async function readSettings(dir: string): Promise<CodeRefsSettings> {
  const path = join(dir, '.vexil', 'code-refs.yaml');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return { exclude: [], wrappers: [] };
  }
  const value = (parseYaml(text) ?? {}) as { exclude?: unknown; wrappers?: unknown };
  const exclude = value.exclude ?? [];
  const wrappers = value.wrappers ?? [];
  if (!Array.isArray(exclude) || !exclude.every((glob) => typeof glob === 'string'))
    throw new Error(`${path}: exclude must be a list of globs`);
  if (
    !Array.isArray(wrappers) ||
    !wrappers.every(
      (wrapper: { name?: unknown; keyArgument?: unknown }) =>
        typeof wrapper.name === 'string' &&
        (wrapper.keyArgument === undefined || Number.isInteger(wrapper.keyArgument)),
    )
  )
    throw new Error(`${path}: wrappers must be a list of { name, keyArgument }`);
  return {
    exclude: exclude,
    wrappers: (wrappers as { name: string; keyArgument?: number }[]).map((wrapper) => ({
      name: wrapper.name,
      keyArgument: wrapper.keyArgument ?? 0,
    })),
  };
}

/** The repository name (from `origin`, `owner/name`), branch and commit of `dir`. */
export async function gitFacts(dir: string): Promise<GitFacts> {
  const inside = (await git(dir, 'rev-parse', '--is-inside-work-tree'))?.trim() === 'true';
  if (!inside) return { isRepository: false, repository: null, branch: null, commit: null };
  const origin = (await git(dir, 'remote', 'get-url', 'origin'))?.trim() ?? '';
  const top = (await git(dir, 'rev-parse', '--show-toplevel'))?.trim() ?? dir;
  const name = /[:/]([^/:]+\/[^/]+?)(\.git)?$/.exec(origin)?.[1] ?? top.split(sep).pop() ?? null;
  const branch = (await git(dir, 'rev-parse', '--abbrev-ref', 'HEAD'))?.trim() ?? null;
  const commit = (await git(dir, 'rev-parse', 'HEAD'))?.trim() ?? null;
  return {
    isRepository: true,
    repository: name,
    branch: branch === 'HEAD' ? null : branch,
    commit,
  };
}

/** Every file under `dir`, skipping `.git`, for a directory git does not know. */
async function walkDirectory(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .filter((path) => !path.split('/').includes('.git'));
}

/**
 * The files to scan, relative and `/`-separated: what git would track (committed or not, its
 * ignore rules honoured) or, outside a repository, every file but `.git`; less `exclude` globs.
 */
export async function listFiles(
  dir: string,
  facts: GitFacts,
  exclude: readonly string[],
): Promise<string[]> {
  const listed = facts.isRepository
    ? ((await git(dir, 'ls-files', '-z', '--cached', '--others', '--exclude-standard')) ?? '')
        .split('\0')
        .filter(Boolean)
    : await walkDirectory(dir);
  const excluded = exclude.length > 0 ? picomatch(exclude as string[], { dot: true }) : null;
  return [...new Set(listed)].filter((path) => !excluded?.(path)).sort();
}
