import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../node/full-node.js';
import {
  call,
  createOrg,
  createPostgresDatabase,
  createProjectWithFlag,
  testConfig,
  testDialects,
} from '../test-support/harness.js';
import { openDatabase } from './database.js';

/**
 * A query the database refuses answers 500 `internal_error`, never a client error, with a log
 * line naming the operation (method and route) and the database's code (issue 37).
 */
describe.each(testDialects())('a database error on %s', (dialect) => {
  let log = '';
  let vexil: Vexil;
  let dropDatabase: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const postgres = dialect === 'postgres' ? await createPostgresDatabase() : undefined;
    dropDatabase = postgres?.drop;
    const databaseUrl = postgres?.url ?? ':memory:';
    vexil = await createVexil(testConfig({ databaseUrl }), {
      database: openDatabase(databaseUrl),
      logStream: new Writable({
        write(chunk: Buffer, _encoding, done) {
          log += chunk.toString('utf8');
          done();
        },
      }),
      startWorkers: false,
    });
  });
  afterAll(async () => {
    await vexil.close();
    await dropDatabase?.();
  });

  it('is a 500 logged with the route and the code', async () => {
    const org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    const cascade = dialect === 'postgres' ? ' CASCADE' : '';
    await sql.raw(`DROP TABLE segments${cascade}`).execute(vexil.services.db);
    const answer = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web/segments', {
      token: org.token,
    });
    expect(answer.status).toBe(500);
    expect(answer.body.error).toBe('internal_error');
    const line = log
      .split('\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text) as Record<string, unknown>)
      .find((entry) => entry.msg === 'request failed');
    expect(line).toMatchObject({
      route: 'GET /api/v1/orgs/:org/projects/:project/segments',
      code: dialect === 'postgres' ? '42P01' : 'SQLITE_ERROR',
    });
  });
});
