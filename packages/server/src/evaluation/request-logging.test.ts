import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../app.js';
import { openDatabase } from '../db/database.js';
import {
  call,
  createOrg,
  createPostgresDatabase,
  testDialects,
  testConfig,
} from '../test-support/harness.js';

/** Collects every log line the service writes, parsed. */
class CapturedLog extends Writable {
  readonly lines: { msg?: string; req?: { url?: string }; level?: number }[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() !== '') this.lines.push(JSON.parse(line));
    }
    done();
  }
}

describe.each(testDialects())('request logging on %s', (dialect) => {
  const log = new CapturedLog();
  let vexil: Vexil;
  let dropDatabase: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const postgres = dialect === 'postgres' ? await createPostgresDatabase() : undefined;
    dropDatabase = postgres?.drop;
    const databaseUrl = postgres?.url ?? ':memory:';
    vexil = await createVexil(testConfig({ databaseUrl, logLevel: 'info' }), {
      database: openDatabase(databaseUrl),
      logStream: log,
      startWorkers: false,
    });
  });
  afterAll(async () => {
    await vexil.close();
    await dropDatabase?.();
  });

  it('logs management requests but not each evaluation request', async () => {
    const org = await createOrg(vexil);
    await call(vexil, 'GET', '/api/v1/orgs/acme', { token: org.token });
    await call(vexil, 'GET', '/v1/sdk/flags', { token: 'vxl_srv_unknown' });
    await call(vexil, 'POST', '/ofrep/v1/evaluate/flags', { body: {} });
    const logged = log.lines
      .filter((line) => line.msg === 'incoming request')
      .map((line) => line.req?.url);
    expect(logged).toEqual(['/api/v1/orgs/acme']);
    expect(log.lines.filter((line) => line.msg === 'request completed')).toHaveLength(1);
  });
});
