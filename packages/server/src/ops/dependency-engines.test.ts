import { readFile } from 'node:fs/promises';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * The installed tree must run on every Node version the project supports: a dependency whose
 * `engines.node` leaves out one of them makes `npm ci` warn `EBADENGINE` and may break there.
 * The supported versions come from the root `package.json`; the installed tree from
 * `package-lock.json` (what `npm ci` installs).
 */
const root = new URL('../../../../', import.meta.url);

interface LockEntry {
  readonly version?: string;
  readonly link?: boolean;
  readonly optional?: boolean;
  readonly cpu?: readonly string[];
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly engines?: { readonly node?: string } | readonly string[];
}

const manifest = JSON.parse(await readFile(new URL('package.json', root), 'utf8')) as {
  engines: { node: string };
};
const lock = JSON.parse(await readFile(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, LockEntry>;
};

/** The lowest version of each range of the root `engines.node` (`^20.19.0 || >=22.12.0`). */
function lowestSupported(range: string): string[] {
  return new semver.Range(range).set.map((comparators) => {
    const lowest = semver.minVersion(comparators.map((c) => c.value).join(' '));
    if (lowest === null) throw new Error(`engines.node range "${range}" admits no version`);
    return lowest.version;
  });
}

/**
 * Entries npm installs on no machine Node runs on natively: packages built for the `wasm32` cpu
 * (a fallback binding no `process.arch` matches), and optional packages only those depend on.
 */
function wasmOnly(packages: Record<string, LockEntry>): Set<string> {
  const wasm = new Set(
    Object.keys(packages).filter((path) => packages[path]?.cpu?.every((cpu) => cpu === 'wasm32')),
  );
  const name = (path: string) =>
    path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  const dependents = (dependency: string) =>
    Object.entries(packages).filter(([, entry]) =>
      [entry.dependencies, entry.optionalDependencies].some(
        (list) => list?.[dependency] !== undefined,
      ),
    );
  for (const [path, entry] of Object.entries(packages)) {
    if (entry.optional !== true || wasm.has(path)) continue;
    const from = dependents(name(path));
    if (from.length > 0 && from.every(([dependent]) => wasm.has(dependent))) wasm.add(path);
  }
  return wasm;
}

/** Installed packages whose `engines.node` excludes one of `versions`, as `name@version: range`. */
function excluding(packages: Record<string, LockEntry>, versions: readonly string[]): string[] {
  const skipped = wasmOnly(packages);
  return Object.entries(packages).flatMap(([path, entry]) => {
    if (path === '' || entry.link === true || skipped.has(path)) return [];
    // A few old packages write engines as an array of strings, which npm ignores.
    const range =
      entry.engines !== undefined && 'node' in entry.engines ? entry.engines.node : undefined;
    if (range === undefined) return [];
    const left = versions.filter((v) => !semver.satisfies(v, range, { includePrerelease: true }));
    return left.length === 0
      ? []
      : [`${path}@${entry.version ?? '?'}: node ${range} (excludes ${left.join(', ')})`];
  });
}

describe('dependency engines', () => {
  it('reads the lowest supported Node versions from the root engines', () => {
    expect(lowestSupported(manifest.engines.node)).toEqual(['20.19.0', '22.12.0']);
  });

  it('installs no package whose engines.node excludes a supported Node version', () => {
    expect(excluding(lock.packages, lowestSupported(manifest.engines.node))).toEqual([]);
  });

  it('names a package that requires a newer Node, and passes one that admits both', () => {
    const packages: Record<string, LockEntry> = {
      'node_modules/cookie': { version: '2.0.2', engines: { node: '>=22' } },
      'node_modules/a/node_modules/cookie': { version: '1.1.1', engines: { node: '>=18' } },
      'node_modules/old': { version: '0.1.0', engines: ['node >= 0.8'] },
      'node_modules/binding-wasm32': {
        version: '1.0.0',
        cpu: ['wasm32'],
        optional: true,
        dependencies: { 'wasm-runtime': '1.0.0' },
        engines: { node: '>=23.5.0' },
      },
      'node_modules/wasm-runtime': {
        version: '1.0.0',
        optional: true,
        engines: { node: '>=23.5.0' },
      },
    };
    expect(excluding(packages, ['20.19.0', '22.12.0'])).toEqual([
      'node_modules/cookie@2.0.2: node >=22 (excludes 20.19.0)',
    ]);
  });
});
