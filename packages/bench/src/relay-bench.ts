/**
 * `npm run bench:relay`: issue 36's relay measurements alone (relay.ts), written to their
 * section of docs/benchmarks.md and printed. Progress, with the load average, goes to stderr.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withCleanup } from './processes.js';
import { measureRelay } from './relay.js';
import { renderRelayReport } from './relay-report.js';
import { gitCommit, REPORT_FILE, writeReport } from './report-file.js';

const started = performance.now();
const progress = (message: string) =>
  console.error(`[bench:relay ${((performance.now() - started) / 1_000).toFixed(0)} s] ${message}`);

async function main(): Promise<void> {
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-relay-'));
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      const measured = await measureRelay(scratchDir, progress);
      const section = renderRelayReport(measured, gitCommit(), new Date());
      await writeReport({ relay: section });
      progress(`wrote the relay section of ${REPORT_FILE}`);
      console.log(section);
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
