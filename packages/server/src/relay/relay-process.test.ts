import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';
import { CLI, freePort } from '../test-support/processes.js';

/** Runs `vexil relay` with `args` and `env`; resolves once it exits or `/readyz` answers 200. */
async function startRelayProcess(args: string[], env: NodeJS.ProcessEnv) {
  const port = await freePort();
  const output: string[] = [];
  const child = spawn(process.execPath, [CLI, 'relay', '--port', String(port), ...args], {
    env: { ...process.env, VEXIL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const origin = `http://127.0.0.1:${String(port)}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      if ((await fetch(`${origin}/readyz`)).status === 200) break;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, origin, output, exited };
}

describe.each(testDialects())('vexil relay, a real process, on %s', (dialect) => {
  let upstream: TestVexil;
  let upstreamOrigin: string;
  let sdkKey: string;
  let relayKey: string;

  beforeAll(async () => {
    upstream = await createTestVexil(dialect);
    await upstream.app.listen({ port: 0, host: '127.0.0.1' });
    upstreamOrigin = `http://127.0.0.1:${String((upstream.app.server.address() as AddressInfo).port)}`;
    const org = await createOrg(upstream);
    sdkKey = (await createProjectWithFlag(upstream, org)).sdkKey;
    relayKey = (
      await callOk(upstream, 'POST', '/api/v1/orgs/acme/relay-keys', org.token, { name: 'edge' })
    ).key as string;
  });
  afterAll(() => upstream.close());

  it('serves the upstream configuration, and stops on SIGTERM', async () => {
    const relay = await startRelayProcess(['--upstream', upstreamOrigin], {
      VEXIL_RELAY_KEY: relayKey,
    });
    try {
      expect(relay.child.exitCode, relay.output.join('')).toBeNull();
      const request = { headers: { authorization: sdkKey } };
      const [expected, actual] = await Promise.all([
        fetch(`${upstreamOrigin}/v1/sdk/flags`, request),
        fetch(`${relay.origin}/v1/sdk/flags`, request),
      ]);
      expect(actual.status).toBe(200);
      expect(actual.headers.get('etag')).toBe(expected.headers.get('etag'));
      expect(await actual.text()).toBe(await expected.text());
    } finally {
      relay.child.kill('SIGTERM');
    }
    expect(await relay.exited).toBe(0);
  }, 60_000);

  it('exits non-zero, saying which, for a wrong key or a wrong upstream address', async () => {
    const wrongKey = await startRelayProcess(['--upstream', upstreamOrigin], {
      VEXIL_RELAY_KEY: 'vxr_not-a-key',
    });
    expect(await wrongKey.exited).toBe(1);
    expect(wrongKey.output.join('')).toContain('refuses VEXIL_RELAY_KEY');

    const nothingThere = `http://127.0.0.1:${String(await freePort())}`;
    const wrongUrl = await startRelayProcess(['--upstream', nothingThere], {
      VEXIL_RELAY_KEY: relayKey,
    });
    expect(await wrongUrl.exited).toBe(1);
    expect(wrongUrl.output.join('')).toContain(`${nothingThere} cannot be reached`);

    const noKey = await startRelayProcess(['--upstream', upstreamOrigin], { VEXIL_RELAY_KEY: '' });
    expect(await noKey.exited).toBe(1);
    expect(noKey.output.join('')).toContain('VEXIL_RELAY_KEY');
  }, 120_000);
});
