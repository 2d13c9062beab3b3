import type { Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';
import { up } from './0006-environment-critical.js';

describe.each(testDialects())('migration 0006 on %s', (dialect) => {
  let vexil: TestVexil | undefined;
  afterEach(() => vexil?.close());

  it('marks the environments that existed before it critical when their key starts with prod', async () => {
    vexil = await createTestVexil(dialect);
    await createProjectWithFlag(vexil, await createOrg(vexil));
    const { db } = vexil.services;
    // The database as it was before 0006: no column, environments of every kind.
    await db.schema.alterTable('environments').dropColumn('critical').execute();
    const project = await db.selectFrom('projects').select('id').executeTakeFirstOrThrow();
    const now = '2026-06-01T12:00:00.000Z';
    const legacy = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
    for (const [index, key] of ['prod-eu', 'Production-US', 'preprod', 'qa'].entries()) {
      await legacy
        .insertInto('environments')
        .values({
          id: `0190a9b2-0000-7000-8000-00000000000${index}`,
          project_id: project.id,
          key,
          name: null,
          color: null,
          sort_order: 10 + index,
          version: 1,
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
    await up(db as unknown as Kysely<unknown>);
    const rows = await db
      .selectFrom('environments')
      .select(['key', 'critical'])
      .orderBy('key')
      .execute();
    expect(Object.fromEntries(rows.map((row) => [row.key, row.critical]))).toEqual({
      development: 0,
      preprod: 0,
      'prod-eu': 1,
      production: 1,
      'Production-US': 1,
      qa: 0,
    });
  });
});
