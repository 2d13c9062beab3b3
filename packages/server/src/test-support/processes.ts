import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Dialect } from '../db/database.js';
import { createPostgresDatabase, TEST_SECRETS_KEY } from './harness.js';
import { WebhookReceiver } from './webhook-receiver.js';

/** The built CLI (`npm test` builds before running the suite). */
export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Runs `vexil bootstrap` against a database and returns the printed credential. */
export async function bootstrapWithCli(
  env: NodeJS.ProcessEnv,
  org = 'acme',
): Promise<{ token: string }> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [CLI, 'bootstrap', '--org', org, '--email', `owner@${org}.test`],
    {
      env: { ...process.env, ...env },
    },
  );
  return JSON.parse(stdout) as { token: string };
}

/** A real `vexil serve` (or `vexil relay`) process on its own port. */
export class ServeProcess {
  private constructor(
    readonly child: ChildProcess,
    readonly baseUrl: string,
    readonly output: string[],
  ) {}

  /**
   * Starts `vexil <command>` with `env` and waits until `/readyz` answers 200 (at most 60 s: CI
   * machines are busy).
   */
  static async start(
    env: NodeJS.ProcessEnv,
    args: string[] = [],
    command: 'serve' | 'relay' = 'serve',
  ): Promise<ServeProcess> {
    const port = await freePort();
    const output: string[] = [];
    const child = spawn(process.execPath, [CLI, command, ...args], {
      env: {
        ...process.env,
        VEXIL_HOST: '127.0.0.1',
        VEXIL_PORT: String(port),
        VEXIL_LOG_LEVEL: 'warn',
        VEXIL_SECRETS_KEY: TEST_SECRETS_KEY,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const node = new ServeProcess(child, `http://127.0.0.1:${port}`, output);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`vexil ${command} exited: ${output.join('')}`);
      try {
        if ((await fetch(`${node.baseUrl}/readyz`)).status === 200) return node;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    node.kill('SIGKILL');
    throw new Error(`vexil ${command} did not become ready: ${output.join('')}`);
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    this.child.kill(signal);
  }

  /** Stops the process and waits for it to exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) =>
      this.child.once('exit', (code) => resolve(code)),
    );
    this.child.kill(signal);
    return exited;
  }

  async request(
    method: string,
    path: string,
    options: {
      token?: string;
      sdkKey?: string;
      body?: unknown;
      headers?: Record<string, string>;
    } = {},
  ) {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        ...options.headers,
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.sdkKey ? { authorization: options.sdkKey } : {}),
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      // Tests read arbitrary JSON (typed any); asserting on it is the point.
      body: text ? JSON.parse(text) : undefined,
    };
  }
}

/** What tests that start real nodes on one database share; the nodes are the test's own. */
export interface NodeTestbed {
  databaseUrl: string;
  /** Every node of the test runs with this environment. */
  env: NodeJS.ProcessEnv;
  /** The owner's token in organization `acme`. */
  token: string;
  receiver: WebhookReceiver;
  /** Closes the receiver and removes the database: stop the nodes first. */
  close(): Promise<void>;
}

/**
 * Prepares for real `vexil serve` processes: a fresh database (PostgreSQL, or SQLite in a
 * temporary directory) bootstrapped by the CLI, a webhook receiver, and the nodes' environment:
 * the periodic version check set to a minute, so that within a test's waits a change can reach
 * another node or worker only by a notice; private webhook targets allowed, a 1 s webhook
 * timeout; then `env`.
 */
export async function prepareNodes(
  dialect: Dialect,
  env: NodeJS.ProcessEnv = {},
): Promise<NodeTestbed> {
  let databaseUrl: string;
  let removeDatabase: () => Promise<void>;
  if (dialect === 'postgres') {
    const database = await createPostgresDatabase();
    databaseUrl = database.url;
    removeDatabase = database.drop;
  } else {
    const directory = mkdtempSync(join(tmpdir(), 'vexil-nodes-'));
    databaseUrl = join(directory, 'vexil.db');
    removeDatabase = async () => rmSync(directory, { recursive: true, force: true });
  }
  const receiver = await WebhookReceiver.start();
  const nodeEnv = {
    VEXIL_DATABASE_URL: databaseUrl,
    VEXIL_SNAPSHOT_CHECK_INTERVAL: '60s',
    VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    VEXIL_WEBHOOK_TIMEOUT: '1s',
    ...env,
  };
  const { token } = await bootstrapWithCli(nodeEnv);
  return {
    databaseUrl,
    env: nodeEnv,
    token,
    receiver,
    close: async () => {
      await receiver.close();
      await removeDatabase();
    },
  };
}

/**
 * Creates, through `node`, project `web` (with the default environments) and its boolean flag
 * `beta` (off), and returns a server-side SDK key of `production`.
 */
export async function createBetaFlag(node: ServeProcess, token: string): Promise<string> {
  const created = await node.request('POST', '/api/v1/orgs/acme/projects', {
    token,
    body: { key: 'web', name: 'Web' },
  });
  if (created.status !== 201) throw new Error(`project not created: ${String(created.status)}`);
  const base = '/api/v1/orgs/acme/projects/web';
  const flag = await node.request('POST', `${base}/flags`, { token, body: { key: 'beta' } });
  if (flag.status !== 201) throw new Error(`flag not created: ${String(flag.status)}`);
  const key = await node.request('POST', `${base}/environments/production/sdk-keys`, {
    token,
    body: { name: 'k', type: 'ServerSide' },
  });
  return key.body.key as string;
}

/** Subscribes a webhook to every `flag.toggled` in the organization, sent to `url`. */
export async function subscribeToToggles(
  node: ServeProcess,
  token: string,
  url: string,
): Promise<string> {
  const hook = await node.request('POST', '/api/v1/orgs/acme/webhooks', {
    token,
    body: {
      name: 'r',
      url,
      provider: 'GenericHttp',
      eventTypes: ['flag.toggled'],
      projectIds: [],
      environmentIds: [],
    },
  });
  if (hook.status !== 201) throw new Error(`webhook not created: ${String(hook.status)}`);
  return hook.body.id as string;
}

/** Polls `check` every 50 ms until it returns true or `timeoutMs` passes; returns whether it did. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}
