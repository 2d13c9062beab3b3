import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

describe.each(testDialects())('migration 0005 on %s', (dialect) => {
  let vexil: TestVexil | undefined;
  afterEach(() => vexil?.close());

  it('gives a flag written without metadata (as before the migration) an empty object', async () => {
    vexil = await createTestVexil(dialect);
    await createProjectWithFlag(vexil, await createOrg(vexil));
    const { db } = vexil.services;
    const project = await db.selectFrom('projects').select('id').executeTakeFirstOrThrow();
    const now = '2026-06-01T12:00:00.000Z';
    await sql`insert into flags (id, project_id, key, type, tags, salt, created_at, updated_at)
      values ('0190a9b2-0000-7000-8000-000000000001', ${project.id}, 'old', 'Boolean', '[]', 'salt', ${now}, ${now})`.execute(
      db,
    );
    const row = await db
      .selectFrom('flags')
      .select('metadata')
      .where('key', '=', 'old')
      .executeTakeFirstOrThrow();
    expect(row.metadata).toBe('{}');
  });
});
