import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Every child this benchmark started and that has not exited yet. */
const running = new Set<ChildProcess>();

/** Asynchronous clean-ups (dropping a database) still pending; run on interrupt. */
const cleanups = new Set<() => Promise<void>>();

// Children must not outlive the benchmark, whether it finishes, throws or is interrupted: a
// leftover server would keep its port and skew the next run.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of running) child.kill('SIGKILL');
    void Promise.allSettled([...cleanups].map((cleanup) => cleanup())).then(() =>
      process.exit(130),
    );
  });
}

/**
 * Runs `body`, then `cleanup` — also when `body` throws, and also when the benchmark is
 * interrupted (SIGINT, SIGTERM) meanwhile.
 */
export async function withCleanup<T>(
  cleanup: () => Promise<void>,
  body: () => Promise<T>,
): Promise<T> {
  cleanups.add(cleanup);
  try {
    return await body();
  } finally {
    cleanups.delete(cleanup);
    await cleanup();
  }
}

/** A long-running child (a server) with the tail of its output kept for error messages. */
export interface Service {
  child: ChildProcess;
  /** The last few kilobytes of stdout and stderr. */
  output(): string;
  /** Sends SIGTERM and waits (up to 10 s, then SIGKILL) for the child to exit. */
  stop(): Promise<void>;
}

const OUTPUT_TAIL_CHARS = 4_000;

/** Starts `command` with `args` and `env` added to this process's environment. */
export function startService(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Service {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  return {
    child,
    output: () => tail,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts the Node script `script` with an IPC channel (for a helper that reports measurements
 * as messages); killed with the benchmark like every other child. Its stderr is inherited so
 * its failures show in the progress output.
 */
export function forkScript(script: string, args: string[]): ChildProcess {
  const child = fork(script, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** The resident set size of process `pid` and its peak so far, in bytes (Linux `/proc`). */
export async function residentMemory(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kilobytes = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rss: kilobytes('VmRSS') * 1024, peak: kilobytes('VmHWM') * 1024 };
}

/**
 * Runs `command` to completion and returns its stdout.
 *
 * @throws Error with the exit code and stderr when it exits non-zero.
 */
export function runCommand(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', (error) => {
      running.delete(child);
      reject(error);
    });
    child.once('close', (code) => {
      running.delete(child);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${stderr.trim()}`));
    });
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Polls `url` until it answers with any HTTP status.
 *
 * @throws Error with the service's output when it exits or does not answer within `timeoutMs`.
 */
export async function waitUntilAnswering(
  url: string,
  service: Service,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.child.exitCode !== null) {
      throw new Error(`the service exited with ${service.child.exitCode}:\n${service.output()}`);
    }
    try {
      await fetch(url);
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${service.output()}`);
}
