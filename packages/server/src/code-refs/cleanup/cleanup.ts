import { readFile, writeFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import AhoCorasick from 'modern-ahocorasick';
import { gitFacts, listFiles, readSettings } from '../files.js';
import { javascriptReferences, JAVASCRIPT_EXTENSIONS } from '../javascript-references.js';
import { DELIMITED_EXTENSIONS, delimitedReferences } from '../scan.js';
import type { FlagValue } from './constants.js';
import { rewriteFile, type RewriteOptions } from './rewrite.js';

/** A flag to take out of the code and the value its reads become. */
export interface FlagToRemove {
  key: string;
  value: FlagValue;
}

/** A place left for a person (flag-cleanup contract, section 3), 1-based. */
export interface PersonPlace {
  path: string;
  line: number;
  column: number;
  key: string;
  reason: string;
}

/** What a cleanup did: each changed file's text before and after, and the tally. */
export interface CleanupResult {
  changed: { path: string; before: string; after: string }[];
  reads: number;
  branches: number;
  places: PersonPlace[];
  /** Files read, and how long the rewrite took (milliseconds), for the summary and the bench. */
  files: number;
  elapsedMs: number;
}

/** A cleanup that cannot start (not a git repository). */
export class CleanupRefused extends Error {}

const BINARY_PROBE = 8000;

/**
 * Takes `flags` out of the JavaScript and TypeScript under `dir` (flag-cleanup contract,
 * section 3; design record 054): the files git would track (less `.vexil/code-refs.yaml`'s
 * excludes), each flag in turn on the text the previous one left. Nothing is written; the caller
 * prints a diff or writes `changed` with {@link writeChanges}.
 * @throws CleanupRefused when `dir` is not inside a git repository
 */
export async function cleanupDirectory(
  dir: string,
  flags: readonly FlagToRemove[],
): Promise<CleanupResult> {
  const started = performance.now();
  const facts = await gitFacts(dir);
  if (!facts.isRepository)
    throw new CleanupRefused(
      `${dir} is not a git repository: vexil cleanup writes a change to review and apply with git.`,
    );
  const settings = await readSettings(dir);
  const paths = await listFiles(dir, facts, settings.exclude);
  const texts = new Map<string, string>();
  await Promise.all(
    paths.map(async (path) => {
      const extension = extname(path).toLowerCase();
      if (!JAVASCRIPT_EXTENSIONS.has(extension) && !DELIMITED_EXTENSIONS.has(extension)) return;
      let bytes: Buffer;
      try {
        bytes = await readFile(join(dir, path));
      } catch {
        return; // unreadable: nothing the cleanup can change
      }
      if (bytes.subarray(0, BINARY_PROBE).includes(0)) return;
      texts.set(path, bytes.toString('utf8'));
    }),
  );
  const originals = new Map(texts);
  const places: PersonPlace[] = [];
  let reads = 0;
  let branches = 0;
  for (const flag of flags) {
    const outcome = removeFlag(texts, flag, settings.wrappers);
    reads += outcome.reads;
    branches += outcome.branches;
    places.push(...outcome.places);
  }
  const changed = [...texts]
    .filter(([path, text]) => originals.get(path) !== text)
    .map(([path, after]) => ({ path, before: originals.get(path) ?? '', after }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
  places.sort(
    (a, b) =>
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) || a.line - b.line || a.column - b.column,
  );
  return {
    changed,
    reads,
    branches,
    places,
    files: paths.length,
    elapsedMs: performance.now() - started,
  };
}

/** Writes the changed files in place (`--write`); every path is one listed under `dir`. */
export async function writeChanges(dir: string, result: CleanupResult): Promise<void> {
  for (const { path, after } of result.changed) await writeFile(join(dir, path), after);
}

/**
 * One flag over the texts (changed in place): files that read it are rewritten; a file that
 * exports a constant holding the key is rewritten again once the others are, so that the
 * constant goes when no other file names it any more.
 */
function removeFlag(
  texts: Map<string, string>,
  flag: FlagToRemove,
  wrappers: RewriteOptions['wrappers'],
): { reads: number; branches: number; places: PersonPlace[] } {
  const keys = new Set([flag.key]);
  const automaton = new AhoCorasick([flag.key]);
  const places: PersonPlace[] = [];
  const holding = new Map<string, ReturnType<typeof javascriptReferences> | null>();
  const aliases = new Map<string, string>();
  for (const [path, text] of texts) {
    if (!automaton.match(text)) continue;
    const extension = extname(path).toLowerCase();
    if (DELIMITED_EXTENSIONS.has(extension)) {
      for (const found of delimitedReferences(text, automaton.search(text)))
        places.push({ path, ...found, reason: 'not JavaScript or TypeScript: change it by hand' });
      continue;
    }
    try {
      const found = javascriptReferences(text, extension, keys);
      holding.set(path, found);
      for (const [name, key] of found.aliases) aliases.set(name, key);
    } catch (error) {
      holding.set(path, null);
      places.push({
        path,
        line: 1,
        column: 1,
        key: flag.key,
        reason: `does not parse, so it cannot be rewritten (${String(error)})`,
      });
    }
  }
  // Files that import one of the constants holding the key.
  const importers = new Set<string>();
  if (aliases.size > 0) {
    const names = new AhoCorasick([...aliases.keys()]);
    for (const [path, text] of texts) {
      if (holding.has(path) || !JAVASCRIPT_EXTENSIONS.has(extname(path).toLowerCase())) continue;
      if (!/\bimport\b/.test(text) || !names.match(text)) continue;
      try {
        const found = javascriptReferences(text, extname(path).toLowerCase(), new Set(), aliases);
        if (found.references.length > 0) importers.add(path);
      } catch {
        // Not parsed: it cannot name the constant in a way the rewriter could change.
      }
    }
  }
  const importedAliases = new Set(aliases.keys());
  let reads = 0;
  let branches = 0;
  const rewrite = (path: string, removableExports: ReadonlySet<string>) => {
    const text = texts.get(path) ?? '';
    return rewriteFile(text, extname(path).toLowerCase(), {
      key: flag.key,
      value: flag.value,
      wrappers,
      importedAliases,
      removableExports,
    });
  };
  const declaring = new Map<string, string[]>();
  const candidates = [
    ...[...holding].filter(([, found]) => found).map(([path]) => path),
    ...importers,
  ];
  for (const path of candidates) {
    const outcome = rewrite(path, new Set());
    if (outcome.exportedAliases.length > 0) declaring.set(path, outcome.exportedAliases);
    reads += outcome.reads;
    branches += outcome.branches;
    for (const place of outcome.places) places.push({ path, key: flag.key, ...place });
    if (outcome.text !== null) texts.set(path, outcome.text);
  }
  // Second pass: exported constants that no other file names any more are removed too.
  for (const [path, exported] of declaring) {
    // Another file that names the constant still needs it, unless that name is only its own
    // export of a constant of the same name (the sample copied twice).
    const mentions = (other: string, text: string, name: string) =>
      (text.match(new RegExp(`\\b${name}\\b`, 'g'))?.length ?? 0) -
      (declaring.get(other)?.includes(name) ? 1 : 0);
    const removable = new Set(
      exported.filter(
        (name) =>
          ![...texts].some(
            ([other, text]) =>
              other !== path &&
              JAVASCRIPT_EXTENSIONS.has(extname(other).toLowerCase()) &&
              mentions(other, text, name) > 0,
          ),
      ),
    );
    if (removable.size === 0) continue;
    const again = rewrite(path, removable);
    if (again.text !== null && again.places.length === 0) texts.set(path, again.text);
  }
  return { reads, branches, places };
}
