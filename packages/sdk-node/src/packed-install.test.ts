import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from '../../server/src/test-support/harness.js';
import { seedSdkFlags } from '../../server/src/test-support/sdk-flags.js';

const REPOSITORY = fileURLToPath(new URL('../../../', import.meta.url));
const PUBLISHED = ['engine', 'sdk-node', 'openfeature-provider'];

/** A command as a user would run it: without npm's variables from an enclosing `npm test`. */
function run(command: string, args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) =>
        !name.startsWith('npm_') || name === 'npm_config_nodedir' || name === 'npm_config_cache',
    ),
  );
  env['PATH'] = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
  return new Promise<string>((resolve, reject) => {
    execFile(command, args, { cwd, env: { ...env, ...extra } }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${stderr}${stdout}`));
      else resolve(stdout);
    });
  });
}

/** The same evaluations through @vexil/node and through OpenFeature with the Vexil provider. */
const ESM_SCRIPT = `
import { createClient } from '@vexil/node';
import { VexilProvider } from '@vexil/openfeature-provider';
import { OpenFeature } from '@openfeature/server-sdk';

const { VEXIL_URL: baseUrl, VEXIL_SDK_KEY: sdkKey } = process.env;
const vexil = createClient({ baseUrl, sdkKey, pollIntervalMs: 60_000 });
await vexil.waitForReady(10_000);
const node = vexil.boolVariationDetail('new-checkout', { userId: 'u1', attributes: { plan: 'pro' } }, false);
await vexil.close();

await OpenFeature.setProviderAndWait(new VexilProvider({ baseUrl, sdkKey, pollIntervalMs: 60_000 }));
const details = await OpenFeature.getClient().getStringDetails('banner-text', 'x', { targetingKey: 'u2' });
await OpenFeature.close();
console.log(JSON.stringify({ node, openfeature: { value: details.value, variant: details.variant, reason: details.reason } }));
`;

/** CommonJS consumers get the require() build of each package. */
const CJS_SCRIPT = `
const { createClient } = require('@vexil/node');
const { VexilProvider } = require('@vexil/openfeature-provider');
const vexil = createClient({ baseUrl: process.env.VEXIL_URL, sdkKey: process.env.VEXIL_SDK_KEY, pollIntervalMs: 60_000 });
vexil.waitForReady(10_000).then(async () => {
  const value = vexil.boolVariation('new-checkout', { userId: 'u3', attributes: { plan: 'pro' } }, false);
  await vexil.close();
  console.log(JSON.stringify({ value, provider: typeof VexilProvider }));
});
`;

/**
 * Issue 43 item 3: the SDK packages as npm would publish them (`npm pack`), installed into a
 * fresh project outside the repository, evaluate against a real Vexil. Needs `npm run build`.
 */
describe('the SDK packages, packed and installed elsewhere', { timeout: 300_000 }, () => {
  let directory: string;
  let tarballs: string[];
  let vexil: TestVexil;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'vexil-sdk-install-'));
    const packed = await run(
      process.execPath,
      [join(REPOSITORY, 'scripts/pack-sdks.mjs'), join(directory, 'tarballs')],
      REPOSITORY,
    );
    tarballs = packed.trim().split('\n');
    const project = join(directory, 'app');
    await run('mkdir', ['-p', project], directory);
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'an-app', private: true, type: 'module' }),
    );
    // Third-party dependencies come from npm's cache when it has them, else the registry.
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        ...tarballs,
        '@openfeature/server-sdk@^1.13.0',
      ],
      project,
    );
    await writeFile(join(project, 'check.mjs'), ESM_SCRIPT);
    await writeFile(join(project, 'check.cjs'), CJS_SCRIPT);

    vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    const { sdkKey } = await createProjectWithFlag(vexil, org);
    await seedSdkFlags(vexil, org.token, 'false');
    env = {
      VEXIL_URL: await vexil.app.listen({ port: 0, host: '127.0.0.1' }),
      VEXIL_SDK_KEY: sdkKey,
    };
  });

  afterAll(async () => {
    await vexil?.close();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('packs each package with its licence, built code and types, nothing of the workspace', async () => {
    expect(tarballs.map((path) => path.slice(path.lastIndexOf('/') + 1))).toEqual([
      'vexil-engine-0.1.0.tgz',
      'vexil-node-0.1.0.tgz',
      'vexil-openfeature-provider-0.1.0.tgz',
    ]);
    const listing = await run('tar', ['-tzf', tarballs[1]!], directory);
    expect(listing).toContain('package/LICENSE');
    expect(listing).toContain('package/dist/index.d.ts');
    expect(listing).toContain('package/dist/cjs/index.js');
    expect(listing).not.toMatch(/\.test\.|tsbuildinfo/);

    const manifests = await Promise.all(
      PUBLISHED.map(
        async (name) =>
          JSON.parse(
            await readFile(join(REPOSITORY, 'packages', name, 'package.json'), 'utf8'),
          ) as {
            name: string;
            version: string;
            license?: string;
            private?: boolean;
            dependencies?: Record<string, string>;
          },
      ),
    );
    const versions = new Set(manifests.map((manifest) => manifest.version));
    expect(versions.size).toBe(1);
    for (const manifest of manifests) {
      expect(manifest.private, manifest.name).toBeUndefined();
      expect(manifest.license, manifest.name).toBe('MIT');
      for (const [dependency, range] of Object.entries(manifest.dependencies ?? {})) {
        expect(range, `${manifest.name} → ${dependency}`).not.toMatch(/^(workspace|file|link):/);
        if (dependency.startsWith('@vexil/')) expect(range).toBe([...versions][0]);
      }
    }
  });

  it('evaluates against a real server from ESM, with @vexil/node and the OpenFeature provider', async () => {
    const output = await run(process.execPath, ['check.mjs'], join(directory, 'app'), env);
    expect(JSON.parse(output)).toEqual({
      node: {
        value: true,
        variation: 'true',
        reason: 'TARGETING_MATCH',
        ruleId: expect.any(String) as string,
      },
      openfeature: { value: 'Hello', variant: 'english', reason: 'DEFAULT' },
    });
  });

  it('evaluates from CommonJS through the packages’ require() builds', async () => {
    const output = await run(process.execPath, ['check.cjs'], join(directory, 'app'), env);
    expect(JSON.parse(output)).toEqual({ value: true, provider: 'function' });
  });
});
