// Packs the publishable SDK packages (@vexil/engine, @vexil/node, @vexil/openfeature-provider)
// into npm tarballs from their built `dist` folders, exactly as `npm publish` would upload them.
// `npm run release` calls it; the install test in packages/sdk-node installs what it writes.
//
//   node scripts/pack-sdks.mjs <dir>   # after npm run build; prints the tarball paths
import { execFileSync } from 'node:child_process';
import console from 'node:console';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The publishable packages, dependencies first (the order `npm publish` must follow). */
export const SDK_PACKAGES = [
  'packages/engine',
  'packages/sdk-node',
  'packages/openfeature-provider',
];

/**
 * npm's own variables from an enclosing `npm run` (or test runner started by one) would point a
 * nested npm at the repository's configuration; the cache and node-gyp's headers may stay.
 * @param {NodeJS.ProcessEnv} env
 * @returns {NodeJS.ProcessEnv}
 */
export function npmEnvironment(env = process.env) {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([name]) =>
        !name.startsWith('npm_') || name === 'npm_config_nodedir' || name === 'npm_config_cache',
    ),
  );
}

/**
 * Writes one tarball per SDK package into `directory`.
 * @param {string} directory where the tarballs go (created if missing)
 * @returns {string[]} the tarballs' absolute paths, in {@link SDK_PACKAGES} order
 */
export function packSdks(directory) {
  for (const path of SDK_PACKAGES) {
    if (!existsSync(join(root, path, 'dist', 'index.js'))) {
      throw new Error(`${path}/dist is missing; run npm run build first`);
    }
  }
  const target = resolve(directory);
  mkdirSync(target, { recursive: true });
  const output = execFileSync(
    'npm',
    [
      'pack',
      '--json',
      '--pack-destination',
      target,
      ...SDK_PACKAGES.flatMap((path) => ['-w', path]),
    ],
    { cwd: root, env: npmEnvironment(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  /** @type {{ filename: string }[]} */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- npm pack --json; this file has no types
  const packed = JSON.parse(output);
  return packed.map(({ filename }) => join(target, filename));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const directory = process.argv[2];
  if (!directory) {
    console.error('usage: node scripts/pack-sdks.mjs <dir>');
    process.exit(2);
  }
  for (const tarball of packSdks(directory)) console.log(tarball);
}
