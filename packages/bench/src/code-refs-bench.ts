/**
 * `npm run bench:code-refs` (issue 46): the code-reference scan of a generated repository of
 * 10,000 source files and 1,000 flag keys (`code-refs-scan.ts`), alone. Writes its section of
 * docs/benchmarks.md and prints the figures as JSON; progress, with the load average, goes to
 * stderr.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureCodeRefsScan, renderCodeRefsReport } from './code-refs-scan.js';
import { withCleanup } from './processes.js';
import { gitCommit, REPORT_FILE, writeReport } from './report-file.js';
import { required } from './required.js';

const started = performance.now();
const progress = (message: string) =>
  console.error(
    `[bench:code-refs ${((performance.now() - started) / 1_000).toFixed(0)} s, load ${required(loadavg()[0], 'load').toFixed(2)}] ${message}`,
  );

async function main(): Promise<void> {
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-code-refs-'));
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const figures = await measureCodeRefsScan(scratchDir, progress);
      await writeReport({ codeRefs: renderCodeRefsReport(figures, gitCommit(), new Date()) });
      progress(`wrote the code-reference scan section of ${REPORT_FILE}`);
      console.log(JSON.stringify(figures, null, 2));
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
