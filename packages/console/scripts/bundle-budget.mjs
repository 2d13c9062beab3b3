// Prints the gzipped size of the JavaScript a first visit downloads (the entry script and the
// modules it preloads) and fails the build above the budget (console.md: Qualities).
import console from 'node:console';
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';
import { gzipSync } from 'node:zlib';

const BUDGET_BYTES = 300 * 1024;
const dist = new URL('../dist/', import.meta.url);
const html = readFileSync(new URL('index.html', dist), 'utf8');
const scripts = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]);
const total = scripts.reduce(
  (sum, file) => sum + gzipSync(readFileSync(new URL(file, dist))).length,
  0,
);
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
console.log(`console: initial JavaScript ${kb(total)} gzipped (budget ${kb(BUDGET_BYTES)})`);
if (total > BUDGET_BYTES) {
  console.error('console: initial JavaScript is over budget');
  process.exit(1);
}
