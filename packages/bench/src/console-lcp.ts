/**
 * `npm run bench:console`: Largest Contentful Paint of the console's flag list with 500 flags
 * (issue 32, design record 038), in Debian's Chromium driven by Playwright, read from the
 * browser's own `largest-contentful-paint` performance entries.
 *
 * One `vexil serve` on SQLite, seeded as the evaluation benchmark seeds it (500 flags with rules
 * and segments). Each run opens the list in a fresh browser context (an empty cache, as a first
 * visit), signed in with the Owner's token, and waits until the first page of flags is shown;
 * the last LCP entry by then is the figure. Writes the median and the slowest run into
 * docs/benchmarks.md (its own section, kept by `npm run bench`) and prints them.
 *
 * `-- --baseline DIR` compares this build with another one instead (DIR holds its
 * `packages/server/dist` and `packages/console/dist`, e.g. a copy of them built before a change):
 * a node of each, each on its own database, the loads alternating between them in one run (which
 * goes first alternates too), so both meet the same load on a shared machine (design record 016).
 * It prints both medians and the median of the per-pair ratios, and writes no report.
 * `--runs N` sets the loads per build (default 9).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type Browser } from '@playwright/test';
import { sqliteDatabase } from './databases.js';
import { withCleanup } from './processes.js';
import { FLAG_COUNT, ORG, PROJECT, seedConfiguration } from './seed.js';
import { writeReport } from './report-file.js';
import { bootstrap, CLI, startNode, type Node } from './service.js';

const CHROMIUM = process.env.VEXIL_CHROMIUM ?? '/usr/bin/chromium';

/** A seeded node to load the flag list from, and the Owner's token for it. */
interface Target {
  node: Node;
  token: string;
}

/**
 * Runs `body` with a node of the build whose CLI is `cli`, on a SQLite database of its own in
 * `scratch`, seeded with {@link FLAG_COUNT} flags; stops the node afterwards.
 */
async function withSeededNode<T>(
  scratch: string,
  purpose: string,
  cli: string,
  body: (target: Target) => Promise<T>,
): Promise<T> {
  const database = sqliteDatabase(scratch, purpose);
  const token = await bootstrap(database, cli);
  const node = await startNode(database, { cli });
  return withCleanup(
    () => node.service.stop(),
    async () => {
      await seedConfiguration(node.baseUrl, token);
      return body({ node, token });
    },
  );
}

/**
 * Opens the flag list of `target` once in a fresh browser context, signed in with its token,
 * until the first page of flags is shown.
 *
 * @returns the Largest Contentful Paint in ms from navigation
 */
async function loadFlagList(browser: Browser, target: Target): Promise<number> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    // Signed in as a pasted token is (the bench has no DOM types: scripts as text).
    await context.addInitScript({
      content: `localStorage.setItem('vexil.token', ${JSON.stringify(target.token)})`,
    });
    const page = await context.newPage();
    await page.goto(`${target.node.baseUrl}/orgs/${ORG}/projects/${PROJECT}/flags`);
    await page.getByRole('row').nth(50).waitFor();
    return await page.evaluate<number>(`new Promise((resolve) => {
      new PerformanceObserver((list) => {
        const entries = list.getEntries();
        resolve(entries[entries.length - 1]?.startTime ?? NaN);
      }).observe({ type: 'largest-contentful-paint', buffered: true });
    })`);
  } finally {
    await context.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

const ms = (values: number[]) => values.map((v) => v.toFixed(0)).join(', ');

/** This build alone: the figures of the benchmark report. */
async function measure(browser: Browser, target: Target, runs: number): Promise<void> {
  const loadBefore = loadavg()[0] ?? 0;
  const paints: number[] = [];
  for (let run = 0; run < runs; run++) paints.push(await loadFlagList(browser, target));
  const slowest = Math.max(...paints);
  const section = [
    '## Console: the flag list’s Largest Contentful Paint',
    '',
    `Run on ${new Date().toISOString()} by \`npm run bench:console\` (packages/bench/src/console-lcp.ts); one-minute load average ${loadBefore.toFixed(1)} before the run and ${loadavg()[0]?.toFixed(1)} after it.`,
    '',
    `The flag list of a project with ${FLAG_COUNT} flags (seeded as above), opened ${runs} times in Chromium ${browser.version()} at 1280×800, each time in a fresh browser context (empty cache), signed in with a token, until the first page of 50 flags is shown. Largest Contentful Paint from the browser's \`largest-contentful-paint\` performance entries. Target (issue 32): under 1 s.`,
    '',
    `| Median | Slowest | Every run (ms) |`,
    `| ------ | ------- | -------------- |`,
    `| ${median(paints).toFixed(0)} ms | ${slowest.toFixed(0)} ms | ${ms(paints)} |`,
    '',
  ].join('\n');
  await writeReport({ console: section });
  console.log(section);
}

/** This build against `baseline`, load for load; printed only. */
async function compare(
  browser: Browser,
  current: Target,
  baseline: Target,
  runs: number,
): Promise<void> {
  const loadBefore = loadavg()[0] ?? 0;
  const paints = { current: [] as number[], baseline: [] as number[] };
  for (let run = 0; run < runs; run++) {
    const order =
      run % 2 === 0 ? (['current', 'baseline'] as const) : (['baseline', 'current'] as const);
    for (const arm of order)
      paints[arm].push(await loadFlagList(browser, arm === 'current' ? current : baseline));
  }
  const ratios = paints.current.map((paint, run) => paint / (paints.baseline[run] ?? Number.NaN));
  console.log(
    [
      `Flag list LCP, ${runs} pairs, load average ${loadBefore.toFixed(1)} before and ${loadavg()[0]?.toFixed(1)} after:`,
      `  this build: median ${median(paints.current).toFixed(0)} ms (${ms(paints.current)})`,
      `  baseline:   median ${median(paints.baseline).toFixed(0)} ms (${ms(paints.baseline)})`,
      `  this build / baseline per pair: median ${median(ratios).toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(', ')})`,
    ].join('\n'),
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { baseline: { type: 'string' }, runs: { type: 'string', default: '9' } },
  });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: not a positive integer`);
  const scratch = await mkdtemp(join(tmpdir(), 'vexil-bench-console-'));
  await withCleanup(
    () => rm(scratch, { recursive: true, force: true }),
    () =>
      withSeededNode(scratch, 'console', CLI, async (current) => {
        const browser = await chromium.launch({ executablePath: CHROMIUM });
        await withCleanup(
          () => browser.close(),
          () =>
            values.baseline === undefined
              ? measure(browser, current, runs)
              : withSeededNode(
                  scratch,
                  'console-baseline',
                  join(resolve(values.baseline), 'packages/server/dist/cli.js'),
                  (baseline) => compare(browser, current, baseline, runs),
                ),
        );
      }),
  );
}

await main();
