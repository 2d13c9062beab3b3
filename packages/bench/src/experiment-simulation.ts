/**
 * `npm run bench:experiments`: the statistical behaviour of experiments' results (contract
 * `experiments.md` section 3, design record 063), simulated with a seeded generator and the
 * service's own `compare` and `estimate`, so the figures are those of the code that decides.
 * Users arrive one at a time, one on each side of a 50/50 experiment; the results are read after
 * every {@link LOOK_EVERY} users per side (as a reader refreshing the page would) up to
 * {@link HORIZON}, with a verdict once both sides have `minimumUsers`. The moments are kept
 * incrementally, as the service keeps them. Measures, per scenario of {@link RUNS} runs:
 *
 * - A/A: the share of runs with ANY `better`/`worse` verdict at any look (bound 1 − confidence),
 *   and what a fixed-horizon 95% interval read at every look would have said;
 * - A/B: the share of runs that said `better` by a number of users, and the median users until
 *   the first `better` (wrong-way `worse` verdicts are counted too);
 * - at the end of each run, Welch's fixed-horizon 95% interval of the relative difference (delta
 *   method, Welch–Satterthwaite degrees of freedom) against the always-valid one.
 *
 * Writes its section into docs/benchmarks.md. Pure and quick (under a minute).
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';
import {
  compare,
  estimate,
  RELATIVE_MIXING_SD,
  type Moments,
} from '@vexil/server/dist/statistics/always-valid.js';
import { gitCommit, writeReport } from './report-file.js';
import { median } from './statistics.js';

const SEED = 63;
const RUNS = 1_000;
const CONFIDENCE = 0.95;
const MINIMUM_USERS = 500;
/** Users per side between two reads of the results. */
const LOOK_EVERY = 100;
/** Users per side at which a run ends. */
const HORIZON = 20_000;
/** Users per side at which the A/B rows report the share of runs that said `better`. */
const POWER_AT = [2_500, 5_000, 10_000, 20_000];
const LIFTS = [0.02, 0.05, 0.1, 0.2];
/** z for a two-sided 95% interval. */
const Z_975 = 1.959963984540054;

interface Model {
  name: string;
  /** One user's metric value, for a treatment that lifts the mean by `lift` (relative). */
  draw: (rng: RandomGenerator, lift: number) => number;
}

const CONVERSION_RATE = 0.1;
const BUYER_SHARE = 0.3;
const LOG_MEAN = 3;
const LOG_SD = 1;

const MODELS: Model[] = [
  {
    name: `conversion, ${CONVERSION_RATE * 100}%`,
    draw: (rng, lift) => (uniformFloat64(rng) < CONVERSION_RATE * (1 + lift) ? 1 : 0),
  },
  {
    name: `sum, ${BUYER_SHARE * 100}% buy log-normal(μ ${LOG_MEAN}, σ ${LOG_SD})`,
    draw: (rng, lift) => {
      if (uniformFloat64(rng) >= BUYER_SHARE) return 0;
      // Box–Muller; 1 − u keeps the logarithm's argument in (0, 1].
      const radius = Math.sqrt(-2 * Math.log(1 - uniformFloat64(rng)));
      const normal = radius * Math.cos(2 * Math.PI * uniformFloat64(rng));
      return Math.exp(LOG_MEAN + LOG_SD * normal) * (1 + lift);
    },
  },
];

interface Scenario {
  model: Model;
  lift: number;
}

/** What one run said. */
interface RunOutcome {
  /** A verdict against the truth at any look: any verdict in A/A, `worse` in A/B. */
  wrong: boolean;
  /** Users per side at the first `better`, or null. */
  betterAt: number | null;
  /** Whether a fixed-horizon 95% interval read at every look ever excluded 0. */
  peekingFixedExcluded: boolean;
  /** At the end: the always-valid interval's width over Welch's. */
  widthRatio: number;
  /** At the end: the always-valid interval contains Welch's point estimate, and Welch's interval. */
  containsEstimate: boolean;
  containsInterval: boolean;
  /** At the end: Welch's interval excludes 0 on the good side, on the bad side. */
  welchBetter: boolean;
  welchWorse: boolean;
}

function add(m: Moments, x: number): void {
  m.users += 1;
  m.sumX += x;
  m.sumX2 += x * x;
  m.sumY += 1;
  m.sumY2 += 1;
  m.sumXY += x;
}

const empty = (): Moments => ({ users: 0, sumX: 0, sumX2: 0, sumY: 0, sumY2: 0, sumXY: 0 });

/**
 * The 0.975 quantile of Student's t with `df` degrees of freedom, by the Cornish–Fisher
 * expansion in 1/df (Abramowitz and Stegun 26.7.5); exact to 1e-6 for df ≥ 30, which the runs
 * here exceed by far (df is in the thousands).
 */
function t975(df: number): number {
  const z = Z_975;
  const z3 = z ** 3;
  const z5 = z ** 5;
  const z7 = z ** 7;
  return (
    z +
    (z3 + z) / (4 * df) +
    (5 * z5 + 16 * z3 + 3 * z) / (96 * df ** 2) +
    (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df ** 3)
  );
}

/**
 * Welch's fixed-horizon 95% interval of the relative difference: r̂ ± t·√V with the same
 * delta-method V as the always-valid interval and Welch–Satterthwaite degrees of freedom for its
 * two parts. Null when the control's mean is 0 or V is 0.
 */
function welch(control: Moments, treatment: Moments): [number, number] | null {
  const c = estimate(control);
  const t = estimate(treatment);
  if (c.value === 0) return null;
  const fromTreatment = t.standardError ** 2 / c.value ** 2;
  const fromControl = (t.value ** 2 * c.standardError ** 2) / c.value ** 4;
  const variance = fromTreatment + fromControl;
  if (!(variance > 0)) return null;
  const df =
    variance ** 2 /
    (fromTreatment ** 2 / (treatment.users - 1) + fromControl ** 2 / (control.users - 1));
  const r = t.value / c.value - 1;
  const half = t975(df) * Math.sqrt(variance);
  return [r - half, r + half];
}

function run(rng: RandomGenerator, scenario: Scenario): RunOutcome {
  const control = empty();
  const treatment = empty();
  const options = { confidence: CONFIDENCE, direction: 'higher_is_better' } as const;
  let wrong = false;
  let betterAt: number | null = null;
  let peekingFixedExcluded = false;
  for (let users = LOOK_EVERY; users <= HORIZON; users += LOOK_EVERY) {
    for (let i = 0; i < LOOK_EVERY; i++) {
      add(control, scenario.model.draw(rng, 0));
      add(treatment, scenario.model.draw(rng, scenario.lift));
    }
    const enoughUsers = users >= MINIMUM_USERS;
    const { verdict } = compare(control, treatment, { ...options, enoughUsers });
    if (verdict === 'worse' || (verdict === 'better' && scenario.lift === 0)) wrong = true;
    if (verdict === 'better' && betterAt === null) betterAt = users;
    if (enoughUsers && !peekingFixedExcluded) {
      const fixed = welch(control, treatment);
      if (fixed && (fixed[0] > 0 || fixed[1] < 0)) peekingFixedExcluded = true;
    }
  }
  const end = compare(control, treatment, options);
  const fixed = welch(control, treatment) ?? [0, 0];
  const [low, high] = end.confidenceInterval;
  const estimateOfWelch = (fixed[0] + fixed[1]) / 2;
  return {
    wrong,
    betterAt,
    peekingFixedExcluded,
    widthRatio: (high - low) / (fixed[1] - fixed[0]),
    containsEstimate: low <= estimateOfWelch && estimateOfWelch <= high,
    containsInterval: low <= fixed[0] && fixed[1] <= high,
    welchBetter: fixed[0] > 0,
    welchWorse: fixed[1] < 0,
  };
}

const percent = (share: number): string => `${(share * 100).toFixed(1)}%`;
const users = (n: number): string => n.toLocaleString('en');

async function main(): Promise<void> {
  const started = performance.now();
  const scenarios: Scenario[] = MODELS.flatMap((model) => [
    { model, lift: 0 },
    ...LIFTS.map((lift) => ({ model, lift })),
  ]);
  const aaRows: string[] = [];
  const abRows: string[] = [];
  const welchRows: string[] = [];
  for (const scenario of scenarios) {
    const rng = xoroshiro128plus(SEED);
    const outcomes: RunOutcome[] = [];
    for (let i = 0; i < RUNS; i++) outcomes.push(run(rng, scenario));
    const share = (test: (outcome: RunOutcome) => boolean) => outcomes.filter(test).length / RUNS;
    const label =
      scenario.lift === 0
        ? `A/A, ${scenario.model.name}`
        : `A/B +${scenario.lift * 100}%, ${scenario.model.name}`;
    if (scenario.lift === 0) {
      aaRows.push(
        `| ${scenario.model.name} | ${RUNS} | ${percent(share((o) => o.wrong))} (bound ${percent(1 - CONFIDENCE)}) | ${percent(share((o) => o.peekingFixedExcluded))} | ${percent(share((o) => o.welchBetter || o.welchWorse))} |`,
      );
    } else {
      const detections = outcomes.flatMap((o) => (o.betterAt === null ? [] : [o.betterAt]));
      abRows.push(
        `| +${scenario.lift * 100}% | ${scenario.model.name} | ${POWER_AT.map((n) => percent(share((o) => o.betterAt !== null && o.betterAt <= n))).join(' | ')} | ${percent(share((o) => o.welchBetter))} | ${detections.length ? users(median(detections)) : '–'} | ${percent(share((o) => o.wrong))} |`,
      );
    }
    const ratios = outcomes.map((o) => o.widthRatio);
    welchRows.push(
      `| ${label} | ${percent(share((o) => o.containsEstimate))} | ${percent(share((o) => o.containsInterval))} | ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) |`,
    );
    console.log(`${label}: done`);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const section = [
    '## Experiments: simulated (`npm run bench:experiments`)',
    '',
    `Seeded simulation (seed ${SEED}, ${RUNS} runs per row) of the experiments' always-valid comparison (design record 063; two-sided normal-mixture confidence sequence on the relative difference, mixing σ τ = ${RELATIVE_MIXING_SD}), calling the service's own \`compare\` and \`estimate\`. Users split 50/50; the results are read after every ${LOOK_EVERY} users per side up to ${users(HORIZON)} per side, with verdicts once both sides have ${MINIMUM_USERS} (\`minimumUsers\`); confidence ${CONFIDENCE}, higher is better, one treatment. The moments are kept incrementally, as the service keeps them. Commit ${gitCommit()}, ${seconds} s.`,
    '',
    '### A/A: wrong verdicts at any of the reads',
    '',
    `"Always-valid" is the share of runs with any \`better\` or \`worse\` verdict at any read (the contract's bound: ${percent(1 - CONFIDENCE)}). "Fixed-horizon, read every time" is the share whose Welch 95% interval excluded 0 at some read past ${MINIMUM_USERS} users: what peeking at an ordinary interval costs. "Fixed-horizon, read once" reads it only at ${users(HORIZON)} users.`,
    '',
    '| Metric | Runs | Always-valid | Fixed-horizon, read every time | Fixed-horizon, read once |',
    '|---|---|---|---|---|',
    ...aaRows,
    '',
    '### A/B: power',
    '',
    `Share of runs that said \`better\` by the given users per side (always-valid, read every ${LOOK_EVERY} users), Welch's fixed-horizon test read once at ${users(HORIZON)}, the median users per side until the first \`better\` among the runs that said it, and the share of runs with a wrong-way \`worse\`. The treatment multiplies the conversion rate, or every purchase's value, by 1 + lift.`,
    '',
    `| Lift | Metric | ${POWER_AT.map((n) => `by ${users(n)}`).join(' | ')} | Welch at ${users(HORIZON)} | Median users to \`better\` | Wrong \`worse\` |`,
    `|---|---|${POWER_AT.map(() => '---|').join('')}---|---|---|`,
    ...abRows,
    '',
    `### Against Welch's fixed-horizon interval at ${users(HORIZON)} users`,
    '',
    "Welch's 95% interval of the relative difference (delta-method variance, Welch–Satterthwaite degrees of freedom) against the always-valid interval at the last read: how often the always-valid interval contains Welch's point estimate and Welch's whole interval, and the ratio of their widths (median, range over the runs): the price of reading as often as one likes.",
    '',
    "| Scenario | Contains Welch's estimate | Contains Welch's interval | Width ratio, always-valid / Welch |",
    '|---|---|---|---|',
    ...welchRows,
  ].join('\n');
  await writeReport({ experiments: section });
  console.log(section);
  console.log(`written in ${seconds} s`);
}

await main();
