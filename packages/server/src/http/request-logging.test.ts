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
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() !== '') this.lines.push(JSON.parse(line));
    }
    done();
  }
}

describe.each(testDialects())('request log on %s', (dialect) => {
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

  it('one line per management request, at completion; none per answered evaluation request', async () => {
    const org = await createOrg(vexil);
    log.lines.length = 0;
    await call(vexil, 'GET', '/api/v1/orgs/acme', { token: org.token });
    await call(vexil, 'GET', '/api/v1/orgs/acme/no-such-thing', { token: org.token });
    await call(vexil, 'GET', '/v1/sdk/flags', { token: 'vxl_srv_unknown' });
    await call(vexil, 'POST', '/ofrep/v1/evaluate/flags', { body: {} });
    expect(log.lines.filter((line) => line.msg === 'incoming request')).toEqual([]);
    const completed = log.lines.filter((line) => line.msg === 'request completed');
    expect(completed).toMatchObject([
      {
        level: 30,
        method: 'GET',
        route: '/api/v1/orgs/:org',
        url: '/api/v1/orgs/acme',
        statusCode: 200,
        durationMs: expect.any(Number),
      },
      { method: 'GET', route: null, url: '/api/v1/orgs/acme/no-such-thing', statusCode: 404 },
    ]);
    expect(log.lines).toHaveLength(2);
  });
});
