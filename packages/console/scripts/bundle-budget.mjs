// Prints the size of the JavaScript a first visit downloads (the entry script and the modules it
// preloads) as the server sends it to a browser accepting `br, gzip` (the Brotli copies written
// at build time, design record 037), and fails the build above the budget (console.md: Qualities).
import console from 'node:console';
import { statSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const BUDGET_BYTES = 300 * 1024;
const dist = new URL('../dist/', import.meta.url);
const html = readFileSync(new URL('index.html', dist), 'utf8');
const scripts = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]);
const total = scripts.reduce((sum, file) => sum + statSync(new URL(`${file}.br`, dist)).size, 0);
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
console.log(
  `console: initial JavaScript ${kb(total)} as sent, Brotli (budget ${kb(BUDGET_BYTES)})`,
);
if (total > BUDGET_BYTES) {
  console.error('console: initial JavaScript is over budget');
  process.exit(1);
}
