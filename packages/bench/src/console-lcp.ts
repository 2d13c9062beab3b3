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
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from '@playwright/test';
import { sqliteDatabase } from './databases.js';
import { withCleanup } from './processes.js';
import { FLAG_COUNT, ORG, PROJECT, seedConfiguration } from './seed.js';
import { writeReport } from './report-file.js';
import { bootstrap, startNode } from './service.js';

const RUNS = 9;
const CHROMIUM = process.env.VEXIL_CHROMIUM ?? '/usr/bin/chromium';

async function main(): Promise<void> {
  const loadBefore = loadavg()[0] ?? 0;
  const scratch = await mkdtemp(join(tmpdir(), 'vexil-bench-console-'));
  await withCleanup(
    () => rm(scratch, { recursive: true, force: true }),
    async () => {
      const database = sqliteDatabase(scratch, 'console');
      const token = await bootstrap(database);
      const node = await startNode(database);
      await withCleanup(
        () => node.service.stop(),
        async () => {
          await seedConfiguration(node.baseUrl, token);
          const browser = await chromium.launch({ executablePath: CHROMIUM });
          await withCleanup(
            () => browser.close(),
            async () => {
              const paints: number[] = [];
              for (let run = 0; run < RUNS; run++) {
                const context = await browser.newContext({
                  viewport: { width: 1280, height: 800 },
                });
                // Signed in as a pasted token is (the bench has no DOM types: scripts as text).
                await context.addInitScript({
                  content: `localStorage.setItem('vexil.token', ${JSON.stringify(token)})`,
                });
                const page = await context.newPage();
                await page.goto(`${node.baseUrl}/orgs/${ORG}/projects/${PROJECT}/flags`);
                await page.getByRole('row').nth(50).waitFor();
                const lcp = await page.evaluate<number>(`new Promise((resolve) => {
                  new PerformanceObserver((list) => {
                    const entries = list.getEntries();
                    resolve(entries[entries.length - 1]?.startTime ?? NaN);
                  }).observe({ type: 'largest-contentful-paint', buffered: true });
                })`);
                paints.push(lcp);
                await context.close();
              }
              const sorted = [...paints].sort((a, b) => a - b);
              const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
              const slowest = sorted[sorted.length - 1] ?? Number.NaN;
              const section = [
                '## Console: the flag list’s Largest Contentful Paint',
                '',
                `Run on ${new Date().toISOString()} by \`npm run bench:console\` (packages/bench/src/console-lcp.ts); one-minute load average ${loadBefore.toFixed(1)} before the run and ${loadavg()[0]?.toFixed(1)} after it.`,
                '',
                `The flag list of a project with ${FLAG_COUNT} flags (seeded as above), opened ${RUNS} times in Chromium ${browser.version()} at 1280×800, each time in a fresh browser context (empty cache), signed in with a token, until the first page of 50 flags is shown. Largest Contentful Paint from the browser's \`largest-contentful-paint\` performance entries. Target (issue 32): under 1 s.`,
                '',
                `| Median | Slowest | Every run (ms) |`,
                `| ------ | ------- | -------------- |`,
                `| ${median.toFixed(0)} ms | ${slowest.toFixed(0)} ms | ${paints.map((p) => p.toFixed(0)).join(', ')} |`,
                '',
              ].join('\n');
              await writeReport({ console: section });
              console.log(section);
            },
          );
        },
      );
    },
  );
}

await main();
