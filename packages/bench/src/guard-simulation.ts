/**
 * `npm run bench:guard`: the statistical behaviour of release-plan guards (design record 046),
 * simulated with a seeded generator and the service's own test (`regressionTest`), so the
 * figures are those of the code that decides. Users arrive one at a time, half on each side
 * (a plan at 50%); each sends the metric with its side's true rate; the guard looks after every
 * {@link LOOK_EVERY} users per side once both sides have `minimumUsers`, as the service does
 * every few seconds, and stops at the first look where Λ reaches 1/(1 − confidence).
 * Writes its section into docs/benchmarks.md and docs/release-plans.md. Pure and quick.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';
import { MIXING_SD, regressionTest } from '@vexil/server/dist/statistics/sequential-test.js';
import { gitCommit, writeReport } from './report-file.js';
import { REPO_ROOT } from './service.js';

const SEED = 46;
const RUNS = 1_000;
const CONFIDENCE = 0.95;
const MINIMUM_USERS = 500;
/** Users per side between two looks of the guard. */
const LOOK_EVERY = 50;
/** Users per side after which a run that has not stopped counts as not detected. */
const HORIZON = 200_000;

interface Scenario {
  name: string;
  restRate: number;
  targetRate: number;
}

const SCENARIOS: Scenario[] = [
  { name: 'A/A, 1% on both sides', restRate: 0.01, targetRate: 0.01 },
  { name: 'A/A, 10% on both sides', restRate: 0.1, targetRate: 0.1 },
  { name: 'A/B, 1% → 2%', restRate: 0.01, targetRate: 0.02 },
  { name: 'A/B, 1% → 1.2%', restRate: 0.01, targetRate: 0.012 },
];

/** One run: the users per side at which the guard stopped, or null when it did not. */
function run(rng: RandomGenerator, scenario: Scenario): number | null {
  const target = { users: 0, converted: 0 };
  const rest = { users: 0, converted: 0 };
  while (target.users < HORIZON) {
    for (let i = 0; i < LOOK_EVERY; i++) {
      target.users += 1;
      rest.users += 1;
      if (uniformFloat64(rng) < scenario.targetRate) target.converted += 1;
      if (uniformFloat64(rng) < scenario.restRate) rest.converted += 1;
    }
    if (target.users < MINIMUM_USERS) continue;
    if (regressionTest(target, rest, CONFIDENCE, 'lower_is_better').regression) return target.users;
  }
  return null;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] ?? null)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function percent(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}

async function main(): Promise<void> {
  const started = performance.now();
  const rows: string[] = [];
  for (const scenario of SCENARIOS) {
    const rng = xoroshiro128plus(SEED);
    const stops: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const stoppedAt = run(rng, scenario);
      if (stoppedAt !== null) stops.push(stoppedAt);
    }
    const share = stops.length / RUNS;
    const middle = median(stops);
    const aa = scenario.targetRate === scenario.restRate;
    rows.push(
      `| ${scenario.name} | ${RUNS} | ${percent(share)}${aa ? ` (bound ${percent(1 - CONFIDENCE)})` : ''} | ${middle === null ? '–' : `${middle.toLocaleString('en')} per side (${(2 * middle).toLocaleString('en')} in all)`} |`,
    );
    console.log(rows.at(-1));
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const section = [
    '## Release-plan guards: simulated (`npm run bench:guard`)',
    '',
    `Seeded simulation (seed ${SEED}, ${RUNS} runs per row) of the guard's one-sided mixture SPRT (design record 046; mixing σ = ${MIXING_SD}), calling the service's own \`regressionTest\`. Users split 50/50; the guard looks every ${LOOK_EVERY} users per side once both sides have ${MINIMUM_USERS} (\`minimumUsers\`); confidence ${CONFIDENCE}; a run that has not stopped by ${HORIZON.toLocaleString('en')} users per side counts as not stopped. "Stopped" is a wrong stop in the A/A rows and a detection in the A/B rows. Commit ${gitCommit()}, ${seconds} s.`,
    '',
    '| Scenario | Runs | Stopped | Median users until the stop |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
  await writeReport({ guard: section });
  await writeSection(join(REPO_ROOT, 'docs/release-plans.md'), section);
  console.log(`written in ${seconds} s`);
}

/** Replaces the text between `<!-- bench:guard -->` and `<!-- /bench:guard -->` in `file`. */
async function writeSection(file: string, section: string): Promise<void> {
  const text = await readFile(file, 'utf8');
  const start = '<!-- bench:guard -->';
  const end = '<!-- /bench:guard -->';
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${file} has no ${start} … ${end} section`);
  const replaced = `${text.slice(0, from + start.length)}\n\n${section.replace(/^## /, '#### ')}\n\n${text.slice(to)}`;
  await writeFile(file, await format(replaced, { ...(await resolveConfig(file)), filepath: file }));
}

await main();
