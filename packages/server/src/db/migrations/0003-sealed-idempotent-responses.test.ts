import type { Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestVexil, testDialects, type TestVexil } from '../../test-support/harness.js';
import { up } from './0003-sealed-idempotent-responses.js';

describe.each(testDialects())('migration 0003 on %s', (dialect) => {
  let vexil: TestVexil | undefined;
  afterEach(() => vexil?.close());

  it('removes responses stored in plain text and keeps claims still running', async () => {
    vexil = await createTestVexil(dialect);
    const row = {
      caller_id: 'token-1',
      route: 'POST /api/v1/orgs/acme/webhooks',
      request_hash: 'hash',
      created_at: '2026-06-01T12:00:00.000Z',
    };
    await vexil.services.db
      .insertInto('idempotency_keys')
      .values([
        { ...row, key: 'done', response_status: 201, response_body: '{"secret":"whsec_plain"}' },
        { ...row, key: 'running', response_status: null, response_body: null },
      ])
      .execute();
    await up(vexil.services.db as unknown as Kysely<unknown>);
    const left = await vexil.services.db.selectFrom('idempotency_keys').select('key').execute();
    expect(left).toEqual([{ key: 'running' }]);
  });
});
