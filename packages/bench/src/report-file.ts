import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { REPO_ROOT } from './service.js';

/** The benchmark report: `npm run bench` writes it, but for the section of `npm run bench:writes`. */
export const REPORT_FILE = join(REPO_ROOT, 'docs/benchmarks.md');
const WRITES_START = '<!-- bench:writes -->';
const WRITES_END = '<!-- /bench:writes -->';

/** Splits the report into what `npm run bench` writes and the management-writes section. */
function split(report: string): { main: string; writes: string } {
  const start = report.indexOf(WRITES_START);
  const end = report.indexOf(WRITES_END);
  if (start < 0 || end < start) return { main: report, writes: '' };
  return {
    main: report.slice(0, start) + report.slice(end + WRITES_END.length),
    writes: report.slice(start + WRITES_START.length, end),
  };
}

/**
 * Writes the report with `parts` replaced, the other part kept as the file has it, formatted like
 * every other document (so `npm run lint` passes); the management-writes section goes last.
 *
 * @returns the Markdown written
 */
export async function writeReport(parts: { main?: string; writes?: string }): Promise<string> {
  const current = split(await readFile(REPORT_FILE, 'utf8').catch(() => ''));
  const main = (parts.main ?? current.main).trimEnd();
  const writes = (parts.writes ?? current.writes).trim();
  const report = writes ? `${main}\n\n${WRITES_START}\n\n${writes}\n\n${WRITES_END}\n` : main;
  const markdown = await format(report, {
    ...(await resolveConfig(REPORT_FILE)),
    filepath: REPORT_FILE,
  });
  await writeFile(REPORT_FILE, markdown);
  return markdown;
}

/** The commit measured, noting uncommitted changes ("unknown" without git). */
export function gitCommit(): string {
  const git = (...args: string[]) =>
    // No output (null) when git cannot be run.
    (
      spawnSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).stdout as string | null
    )?.trim() ?? '';
  const commit = git('rev-parse', '--short', 'HEAD') || 'unknown';
  return git('status', '--porcelain') ? `${commit} with uncommitted changes` : commit;
}
