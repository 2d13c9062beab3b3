/**
 * `npm run bench:cleanup`: how long `vexil cleanup` takes on the sample application of the
 * code-reference tests (flag-cleanup contract, section 3; issue 46), per file rewritten. The
 * sample alone (a handful of files) and the sample copied 200 times into one repository, so that
 * the per-file figure is not only the fixed cost; and the command end to end, process start
 * included. Figures go in docs/benchmarks.md.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupDirectory } from '@vexil/server/dist/code-refs/cleanup/cleanup.js';
import { median } from './statistics.js';
import { git } from './git.js';

const SAMPLE = fileURLToPath(new URL('../../server/fixtures/code-refs-sample', import.meta.url));
const CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));
const RUNS = 7;

/** The sample, `copies` times over (`src/`, `copy1/src/` …), committed in a fresh repository. */
function repository(copies: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-cleanup-bench-'));
  cpSync(SAMPLE, dir, { recursive: true });
  for (let copy = 1; copy < copies; copy += 1)
    cpSync(join(SAMPLE, 'src'), join(dir, `copy${copy}`, 'src'), { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'sample');
  return dir;
}

async function measure(copies: number): Promise<void> {
  const dir = repository(copies);
  try {
    const times: number[] = [];
    let rewritten = 0;
    let files = 0;
    for (let run = 0; run < RUNS; run += 1) {
      const result = await cleanupDirectory(dir, [{ key: 'new-checkout', value: true }]);
      times.push(result.elapsedMs);
      rewritten = result.changed.length;
      files = result.files;
    }
    const total = median(times);
    console.log(
      `sample x${copies}: ${files} files listed, ${rewritten} rewritten; median ${total.toFixed(1)} ms ` +
        `(${(total / rewritten).toFixed(2)} ms per file rewritten) over ${RUNS} runs`,
    );
    if (copies === 1) {
      const wall: number[] = [];
      for (let run = 0; run < 3; run += 1) {
        const started = performance.now();
        spawnSync(process.execPath, [
          CLI,
          'cleanup',
          '--flag',
          'new-checkout',
          '--value',
          'true',
          '--dir',
          dir,
        ]);
        wall.push(performance.now() - started);
      }
      console.log(
        `  the command end to end (node start included): median ${median(wall).toFixed(0)} ms`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await measure(1);
await measure(200);
