// Assembles a production install directory from the built packages (design record 028): the
// server, the engine it imports and the web console's static files, with a manifest and a lock
// that name only what runs in production. `npm ci --omit=dev && npm start` in that directory runs
// the service; nothing there needs a development dependency. Beside it, `sdk/` holds the npm
// tarballs of the SDK packages (scripts/pack-sdks.mjs), installable with `npm install <tarball>`.
//
//   npm run release                 # builds, then writes ./release
//   node scripts/release.mjs <dir>  # from packages already built (npm run build)
import { execFileSync } from 'node:child_process';
import console from 'node:console';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';
import { npmEnvironment, packSdks } from './pack-sdks.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const target = resolve(process.argv[2] ?? 'release');

/** What goes into the directory, relative to the repository and to the directory alike. */
const CONTENTS = [
  'packages/engine/package.json',
  'packages/engine/dist',
  'packages/server/package.json',
  'packages/server/bin',
  'packages/server/dist',
  // Static files only: the console's packages are bundled into them at build time.
  'packages/console/dist',
];

for (const built of [
  'packages/engine/dist',
  'packages/server/dist/cli.js',
  'packages/console/dist/index.html',
]) {
  if (!existsSync(join(root, built))) {
    console.error(`release: ${built} is missing; run npm run build first`);
    process.exit(1);
  }
}
if (existsSync(target) && readdirSync(target).length > 0) {
  console.error(`release: ${target} is not empty; remove it or name another directory`);
  process.exit(1);
}

mkdirSync(target, { recursive: true });
for (const path of CONTENTS) cpSync(join(root, path), join(target, path), { recursive: true });

/** @param {string} path @returns {Record<string, unknown>} a package manifest */
const readManifest = (path) =>
  // eslint-disable-next-line @typescript-eslint/no-unsafe-return -- a JSON manifest; this file has no types
  JSON.parse(readFileSync(join(root, path), 'utf8'));
const workspace = readManifest('package.json');
const server = readManifest('packages/server/package.json');
const manifest = {
  name: 'vexil-release',
  version: server['version'],
  private: true,
  type: 'module',
  workspaces: ['packages/engine', 'packages/server'],
  engines: workspace['engines'],
  scripts: { start: 'node packages/server/bin/vexil.js serve' },
  allowScripts: workspace['allowScripts'],
};
writeFileSync(join(target, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

// The repository's lock, trimmed to this manifest: the same versions as every test ran with.
cpSync(join(root, 'package-lock.json'), join(target, 'package-lock.json'));
execFileSync(
  'npm',
  ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'],
  {
    cwd: target,
    env: npmEnvironment(),
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);

const tarballs = packSdks(join(target, 'sdk'));

console.log(`release: wrote ${target}; there run: npm ci --omit=dev && npm start`);
console.log(`release: SDK packages for npm install or npm publish:\n  ${tarballs.join('\n  ')}`);
