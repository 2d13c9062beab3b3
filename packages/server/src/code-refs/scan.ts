import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import AhoCorasick from 'modern-ahocorasick';
import {
  javascriptReferences,
  JAVASCRIPT_EXTENSIONS,
  type FoundReference,
} from './javascript-references.js';
import { gitFacts, listFiles, readSettings } from './files.js';

/** Other languages searched by delimiters (flag-cleanup contract, section 1). */
export const DELIMITED_EXTENSIONS = new Set([
  '.go',
  '.py',
  '.java',
  '.kt',
  '.kts',
  '.swift',
  '.cs',
  '.rb',
  '.php',
  '.rs',
  '.dart',
]);
const QUOTES = new Set(['"', "'", '`']);
/** Files read at once: enough to keep both cores busy parsing while others are read. */
const PARALLEL_READS = 16;
const MAX_LINE = 300;
/** Bytes looked at for a NUL, as git does to call a file binary. */
const BINARY_PROBE = 8000;

export interface ScanOptions {
  dir: string;
  keys: readonly string[];
  repository?: string;
  branch?: string;
  commit?: string;
  /** Lines before and after each reference, 0–5 (default 2). */
  contextLines?: number;
}

export interface ScannedReference extends FoundReference {
  path: string;
  context: { before: string[]; line: string; after: string[] };
}

/** The scan's JSON (contract, section 1, "Output"); `skipped` names unreadable files. */
export interface ScanResult {
  repository: string;
  branch: string;
  commit: string | null;
  scannedAt: string;
  references: ScannedReference[];
  unparsed: string[];
  skipped: { path: string; reason: string }[];
  files: number;
}

/** A scan that cannot start: no repository or branch to name outside git. */
export class ScanRefused extends Error {}

/**
 * Finds each place in `dir` that reads one of `keys`: JavaScript and TypeScript are parsed
 * (aliases followed), the other languages searched for the key between matching quotes, a file
 * that does not parse searched the same way and named in `unparsed`. Every file is first run
 * through one automaton of all keys, so that a file with none of them is never parsed.
 * @throws ScanRefused outside a git repository without `repository` and `branch`
 */
export async function scanDirectory(options: ScanOptions): Promise<ScanResult> {
  const { dir } = options;
  const contextLines = Math.min(Math.max(options.contextLines ?? 2, 0), 5);
  const facts = await gitFacts(dir);
  const repository = options.repository ?? facts.repository;
  const branch = options.branch ?? facts.branch;
  if (!repository || !branch)
    throw new ScanRefused(
      facts.isRepository
        ? `${dir}: git names no ${repository ? 'branch (a detached HEAD)' : 'repository'}; pass --repository and --branch.`
        : `${dir} is not a git repository; pass --repository and --branch to scan it anyway.`,
    );
  const settings = await readSettings(dir);
  const paths = await listFiles(dir, facts, settings.exclude);
  const keySet = new Set(options.keys);
  const automaton = options.keys.length > 0 ? new AhoCorasick([...keySet]) : null;
  const references: ScannedReference[] = [];
  const unparsed: string[] = [];
  const skipped: { path: string; reason: string }[] = [];

  /** Constants initialised with a key anywhere, for the files that import them. */
  const declaredAliases = new Map<string, string>();
  const aliasUsers: { path: string; text: string }[] = [];
  const addReferences = (path: string, text: string, found: FoundReference[]) => {
    if (found.length === 0) return;
    const lines = text.split(/\r?\n/);
    const cut = (line: string) => line.slice(0, MAX_LINE);
    for (const reference of found) {
      const index = reference.line - 1;
      references.push({
        path,
        ...reference,
        context: {
          before: lines.slice(Math.max(0, index - contextLines), index).map(cut),
          line: cut(lines[index] ?? ''),
          after: lines.slice(index + 1, index + 1 + contextLines).map(cut),
        },
      });
    }
  };

  const scanFile = async (path: string) => {
    let bytes: Buffer;
    try {
      bytes = await readFile(join(dir, path));
    } catch (error) {
      skipped.push({ path, reason: (error as NodeJS.ErrnoException).code ?? String(error) });
      return;
    }
    if (bytes.subarray(0, BINARY_PROBE).includes(0)) return;
    const text = bytes.toString('utf8');
    const matches = automaton?.search(text) ?? [];
    const extension = extname(path).toLowerCase();
    if (JAVASCRIPT_EXTENSIONS.has(extension) && /\bimport\b/.test(text))
      aliasUsers.push({ path, text });
    if (matches.length === 0) return;
    let found: FoundReference[];
    if (JAVASCRIPT_EXTENSIONS.has(extension)) {
      try {
        const parsed = javascriptReferences(text, extension, keySet);
        found = parsed.references;
        for (const [name, key] of parsed.aliases) declaredAliases.set(name, key);
      } catch {
        unparsed.push(path);
        found = delimitedReferences(text, matches);
      }
    } else if (DELIMITED_EXTENSIONS.has(extension)) {
      found = delimitedReferences(text, matches);
    } else return;
    addReferences(path, text, found);
  };

  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL_READS }, async () => {
      while (next < paths.length) {
        const path = paths[next++];
        if (path !== undefined) await scanFile(path);
      }
    }),
  );
  // Files without a key that import a constant holding one: one automaton of the constants' names.
  if (declaredAliases.size > 0) {
    const names = new AhoCorasick([...declaredAliases.keys()]);
    for (const { path, text } of aliasUsers) {
      if (!names.match(text)) continue;
      try {
        const extension = extname(path).toLowerCase();
        // No keys: only the uses of imported constants; the literals were found above.
        const found = javascriptReferences(text, extension, new Set(), declaredAliases);
        addReferences(path, text, found.references);
      } catch {
        if (!unparsed.includes(path)) unparsed.push(path);
      }
    }
  }
  references.sort(
    (a, b) =>
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) || a.line - b.line || a.column - b.column,
  );
  return {
    repository,
    branch,
    commit: options.commit ?? facts.commit,
    scannedAt: new Date().toISOString(),
    references,
    unparsed: unparsed.sort(),
    skipped,
    files: paths.length,
  };
}

/** The automaton's matches that sit between matching quotes, as `literal` references. */
export function delimitedReferences(
  text: string,
  matches: readonly { start: number; end: number; pattern: string }[],
): FoundReference[] {
  const found: FoundReference[] = [];
  let line = 1;
  let lineStart = 0;
  let scanned = 0;
  for (const match of [...matches].sort((a, b) => a.start - b.start)) {
    const open = text[match.start - 1];
    if (open === undefined || !QUOTES.has(open) || text[match.end] !== open) continue;
    for (; scanned < match.start; scanned += 1) {
      if (text.charCodeAt(scanned) === 10) {
        line += 1;
        lineStart = scanned + 1;
      }
    }
    found.push({ key: match.pattern, line, column: match.start - lineStart + 1, kind: 'literal' });
  }
  return found;
}
