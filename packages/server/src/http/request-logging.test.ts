import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../node/full-node.js';
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

  it('one line per request, at completion; evaluation requests only when refused or failed, without their keys', async () => {
    const org = await createOrg(vexil);
    const { key } = (
      await call(vexil, 'POST', '/api/v1/orgs/acme/projects', {
        token: org.token,
        body: { key: 'web', name: 'Web' },
      })
        .then(() =>
          call(vexil, 'POST', '/api/v1/orgs/acme/projects/web/flags', {
            token: org.token,
            body: { key: 'f' },
          }),
        )
        .then(() =>
          call(vexil, 'POST', '/api/v1/orgs/acme/projects/web/environments/production/sdk-keys', {
            token: org.token,
            body: { name: 'backend', type: 'ServerSide' },
          }),
        )
    ).body as { key: string };
    log.lines.length = 0;
    await call(vexil, 'GET', '/api/v1/orgs/acme', { token: org.token });
    await call(vexil, 'GET', '/api/v1/orgs/acme/no-such-thing', { token: org.token });
    // Answered evaluations (Fastify's routes and the lean lane's) are not logged at info.
    expect((await call(vexil, 'GET', '/v1/sdk/flags', { token: key })).status).toBe(200);
    const evaluate = { flagKey: 'f', context: {} };
    expect(
      (await call(vexil, 'POST', '/v1/sdk/evaluate', { token: key, body: evaluate })).status,
    ).toBe(200);
    await call(vexil, 'GET', '/v1/sdk/flags', { token: 'vxl_srv_unknown' });
    await call(vexil, 'POST', '/v1/sdk/evaluate', { token: 'vxl_srv_unknown', body: evaluate });
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
      { method: 'GET', route: '/v1/sdk/flags', url: '/v1/sdk/flags', statusCode: 401 },
      { method: 'POST', route: '/v1/sdk/evaluate', url: '/v1/sdk/evaluate', statusCode: 401 },
      { method: 'POST', route: '/ofrep/v1/evaluate/flags', statusCode: 401 },
    ]);
    expect(log.lines).toHaveLength(5);
    expect(JSON.stringify(log.lines)).not.toContain('vxl_srv_');
  });
});
