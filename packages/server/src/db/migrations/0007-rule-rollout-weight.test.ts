import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';
import { up } from './0007-rule-rollout-weight.js';

describe.each(testDialects())('migration 0007 on %s', (dialect) => {
  let vexil: TestVexil | undefined;
  afterEach(() => vexil?.close());

  it('gives rules written before it the weight of their whole percentage, and none to rules without a rollout', async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    const rules = '/api/v1/orgs/acme/projects/web/flags/new-checkout/environments/production/rules';
    const flag = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web/flags/new-checkout', {
      token: org.token,
    });
    const variationId = flag.body.variations[0].id as string;
    const partial = await call(vexil, 'POST', rules, {
      token: org.token,
      body: { variationId, rolloutPercentage: 25 },
    });
    const everyone = await call(vexil, 'POST', rules, { token: org.token, body: { variationId } });
    // Back to the shape before the migration, then the migration.
    const { db } = vexil.services;
    await sql`ALTER TABLE rules DROP COLUMN rollout_weight`.execute(db);
    await up(db as unknown as Kysely<unknown>);

    const weights = await db.selectFrom('rules').select(['id', 'rollout_weight']).execute();
    const weightOf = (id: string) => weights.find((row) => row.id === id)?.rollout_weight;
    expect(weightOf(partial.body.id as string)).toBe(25_000);
    expect(weightOf(everyone.body.id as string)).toBeNull();
  });
});
