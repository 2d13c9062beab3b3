import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { REPO_ROOT } from './service.js';

/** The benchmark report: `npm run bench` writes it, but for the sections of other benchmarks. */
export const REPORT_FILE = join(REPO_ROOT, 'docs/benchmarks.md');

/**
 * The sections that benchmarks other than `npm run bench` write (`npm run bench:relay`, which
 * `npm run bench` runs too, `npm run bench:writes`, `npm run bench:console`,
 * `npm run bench:change-requests`, `npm run bench:guard`, `npm run bench:guarded`,
 * `npm run bench:experiments`, `npm run bench:experiment-results` and
 * `npm run bench:experiment-overhead`, which `npm run bench` runs too,
 * `npm run bench:ofrep-streams`, `npm run bench:code-refs`, `npm run bench:client-scale`,
 * `npm run bench:fragment-memory`, which `npm run bench` runs too), in the order
 * they follow the main report; each stands between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`.
 */
const SECTIONS = [
  'relay',
  'writes',
  'console',
  'changeRequests',
  'guard',
  'guarded',
  'experiments',
  'experimentResults',
  'experimentOverhead',
  'ofrepStreams',
  'streamPatches',
  'streamSoak',
  'codeRefs',
  'clientScale',
  'fragmentMemory',
] as const;
type Section = (typeof SECTIONS)[number];
const start = (name: Section) => `<!-- bench:${name} -->`;
const end = (name: Section) => `<!-- /bench:${name} -->`;

/** Splits the report into what `npm run bench` writes and each other benchmark's section. */
function split(report: string): { main: string } & Record<Section, string> {
  const parts = {
    main: report,
    ...(Object.fromEntries(SECTIONS.map((name) => [name, ''])) as Record<Section, string>),
  };
  for (const name of SECTIONS) {
    const from = parts.main.indexOf(start(name));
    const to = parts.main.indexOf(end(name));
    if (from < 0 || to < from) continue;
    parts[name] = parts.main.slice(from + start(name).length, to);
    parts.main = parts.main.slice(0, from) + parts.main.slice(to + end(name).length);
  }
  return parts;
}

/**
 * Writes the report with `parts` replaced, the others kept as the file has them, formatted like
 * every other document (so `npm run lint` passes); the sections go after the main report.
 *
 * @returns the Markdown written
 */
export async function writeReport(
  parts: Partial<{ main: string } & Record<Section, string>>,
): Promise<string> {
  const current = split(await readFile(REPORT_FILE, 'utf8').catch(() => ''));
  const blocks = [(parts.main ?? current.main).trim()];
  for (const name of SECTIONS) {
    const section = (parts[name] ?? current[name]).trim();
    if (section) blocks.push(`${start(name)}\n\n${section}\n\n${end(name)}`);
  }
  const markdown = await format(`${blocks.join('\n\n')}\n`, {
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

/** When a run began, and the load averages then, for its report to state. */
export interface RunStart {
  /** The 1, 5 and 15 minute load averages, e.g. `0.52, 0.40, 0.33`. */
  load: string;
  /** Minutes since the run began. */
  minutes: () => number;
}

/** Notes that a run begins now, and prints the load averages (a shared machine's) to stderr. */
export function startRun(): RunStart {
  const began = performance.now();
  const load = loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
  console.error(`load average: ${load}`);
  return { load, minutes: () => (performance.now() - began) / 60_000 };
}
