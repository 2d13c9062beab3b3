// `npm start`'s console step: builds the web console (packages/console) only when one of its
// inputs is newer than its build, so that a start with nothing changed serves within seconds.
import { execFileSync } from 'node:child_process';
import console from 'node:console';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const output = join(root, 'packages/console/dist/index.html');
// Everything the console's build reads: its sources and settings, the API description its
// types come from, and the evaluation engine it bundles.
const inputs = /** @type {string[]} */ ([
  'packages/console/src',
  'packages/console/index.html',
  'packages/console/vite.config.ts',
  'packages/console/tsconfig.json',
  'packages/console/package.json',
  'packages/console/scripts',
  'packages/engine/src',
  'openapi.json',
]).map((path) => join(root, path));

/**
 * The newest modification time under `path` (ms); 0 when it does not exist.
 * @param {string} path
 * @returns {number}
 */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newest(join(path, entry))));
}

const built = existsSync(output) ? statSync(output).mtimeMs : 0;
if (Math.max(...inputs.map(newest)) > built) {
  execFileSync('npm', ['run', 'build', '-w', 'packages/console'], { cwd: root, stdio: 'inherit' });
} else {
  console.log('console: up to date (packages/console/dist)');
}
