// Runs the console's browser tests, then the vitest suite, always both: a browser failure must
// not hide the vitest result (CI counts both reports). Exits non-zero if either failed. The
// arguments go to vitest, e.g. CI's `npm test -- --reporter=json --outputFile=test-results.json`.
//
//   node scripts/test-all.mjs [vitest arguments]   # `npm test` runs it after build and lint
import { spawnSync } from 'node:child_process';
import console from 'node:console';
import process from 'node:process';

/**
 * Runs `command` with this process's terminal; true when it exited with status 0.
 * @param {string} command
 * @param {string[]} args
 */
function succeeds(command, args) {
  const run = spawnSync(command, args, { stdio: 'inherit' });
  if (run.error) console.error(`${command}: ${run.error.message}`);
  return run.status === 0;
}

const browser = succeeds('npm', ['run', 'test:browser']);
const unit = succeeds('npx', ['vitest', 'run', ...process.argv.slice(2)]);
if (!browser) console.error('test-all: the browser tests failed');
if (!unit) console.error('test-all: the vitest suite failed');
process.exit(browser && unit ? 0 : 1);
