import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './processes.js';

const run = promisify(execFile);

/** The newest Debian PostgreSQL server binaries (`/usr/lib/postgresql/<major>/bin`). */
function postgresBin(): string {
  const majors = readdirSync('/usr/lib/postgresql')
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  if (majors.length === 0) throw new Error('no PostgreSQL under /usr/lib/postgresql');
  return `/usr/lib/postgresql/${majors[0]}/bin`;
}

/**
 * A throw-away PostgreSQL cluster of a test's own, in a temporary directory on a free port, so
 * that the test can stop and start it without disturbing other tests. initdb refuses to run as
 * root: as root, the cluster runs as the `postgres` OS user, which owns the directory.
 */
export class PostgresCluster {
  private running = false;

  private constructor(
    private readonly directory: string,
    readonly port: number,
    private readonly asPostgresUser: boolean,
  ) {}

  static async create(): Promise<PostgresCluster> {
    const directory = await mkdtemp(join(tmpdir(), 'vexil-pg-'));
    const asPostgresUser = process.getuid?.() === 0;
    if (asPostgresUser) await run('chown', ['postgres:postgres', directory]);
    const cluster = new PostgresCluster(directory, await freePort(), asPostgresUser);
    await cluster.bin('initdb', ['-D', cluster.data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    await cluster.start();
    return cluster;
  }

  private get data(): string {
    return join(this.directory, 'data');
  }

  /** The URL of a database in this cluster. */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Creates a database and returns its URL. */
  async createDatabase(name: string): Promise<string> {
    const admin = new pg.Client({ connectionString: this.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    return this.url(name);
  }

  /** Starts the server and waits until it accepts connections. */
  async start(): Promise<void> {
    await this.bin('pg_ctl', [
      '-D',
      this.data,
      '-l',
      join(this.directory, 'server.log'),
      '-w',
      '-o',
      `-p ${this.port} -k ${this.directory} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
    this.running = true;
  }

  /** Stops the server ("fast": sessions are ended, as in an outage or a restart). */
  async stop(): Promise<void> {
    await this.bin('pg_ctl', ['-D', this.data, '-w', '-m', 'fast', 'stop']);
    this.running = false;
  }

  async destroy(): Promise<void> {
    if (this.running)
      await this.bin('pg_ctl', ['-D', this.data, '-w', '-m', 'immediate', 'stop']).catch(
        () => undefined,
      );
    await rm(this.directory, { recursive: true, force: true });
  }

  private async bin(command: string, args: string[]): Promise<void> {
    const path = `${postgresBin()}/${command}`;
    await (this.asPostgresUser
      ? run('runuser', ['-u', 'postgres', '--', path, ...args])
      : run(path, args));
  }
}

/** A throw-away `redis-server` on a free port (no persistence), stoppable and restartable. */
export class RedisServer {
  private child: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  static async create(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server on its port and waits until it accepts connections. */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) resolve();
      });
      child.once('exit', () => reject(new Error(`redis-server exited: ${output}`)));
    });
  }

  /** Kills the server at once, as a crash would. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}
