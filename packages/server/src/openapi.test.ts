import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { createVexil } from './node/full-node.js';
import { testConfig } from './test-support/harness.js';

const COMMITTED = new URL('../../../openapi.json', import.meta.url);
const HINT = 'openapi.json is out of date: run `npm run openapi` and commit the result';

describe('OpenAPI document', () => {
  it('the committed openapi.json matches the routes', async () => {
    const vexil = await createVexil(testConfig({ databaseUrl: ':memory:' }), { logger: false });
    await vexil.app.ready();
    const current: unknown = JSON.parse(JSON.stringify(vexil.app.swagger()));
    await vexil.close();
    const committed: unknown = await readFile(COMMITTED, 'utf8').then(
      (text) => JSON.parse(text) as unknown,
      () => null,
    );
    expect(committed, HINT).toEqual(current);
  });

  it('names the API version v1 (spec: Versioning)', async () => {
    const vexil = await createVexil(testConfig({ databaseUrl: ':memory:' }), { logger: false });
    await vexil.app.ready();
    const document = vexil.app.swagger() as { openapi: string; info: { version: string } };
    await vexil.close();
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('v1');
  });
});
