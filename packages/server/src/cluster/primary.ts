import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { pino, type Logger } from 'pino';
import { relayNoticesBetweenWorkers } from '../bus/worker-relay.js';
import { aggregateMetricsForWorkers } from '../ops/cluster-metrics.js';

/** Pause before a worker that died is started again, so a crash at start cannot spin a core. */
const RESTART_DELAY_MS = 1_000;

/** The number of worker processes for `--workers` / `VEXIL_WORKERS`: `auto` is one per core. */
export function workerCount(workers: number | 'auto'): number {
  return workers === 'auto' ? availableParallelism() : workers;
}

/** The primary's log lines: JSON, or pretty-printed for a person at a terminal, as the workers'. */
function primaryLogger(level: string): Logger {
  return pino({
    level,
    base: { pid: process.pid, role: 'primary' },
    ...(process.stdout.isTTY
      ? {
          transport: {
            target: 'pino-pretty',
            options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
          },
        }
      : {}),
  });
}

/**
 * The primary of `vexil serve --workers <n>` (design record 029). It serves no HTTP and opens
 * no database: it forks `count` workers that share the listening port through `node:cluster`,
 * relays change notices between them (SQLite has no LISTEN/NOTIFY), aggregates their metrics
 * for the worker that is scraped, restarts a worker that dies, and on SIGTERM or SIGINT stops
 * them all within `shutdownTimeoutMs`.
 *
 * Worker 1 starts alone, so that it applies the migrations before the others open the database;
 * it alone runs the background jobs (webhook deliveries, usage pruning). If it exits before it
 * listens, the primary exits 1. Each worker is started
 * with the primary's own arguments plus `--cluster-worker <index>`.
 */
export async function runClusterPrimary(options: {
  count: number;
  shutdownTimeoutMs: number;
  logLevel: string;
}): Promise<void> {
  const log = primaryLogger(options.logLevel);
  const baseArgs = process.argv.slice(2);
  const workers = new Map<number, Worker>();
  const state = { stopping: false };

  relayNoticesBetweenWorkers();
  aggregateMetricsForWorkers();

  const fork = (index: number): Worker => {
    cluster.setupPrimary({ args: [...baseArgs, '--cluster-worker', String(index)] });
    const worker = cluster.fork();
    workers.set(index, worker);
    worker.on('exit', (code, signal) => {
      if (workers.get(index) === worker) workers.delete(index);
      if (state.stopping) return;
      log.error(
        { worker: index, workerPid: worker.process.pid, code, signal },
        'worker process died; starting it again',
      );
      setTimeout(() => {
        if (!state.stopping) fork(index);
      }, RESTART_DELAY_MS).unref();
    });
    return worker;
  };

  const stop = (signal: NodeJS.Signals) => {
    if (state.stopping) return;
    state.stopping = true;
    log.info({ signal, workers: workers.size }, 'shutting down the workers');
    const timer = setTimeout(() => {
      log.error({ timeoutMs: options.shutdownTimeoutMs }, 'workers did not stop in time; killing');
      for (const worker of workers.values()) worker.process.kill('SIGKILL');
      process.exit(1);
    }, options.shutdownTimeoutMs);
    timer.unref();
    const exits = [...workers.values()].map(
      (worker) =>
        new Promise<boolean>((resolve) => {
          if (worker.process.exitCode !== null) resolve(worker.process.exitCode === 0);
          else worker.once('exit', (code) => resolve(code === 0));
          worker.process.kill('SIGTERM');
        }),
    );
    void Promise.all(exits).then((clean) => {
      clearTimeout(timer);
      process.exit(clean.every(Boolean) ? 0 : 1);
    });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));

  log.info({ workers: options.count }, 'starting worker processes');
  const first = fork(1);
  const started = await new Promise<boolean>((resolve) => {
    first.once('listening', () => resolve(true));
    first.once('exit', () => resolve(false));
  });
  // A first worker that cannot start (a port in use, a bad configuration) would fail again on
  // every restart: the node fails as a single process would.
  if (!started && !state.stopping) {
    state.stopping = true;
    log.error('worker 1 exited before it listened; stopping');
    process.exit(1);
  }
  for (let index = 2; index <= options.count && !state.stopping; index += 1) fork(index);
}
