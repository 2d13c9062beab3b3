/**
 * `npm run bench:relay`: issue 36's relay measurements alone (relay.ts), written to their
 * section of docs/benchmarks.md and printed. Progress, with the load average, goes to stderr.
 * `VEXIL_BENCH_PARTS=fanout` (comma-separated, of throughput, fanout, memory) measures only
 * those parts and prints them as JSON, leaving the report file alone.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withCleanup } from './processes.js';
import { measureRelay, measureRelayParts, RELAY_PARTS, type RelayPart } from './relay.js';
import { renderRelayReport } from './relay-report.js';
import { gitCommit, REPORT_FILE, writeReport } from './report-file.js';

const started = performance.now();
const progress = (message: string) =>
  console.error(`[bench:relay ${((performance.now() - started) / 1_000).toFixed(0)} s] ${message}`);

/** The parts named in `VEXIL_BENCH_PARTS`; undefined (every part) when it is not set. */
function selectedParts(): Set<RelayPart> | undefined {
  const names = process.env.VEXIL_BENCH_PARTS?.split(',').map((name) => name.trim());
  if (!names) return undefined;
  const unknown = names.filter((name) => !(RELAY_PARTS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new Error(
      `VEXIL_BENCH_PARTS: unknown ${unknown.join(', ')}; parts: ${RELAY_PARTS.join(', ')}`,
    );
  return new Set(names as RelayPart[]);
}

async function main(): Promise<void> {
  const parts = selectedParts();
  const scratchDir = await mkdtemp(join(tmpdir(), 'vexil-bench-relay-'));
  await withCleanup(
    () => rm(scratchDir, { recursive: true, force: true }),
    async () => {
      if (parts) {
        console.log(JSON.stringify(await measureRelayParts(scratchDir, parts, progress), null, 2));
        return;
      }
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
