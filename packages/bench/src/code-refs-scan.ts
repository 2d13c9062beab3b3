/**
 * The code-reference scan measured (flag-cleanup contract, section 1, "Speed"; issue 46): a
 * generated repository of 10,000 source files reading 1,000 flag keys, under git, scanned by
 * `vexil code-refs scan` as a CI job runs it (a fresh process, keys from a file, JSON out).
 * `npm run bench` runs it, and `npm run bench:code-refs` alone.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';
import { required } from './required.js';
import { CLI } from './service.js';
import { median } from './statistics.js';
import { git } from './git.js';

/** The contract's repository: 10,000 source files, 1,000 flag keys, under 20 s. */
export const SOURCE_FILES = Number(process.env.VEXIL_BENCH_CODE_REFS_FILES ?? 10_000);
export const FLAG_KEYS = Number(process.env.VEXIL_BENCH_CODE_REFS_KEYS ?? 1_000);
export const TARGET_SECONDS = 20;
/** Scans timed one after the other; the median is the figure. */
const ROUNDS = 3;
const SEED = 46;

/** The files' languages, by share: mostly TypeScript and React, some JavaScript, Python, Go. */
const LANGUAGES = [
  { extension: '.ts', share: 45 },
  { extension: '.tsx', share: 25 },
  { extension: '.js', share: 10 },
  { extension: '.py', share: 10 },
  { extension: '.go', share: 10 },
] as const;
/** The share of files (percent) that read at least one flag; most code reads none. */
const READING_SHARE = 30;

export interface CodeRefsScanMeasurement {
  files: number;
  keys: number;
  bytes: number;
  generateSeconds: number;
  gitSeconds: number;
  /** Each round's wall time, in seconds, and their median. */
  roundsSeconds: number[];
  medianSeconds: number;
  references: number;
  referencedKeys: number;
  unparsed: number;
  loadAverage: { start: number; end: number };
}

const pick = <T>(rng: RandomGenerator, items: readonly T[]): T =>
  required(items[uniformInt(rng, 0, items.length - 1)], 'item');

/** A flag key as teams name them: `checkout-redesign-17`. */
function flagKey(index: number): string {
  const words = ['checkout', 'search', 'pricing', 'profile', 'billing', 'onboarding', 'cart'];
  const what = ['redesign', 'v2', 'beta', 'rollout', 'experiment', 'kill-switch', 'banner'];
  return `${words[index % words.length]}-${what[Math.floor(index / words.length) % what.length]}-${index}`;
}

/** The constant an alias file gives a key: `CHECKOUT_REDESIGN_17`. */
const constantName = (key: string) => key.toUpperCase().replaceAll('-', '_');

/**
 * One source file of about 40 lines: ordinary code, and for a reading file one to three reads
 * of flags (a call, a JSX attribute, a property, or an alias imported from `src/flags.ts`).
 */
function sourceFile(
  rng: RandomGenerator,
  extension: string,
  index: number,
  keys: readonly string[],
  aliased: readonly string[],
): string {
  const reads = uniformInt(rng, 1, 100) <= READING_SHARE ? uniformInt(rng, 1, 3) : 0;
  const chosen = Array.from({ length: reads }, () => pick(rng, keys));
  const filler = (n: number, comment: string, line: (i: number) => string) =>
    Array.from({ length: n }, (_, i) =>
      i % 7 === 0 ? `${comment} step ${i} of ${index}` : line(i),
    );
  if (extension === '.py')
    return [
      'from app.flags import client',
      '',
      `def handler_${index}(user):`,
      ...filler(30, '    #', (i) => `    total_${i} = user.get("count_${i}", 0) + ${i}`),
      ...chosen.map(
        (key) => `    if client.get_boolean_value("${key}", False):\n        total_0 += 1`,
      ),
      '    return total_0',
      '',
    ].join('\n');
  if (extension === '.go')
    return [
      'package handlers',
      '',
      `func Handler${index}(client Client, user User) int {`,
      '\ttotal := 0',
      ...filler(30, '\t//', (i) => `\ttotal += user.Count(${i}) * ${i}`),
      ...chosen.map((key) => `\tif client.BooleanValue(ctx, "${key}", false) {\n\t\ttotal++\n\t}`),
      '\treturn total',
      '}',
      '',
    ].join('\n');
  const tsx = extension === '.tsx';
  const imports = chosen.filter((key) => aliased.includes(key)).map(constantName);
  const lines = [
    tsx ? "import { useBooleanFlagValue } from '@openfeature/react-sdk';" : '',
    "import { client } from './client';",
    imports.length > 0 ? `import { ${[...new Set(imports)].join(', ')} } from './flags';` : '',
    '',
    // JavaScript without type annotations: every generated file parses.
    `export async function handler${index}(user${extension === '.js' ? '' : ': { id: string; count: number }'}) {`,
    '  let total = 0;',
    ...filler(28, '  //', (i) => `  total += user.count * ${i} + ${index % (i + 1)};`),
  ];
  for (const key of chosen) {
    const alias = aliased.includes(key) ? constantName(key) : `'${key}'`;
    const kind = uniformInt(rng, 0, 2);
    if (kind === 0) lines.push(`  if (await client.getBooleanValue(${alias}, false)) total += 1;`);
    else if (kind === 1) lines.push(`  const options${lines.length} = { flag: ${alias}, total };`);
    else lines.push(`  total += (await client.getNumberValue(${alias}, 0)) * 2;`);
  }
  lines.push('  return total;', '}', '');
  if (tsx) {
    const key = chosen[0];
    lines.push(
      `export function Panel${index}() {`,
      key ? `  const on = useBooleanFlagValue('${key}', false);` : '  const on = false;',
      `  return <section data-flag=${key ? `"${key}"` : '"none"'}>{on ? 'new' : 'old'}</section>;`,
      '}',
      '',
    );
  }
  return lines.join('\n');
}

/**
 * Writes the repository into `dir` (files in folders of 100, a `src/flags.ts` of constants for a
 * tenth of the keys), commits it on `main`, and writes the keys, one a line, to `keys.txt` beside it.
 * @returns the keys file, the bytes of source written, and the seconds spent writing and in git
 */
async function generateRepository(
  dir: string,
): Promise<{ keysFile: string; bytes: number; generateSeconds: number; gitSeconds: number }> {
  const started = performance.now();
  const rng = xoroshiro128plus(SEED);
  const keys = Array.from({ length: FLAG_KEYS }, (_, i) => flagKey(i));
  const aliased = keys.filter((_, i) => i % 10 === 0);
  const shares = LANGUAGES.flatMap((language) =>
    Array<string>(language.share).fill(language.extension),
  );
  let bytes = 0;
  const write = async (path: string, text: string) => {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
    bytes += Buffer.byteLength(text);
  };
  await write(
    'src/flags.ts',
    aliased.map((key) => `export const ${constantName(key)} = '${key}';`).join('\n') + '\n',
  );
  await write('.gitignore', 'node_modules/\n');
  for (let index = 0; index < SOURCE_FILES - 1; index += 1) {
    const extension = pick(rng, shares);
    const folder = `src/module-${String(Math.floor(index / 100)).padStart(3, '0')}`;
    await write(
      `${folder}/file-${index}${extension}`,
      sourceFile(rng, extension, index, keys, aliased),
    );
  }
  const keysFile = `${dir}.keys.txt`;
  await writeFile(keysFile, `${keys.join('\n')}\n`);
  const generated = performance.now();
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'generated');
  return {
    keysFile,
    bytes,
    generateSeconds: (generated - started) / 1_000,
    gitSeconds: (performance.now() - generated) / 1_000,
  };
}

/**
 * Generates the repository under `scratchDir` and times `vexil code-refs scan` on it, {@link
 * ROUNDS} times (the first pays for a cold page cache, which the generation just warmed anyway).
 * @throws Error when a scan fails
 */
export async function measureCodeRefsScan(
  scratchDir: string,
  progress: (message: string) => void,
): Promise<CodeRefsScanMeasurement> {
  const loadAtStart = required(loadavg()[0], 'load average');
  const dir = join(scratchDir, 'code-refs-repository');
  progress(`generating ${SOURCE_FILES} source files reading ${FLAG_KEYS} flag keys, under git`);
  const generated = await generateRepository(dir);
  const roundsSeconds: number[] = [];
  let scan: { references: { key: string }[]; unparsed: string[] } | undefined;
  for (let round = 0; round < ROUNDS; round += 1) {
    const started = performance.now();
    const result = spawnSync(
      process.execPath,
      [
        CLI,
        'code-refs',
        'scan',
        '--dir',
        dir,
        '--keys-file',
        generated.keysFile,
        '--repository',
        'bench/generated',
        '--format',
        'json',
      ],
      { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024 },
    );
    roundsSeconds.push((performance.now() - started) / 1_000);
    if (result.status !== 0) throw new Error(`vexil code-refs scan failed: ${result.stderr}`);
    scan = JSON.parse(result.stdout) as typeof scan;
    progress(
      `scan ${round + 1} of ${ROUNDS}: ${required(roundsSeconds.at(-1), 'round').toFixed(1)} s`,
    );
  }
  const references = scan?.references ?? [];
  return {
    files: SOURCE_FILES,
    keys: FLAG_KEYS,
    bytes: generated.bytes,
    generateSeconds: generated.generateSeconds,
    gitSeconds: generated.gitSeconds,
    roundsSeconds,
    medianSeconds: median(roundsSeconds),
    references: references.length,
    referencedKeys: new Set(references.map((reference) => reference.key)).size,
    unparsed: scan?.unparsed.length ?? 0,
    loadAverage: { start: loadAtStart, end: required(loadavg()[0], 'load average') },
  };
}

/** The section of docs/benchmarks.md. */
export function renderCodeRefsReport(
  figures: CodeRefsScanMeasurement,
  commit: string,
  date: Date,
): string {
  const met = figures.medianSeconds < TARGET_SECONDS;
  return [
    '## Code-reference scan (`npm run bench:code-refs`, issue 46)',
    '',
    `Commit ${commit}, ${date.toISOString()}; one-minute load average ${figures.loadAverage.start.toFixed(2)} ` +
      `before and ${figures.loadAverage.end.toFixed(2)} after (a shared machine: with other work on ` +
      'the two cores the figures are slower than on an idle one).',
    '',
    `A generated repository under git: ${figures.files.toLocaleString('en')} source files ` +
      `(${(figures.bytes / 1024 / 1024).toFixed(1)} MiB; TypeScript 45 %, TSX 25 %, JavaScript, ` +
      `Python and Go 10 % each; 30 % of the files read one to three flags, through calls, JSX, ` +
      'object properties and constants imported from one `src/flags.ts`) and ' +
      `${figures.keys.toLocaleString('en')} flag keys in a keys file. Timed: ` +
      '`vexil code-refs scan --keys-file … --format json` as a fresh process, as a CI job runs it ' +
      `(start-up, \`git ls-files\`, reading, the automaton, parsing, JSON out), ${figures.roundsSeconds.length} ` +
      'times one after the other. Writing the files took ' +
      `${figures.generateSeconds.toFixed(1)} s and \`git add\` + \`git commit\` ${figures.gitSeconds.toFixed(1)} s (not counted).`,
    '',
    '| Files | Keys | References found | Keys read | Not parsed | Scan, median | Rounds | Target |',
    '| ----- | ---- | ---------------- | --------- | ---------- | ------------ | ------ | ------ |',
    `| ${figures.files.toLocaleString('en')} | ${figures.keys.toLocaleString('en')} | ` +
      `${figures.references.toLocaleString('en')} | ${figures.referencedKeys} | ${figures.unparsed} | ` +
      `${figures.medianSeconds.toFixed(1)} s | ${figures.roundsSeconds.map((s) => `${s.toFixed(1)} s`).join(', ')} | ` +
      `${met ? 'met' : '**missed**'} (< ${TARGET_SECONDS} s) |`,
  ].join('\n');
}
