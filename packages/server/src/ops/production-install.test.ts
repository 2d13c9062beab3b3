import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../test-support/processes.js';

const REPOSITORY = fileURLToPath(new URL('../../../../', import.meta.url));

/** The documented start command's arguments to `node`, in the release directory. */
const START = ['packages/server/bin/vexil.js', 'serve'];

/**
 * The environment of a command run as an operator would run it: npm's own variables from an
 * enclosing `npm test` removed (they would point npm at the repository), except the headers
 * native addons are built against; `node` on the PATH is the one running these tests, so the
 * install is checked on each Node.js version CI runs the suite with.
 */
function operatorEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) =>
        !name.startsWith('npm_') || name === 'npm_config_nodedir' || name === 'npm_config_cache',
    ),
  );
  return {
    ...env,
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    ...extra,
  };
}

function run(command: string, args: string[], cwd: string, env = operatorEnvironment()) {
  return new Promise<string>((resolve, reject) => {
    execFile(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * The production install of the README and docs/operations.md, in a clean directory: the release
 * directory, `npm ci --omit=dev`, `npm start`. It builds better-sqlite3 from source where its
 * prebuilt binary cannot be downloaded, hence the long time-out.
 */
describe('production install', { timeout: 900_000 }, () => {
  let directory: string;
  let release: string;
  let service: ChildProcess | undefined;
  const output: string[] = [];

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'vexil-production-'));
    release = join(directory, 'vexil');
    await run(process.execPath, [join(REPOSITORY, 'scripts/release.mjs'), release], REPOSITORY);
  });

  afterAll(async () => {
    if (service && service.exitCode === null && service.signalCode === null) {
      const exited = new Promise((resolve) => service!.once('exit', resolve));
      service.kill('SIGKILL');
      await exited;
    }
    await rm(directory, { recursive: true, force: true });
  });

  it('npm ci --omit=dev, then the start command serves the APIs and the console', async () => {
    const manifest = JSON.parse(await readFile(join(release, 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest['devDependencies']).toBeUndefined();

    await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], release);
    // No development tool was installed.
    for (const tool of ['typescript', 'vitest', 'eslint', 'vite', '@types/negotiator'])
      expect(existsSync(join(release, 'node_modules', tool)), tool).toBe(false);

    const port = await freePort();
    const env = operatorEnvironment({
      VEXIL_HOST: '127.0.0.1',
      VEXIL_PORT: String(port),
      VEXIL_LOG_LEVEL: 'warn',
      VEXIL_DATABASE_URL: join(directory, 'data', 'vexil.db'),
      // Room for a busy CI machine: past it the service exits 1 on purpose (design record 019).
      VEXIL_SHUTDOWN_TIMEOUT: '120s',
    });
    // The start command of docs/operations.md (also the manifest's `npm start`), run directly so
    // that SIGTERM reaches the service itself.
    expect(manifest['scripts']).toEqual({ start: `node ${START.join(' ')}` });
    service = spawn(process.execPath, START, {
      cwd: release,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    service.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    service.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const baseUrl = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    let ready = false;
    while (!ready && Date.now() < deadline) {
      if (service.exitCode !== null) throw new Error(`npm start exited: ${output.join('')}`);
      ready = await fetch(`${baseUrl}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(ready, output.join('')).toBe(true);

    const { token } = JSON.parse(
      await run(
        process.execPath,
        [START[0]!, 'bootstrap', '--org', 'acme', '--email', 'ops@acme.test'],
        release,
        env,
      ),
    ) as { token: string };
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}/api/v1/orgs/acme${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body ?? {}),
      });
      const text = await response.text();
      return {
        status: response.status,
        body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
      };
    };
    expect((await api('POST', '/projects', { key: 'web', name: 'Web' })).status).toBe(201);
    expect((await api('POST', '/projects/web/flags', { key: 'new-checkout' })).status).toBe(201);
    expect(
      (
        await api('POST', '/projects/web/flags/new-checkout/environments/production/toggle', {
          enabled: true,
        })
      ).status,
    ).toBe(204);
    const sdkKey = await api('POST', '/projects/web/environments/production/sdk-keys', {
      name: 'backend',
      type: 'ServerSide',
    });
    expect(sdkKey.status).toBe(201);
    const evaluation = await fetch(`${baseUrl}/v1/sdk/evaluate`, {
      method: 'POST',
      headers: { authorization: String(sdkKey.body['key']), 'content-type': 'application/json' },
      body: JSON.stringify({ flagKey: 'new-checkout', context: { userId: 'u' } }),
    });
    expect(await evaluation.json()).toMatchObject({ key: 'new-checkout', value: true });

    // The web console is served, with the script its page loads.
    const page = await fetch(`${baseUrl}/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect((await fetch(`${baseUrl}${script!}`)).status).toBe(200);

    const exited = new Promise<number | null>((resolve) =>
      service!.once('exit', (code) => resolve(code)),
    );
    service.kill('SIGTERM');
    expect(await exited, output.join('')).toBe(0);
  });

  it("the Dockerfile's stages are the steps this test runs", async () => {
    const dockerfile = await readFile(join(REPOSITORY, 'Dockerfile'), 'utf8');
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages.map((stage) => stage.split('\n')[0])).toEqual([
      'node:${NODE_VERSION}-bookworm AS build',
      'node:${NODE_VERSION}-bookworm AS install',
      'node:${NODE_VERSION}-bookworm-slim AS runtime',
    ]);
    const [build, install, runtime] = stages as [string, string, string];
    expect(build).toMatch(/^RUN npm run release$/m);
    expect(install).toMatch(/^COPY --from=build \/src\/release\/ \.\/$/m);
    expect(install).toMatch(/^RUN npm ci --omit=dev /m);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/^HEALTHCHECK [^]*\/healthz/m);
    const command = /^CMD (\[.*\])$/m.exec(runtime)?.[1];
    expect(JSON.parse(command ?? 'null')).toEqual(['node', ...START]);
  });
});
