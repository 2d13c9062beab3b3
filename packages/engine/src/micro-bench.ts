/**
 * Micro-benchmark of the evaluation hot path. Run after building:
 * `node packages/engine/dist/micro-bench.js`. Prints evaluations per second for a flag with three
 * rules of three conditions each (regex and semver included), alone and among 500 such flags, and
 * for evaluateAll over 500 flags: all of them, and a realistic client call (POST
 * /v1/client/evaluate) selecting 50 client-visible flags by predicate, or with evaluateSelected
 * over positions selected once, as the server does.
 */
import {
  compileEnvironment,
  evaluateAll,
  evaluateFlag,
  evaluateSelected,
  selectFlags,
} from './index.js';
import type { EvaluationContext, SdkFlag, SdkRule } from './index.js';

const VARIATIONS = [
  { key: 'control', value: false },
  { key: 'treatment', value: true },
];

function benchRules(): SdkRule[] {
  return [
    {
      id: 'staff',
      priority: 1,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [
            { attribute: 'email', operator: 'MatchesRegex', values: ['@(acme|globex)\\.com$'] },
            { attribute: 'country', operator: 'In', values: ['US', 'CA', 'GB'] },
            { attribute: 'appVersion', operator: 'SemverGreaterThanOrEqual', values: ['2.3.0'] },
          ],
        },
      ],
      serve: { type: 'Fixed', variation: 'treatment' },
    },
    {
      id: 'power-users',
      priority: 2,
      conditionGroups: [
        {
          operator: 'Or',
          conditions: [
            { attribute: 'sessions', operator: 'GreaterThan', values: ['40'] },
            { attribute: 'plan', operator: 'Equals', values: ['enterprise'] },
            { attribute: 'signupDate', operator: 'Before', values: ['2021-01-01T00:00:00Z'] },
          ],
        },
      ],
      serve: { type: 'Rollout', variations: [{ key: 'treatment', weight: 25_000 }] },
    },
    {
      id: 'beta',
      priority: 3,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [
            { attribute: 'appVersion', operator: 'SemverLessThan', values: ['3.0.0'] },
            { attribute: 'email', operator: 'EndsWith', values: ['.io', '.dev'] },
            { attribute: 'country', operator: 'NotIn', values: ['CN', 'RU'], negate: false },
          ],
        },
      ],
      serve: { type: 'Fixed', variation: 'treatment' },
    },
  ];
}

function benchFlag(key: string): SdkFlag {
  return {
    key,
    version: 1,
    type: 'Boolean',
    enabled: true,
    variations: VARIATIONS,
    rules: benchRules(),
    fallthrough: {
      type: 'Rollout',
      variations: [
        { key: 'control', weight: 50_000 },
        { key: 'treatment', weight: 50_000 },
      ],
    },
    offVariation: 'control',
    prerequisites: [],
  };
}

const COUNTRIES = ['US', 'CA', 'GB', 'FR', 'DE', 'CN', 'BR', 'IN'];
const DOMAINS = ['acme.com', 'globex.com', 'example.io', 'mail.dev', 'gmail.com'];
const VERSIONS = ['1.9.0', '2.2.9', '2.3.0', '2.10.1', '3.0.0-beta.2', '3.1.0'];

function contexts(count: number): EvaluationContext[] {
  return Array.from({ length: count }, (_, i) => ({
    userId: `user-${i}`,
    attributes: {
      email: `person${i}@${DOMAINS[i % DOMAINS.length]}`,
      country: COUNTRIES[(i * 7) % COUNTRIES.length],
      appVersion: VERSIONS[(i * 3) % VERSIONS.length],
      sessions: (i * 13) % 60,
      plan: i % 11 === 0 ? 'enterprise' : 'free',
      signupDate: `20${18 + (i % 6)}-0${1 + (i % 9)}-15`,
    },
  }));
}

/** CPU time this process has used, in milliseconds (all threads, so GC helpers count too). */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1_000;
}

/**
 * Runs `body` repeatedly for about `ms` milliseconds of CPU time, after a warm-up so the JIT has
 * optimised it, and returns calls per CPU second. CPU time rather than wall-clock time, so that
 * other processes competing for the cores (a busy CI host, a shared workstation) do not skew the
 * numbers. The clock is read once per `batch` calls.
 */
function measure(ms: number, batch: number, body: (iteration: number) => void): number {
  for (let i = 0; i < batch * 2; i++) body(i);
  let iterations = 0;
  const start = cpuMs();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let i = 0; i < batch; i++) body(iterations++);
    elapsed = cpuMs() - start;
  }
  return (iterations / elapsed) * 1_000;
}

function format(rate: number): string {
  return Math.round(rate).toLocaleString('en-US');
}

const ctxs = contexts(1_000);
const single = compileEnvironment({
  environment: 'bench',
  version: 1,
  flags: [benchFlag('checkout')],
  segments: [],
});
let sink = 0;
const perFlag = measure(1_500, 1_000, (i) => {
  if (evaluateFlag(single, 'checkout', ctxs[i % ctxs.length] ?? {}).value === true) sink++;
});
console.log(`evaluateFlag, 3 rules × 3 conditions: ${format(perFlag)} evaluations/s`);

const flags = Array.from({ length: 500 }, (_, i) => benchFlag(`flag-${i}`));
const compileStart = performance.now();
const large = compileEnvironment({ environment: 'bench', version: 1, flags, segments: [] });
// Flags compile when first evaluated: the first evaluateAll compiles all 500.
evaluateAll(large, {});
console.log(
  `compileEnvironment and compiling 500 flags: ${(performance.now() - compileStart).toFixed(1)} ms`,
);
// Cycling through the flags, as a server does across requests: per-evaluation cost should not
// depend on how many flags the environment holds.
const largeKeys = large.flagKeys;
const perFlagLarge = measure(1_500, 1_000, (i) => {
  const key = largeKeys[(i * 7) % largeKeys.length] ?? '';
  if (evaluateFlag(large, key, ctxs[i % ctxs.length] ?? {}).value === true) sink++;
});
console.log(`evaluateFlag, 500-flag environment: ${format(perFlagLarge)} evaluations/s`);

const perAll = measure(1_500, 10, (i) => {
  sink += Object.keys(evaluateAll(large, ctxs[i % ctxs.length] ?? {})).length;
});
console.log(
  `evaluateAll, 500 flags: ${format(perAll)} calls/s (${format(perAll * 500)} flag evaluations/s)`,
);

// Every tenth flag is client-visible, as a set the server keeps per environment snapshot.
const clientKeys = largeKeys.filter((_, i) => i % 10 === 0);
const clientKeySet = new Set(clientKeys);
const perClient = measure(1_500, 50, (i) => {
  const context = ctxs[i % ctxs.length] ?? {};
  sink += Object.keys(evaluateAll(large, context, (key) => clientKeySet.has(key))).length;
});
console.log(
  `evaluateAll, 500 flags, predicate selecting 50: ${format(perClient)} calls/s (${format(perClient * 50)} flag evaluations/s)`,
);
const clientFlags = selectFlags(large, clientKeys);
const perClientSelected = measure(1_500, 50, (i) => {
  sink += evaluateSelected(large, ctxs[i % ctxs.length] ?? {}, clientFlags).length;
});
console.log(
  `evaluateSelected, 50 of 500 flags: ${format(perClientSelected)} calls/s (${format(perClientSelected * 50)} flag evaluations/s)`,
);
// Keeps the results observable so the work cannot be optimised away.
if (sink === -1) console.log(sink);
