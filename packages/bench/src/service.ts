import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchDatabase } from './databases.js';
import { ORG } from './seed.js';
import {
  freePort,
  runCommand,
  startService,
  waitUntilAnswering,
  type Service,
} from './processes.js';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(here, '../../..');
/**
 * The scripts the benchmarks start: `vexil` itself, and the reference servers beside it.
 * `VEXIL_BENCH_CLI` names another build's `cli.js`, to measure it with this harness (a build of
 * an earlier commit, for a before-and-after figure).
 */
export const CLI = process.env.VEXIL_BENCH_CLI ?? join(REPO_ROOT, 'packages/server/dist/cli.js');
export const HELLO_SERVER = join(here, 'hello-server.js');
export const IDLE_LANE_SERVER = join(here, 'idle-lane-server.js');

/** Every benchmarked node holds the same secrets key, as PostgreSQL nodes must (design record 015). */
const SECRETS_KEY = 'bench-secrets-key-0123456789abcdefghijklmnopqrstuvwxyz';

/** High enough that seeding never meets the management API's rate limit. */
const RATE_LIMIT = '100000000';

/** One running `vexil serve` process. */
export interface Node {
  baseUrl: string;
  service: Service;
}

/** Environment of every benchmarked node: quiet logs, no rate limit, a local webhook receiver. */
export function nodeEnvironment(database: BenchDatabase): Record<string, string> {
  return {
    VEXIL_DATABASE_URL: database.url,
    VEXIL_HOST: '127.0.0.1',
    VEXIL_LOG_LEVEL: 'warn',
    VEXIL_RATE_LIMIT: RATE_LIMIT,
    VEXIL_SECRETS_KEY: SECRETS_KEY,
    // The webhook benchmark delivers to a receiver on 127.0.0.1 over http.
    VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  };
}

/**
 * Creates organization {@link ORG} and its Owner with `vexil bootstrap` (which also migrates),
 * by default with this checkout's `vexil`; `cli` names another build's `cli.js`.
 *
 * @param cli the build's `cli.js`: this one's, or another build's to compare with
 * @returns the Owner's API token
 */
export async function bootstrap(database: BenchDatabase, cli = CLI): Promise<string> {
  const output = await runCommand(
    process.execPath,
    [cli, 'bootstrap', '--org', ORG, '--email', 'bench@example.test'],
    nodeEnvironment(database),
  );
  return (JSON.parse(output) as { token: string }).token;
}

/**
 * Starts `vexil serve` on `database` on a free port (optionally `--only roles`, or
 * `--workers n`; `cli` names another build's `cli.js` than this checkout's) and waits until it
 * answers. `VEXIL_BENCH_NODE_FLAGS` passes Node.js options to it.
 *
 * @throws Error with the node's output when it exits or does not answer
 */
export async function startNode(
  database: BenchDatabase,
  options: { roles?: string; workers?: number; cli?: string } = {},
): Promise<Node> {
  const port = await freePort();
  const args = [
    // Node.js options for the node, e.g. `--cpu-prof` to profile it.
    ...(process.env.VEXIL_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    options.cli ?? CLI,
    'serve',
    ...(options.roles ? ['--only', options.roles] : []),
    ...(options.workers ? ['--workers', String(options.workers)] : []),
  ];
  const service = startService(process.execPath, args, {
    ...nodeEnvironment(database),
    VEXIL_PORT: String(port),
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitUntilAnswering(`${baseUrl}/healthz`, service);
  } catch (error) {
    await service.stop();
    throw error;
  }
  return { baseUrl, service };
}
