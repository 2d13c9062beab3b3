import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';

const DAY_MS = 86_400_000;
const base = '/api/v1/orgs/acme/projects/web';
const branchUrl = (repository: string, branch: string) =>
  `${base}/code-references/${encodeURIComponent(repository)}/branches/${encodeURIComponent(branch)}`;

/** A reference as the scan writes it. */
function reference(key: string, path: string, line: number, kind = 'call') {
  return {
    path,
    line,
    column: 7,
    kind,
    key,
    context: { before: ['// before'], line: `read('${key}')`, after: ['// after'] },
  };
}

function scan(references: ReturnType<typeof reference>[], commit = 'c0ffee') {
  return { commit, scannedAt: '2026-11-28T10:00:00.000Z', references, unparsed: ['broken.ts'] };
}

describe.each(testDialects())('code references on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let sdkKey: string;
  const clock = new TestClock();

  const upload = (repository: string, branch: string, body: unknown, token = org.token) =>
    call(vexil, 'PUT', branchUrl(repository, branch), { token, body });
  const flagList = async () =>
    (await call(vexil, 'GET', `${base}/flags?sort=key`, { token: org.token })).body.items as {
      key: string;
      codeReferences: number | null;
    }[];
  const createFlag = async (key: string) => {
    const response = await call(vexil, 'POST', `${base}/flags`, {
      token: org.token,
      body: { key },
    });
    expect(response.status).toBe(201);
  };

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { clock });
    org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
    await createFlag('dark-mode');
  });
  afterAll(() => vexil.close());

  it('the flag list counts nothing (null) before any repository was scanned', async () => {
    expect((await flagList()).map((flag) => flag.codeReferences)).toEqual([null, null]);
  });

  it('an upload is read back per repository and branch; an unknown key is kept and marked', async () => {
    const stored = await upload(
      'acme/shop',
      'main',
      scan([
        reference('new-checkout', 'src/checkout.tsx', 12, 'jsx'),
        reference('new-checkout', 'src/api.ts', 3),
        reference('new-chekout', 'src/typo.ts', 1),
      ]),
    );
    expect(stored.status).toBe(204);
    const repositories = await call(vexil, 'GET', `${base}/code-references/repositories`, {
      token: org.token,
    });
    expect(repositories.status).toBe(200);
    expect(repositories.body.items).toEqual([
      {
        name: 'acme/shop',
        defaultBranch: 'main',
        sourceUrlTemplate: null,
        branches: [
          {
            name: 'main',
            commit: 'c0ffee',
            scannedAt: '2026-11-28T10:00:00.000Z',
            referenceCount: 3,
            unparsed: ['broken.ts'],
          },
        ],
      },
    ]);
    const flag = await call(vexil, 'GET', `${base}/flags/new-checkout/code-references`, {
      token: org.token,
    });
    expect(flag.body.repositories[0].branches[0].references).toEqual([
      {
        path: 'src/api.ts',
        line: 3,
        column: 7,
        kind: 'call',
        context: { before: ['// before'], line: "read('new-checkout')", after: ['// after'] },
        url: null,
      },
      expect.objectContaining({ path: 'src/checkout.tsx', kind: 'jsx' }),
    ]);
    const unknown = await vexil.services.db
      .selectFrom('code_references')
      .select(['flag_key', 'unknown_key'])
      .orderBy('flag_key')
      .execute();
    expect(unknown.map((row) => [row.flag_key, row.unknown_key])).toEqual([
      ['new-checkout', 0],
      ['new-checkout', 0],
      ['new-chekout', 1],
    ]);
    expect((await flagList()).map((item) => [item.key, item.codeReferences])).toEqual([
      ['dark-mode', 0],
      ['new-checkout', 2],
    ]);
  });

  it('the flag list counts the default branch only; PATCH moves it and sets the link template', async () => {
    await upload(
      'acme/shop',
      'feature',
      scan([reference('dark-mode', 'src/theme.ts', 4), reference('dark-mode', 'src/a b.ts', 9)]),
    );
    expect((await flagList()).find((flag) => flag.key === 'dark-mode')?.codeReferences).toBe(0);
    const patched = await call(vexil, 'PATCH', `${base}/code-references/repositories/acme%2Fshop`, {
      token: org.token,
      body: {
        defaultBranch: 'feature',
        sourceUrlTemplate: 'https://github.com/acme/shop/blob/{commit}/{path}#L{line}',
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.defaultBranch).toBe('feature');
    expect((await flagList()).find((flag) => flag.key === 'dark-mode')?.codeReferences).toBe(2);
    const flag = await call(vexil, 'GET', `${base}/flags/dark-mode/code-references`, {
      token: org.token,
    });
    expect(
      flag.body.repositories[0].branches[0].references.map((r: { url: string }) => r.url),
    ).toEqual([
      'https://github.com/acme/shop/blob/c0ffee/src/a%20b.ts#L9',
      'https://github.com/acme/shop/blob/c0ffee/src/theme.ts#L4',
    ]);
    const bad = await call(vexil, 'PATCH', `${base}/code-references/repositories/acme%2Fshop`, {
      token: org.token,
      body: { sourceUrlTemplate: 'javascript:alert(1)' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.fields).toHaveProperty('sourceUrlTemplate');
    await call(vexil, 'PATCH', `${base}/code-references/repositories/acme%2Fshop`, {
      token: org.token,
      body: { defaultBranch: 'main' },
    });
  });

  it('a new upload replaces the branch whole and emits the counts that changed', async () => {
    expect(
      (
        await upload(
          'acme/shop',
          'main',
          scan([reference('new-checkout', 'src/api.ts', 3)], 'beef'),
        )
      ).status,
    ).toBe(204);
    const flag = await call(vexil, 'GET', `${base}/flags/new-checkout/code-references`, {
      token: org.token,
    });
    expect(flag.body.repositories[0].branches[0]).toMatchObject({ commit: 'beef' });
    expect(flag.body.repositories[0].branches[0].references).toHaveLength(1);
    const audit = await call(vexil, 'GET', '/api/v1/orgs/acme/audit-log?limit=100', {
      token: org.token,
    });
    const updates = audit.body.items.filter(
      (item: { type: string }) => item.type === 'code_references.updated',
    );
    expect(updates[0].changes).toEqual([
      { property: 'new-checkout', from: '2', to: '1' },
      { property: 'new-chekout', from: '1', to: '0' },
    ]);
  });

  it('bad uploads are refused whole: 413 past 100,000 references with the counts, 400 for a long path or another repository', async () => {
    const many = Array.from({ length: 100_001 }, (_, index) => ({
      path: 'a.ts',
      line: index + 1,
      column: 1,
      kind: 'call',
      key: 'new-checkout',
    }));
    const tooMany = await upload('acme/shop', 'main', { ...scan([]), references: many });
    expect(tooMany.status).toBe(413);
    expect(tooMany.body).toMatchObject({ error: 'payload_too_large' });
    expect(tooMany.body.message).toContain('100001 references');
    const longPath = await upload('acme/shop', 'main', scan([reference('x', 'a'.repeat(1025), 1)]));
    expect(longPath.status).toBe(400);
    expect(longPath.body.error).toBe('validation_failed');
    const other = await upload('acme/shop', 'main', { ...scan([]), repository: 'acme/other' });
    expect(other.status).toBe(400);
    expect(other.body.fields).toHaveProperty('repository');
    const flag = await call(vexil, 'GET', `${base}/flags/new-checkout/code-references`, {
      token: org.token,
    });
    expect(flag.body.repositories[0].branches[0].references).toHaveLength(1);
  });

  it('a Viewer reads references but cannot upload', async () => {
    const viewer = await createMember(vexil, org.orgId, 'Viewer');
    expect((await upload('acme/shop', 'main', scan([]), viewer.token)).status).toBe(403);
    const read = await call(vexil, 'GET', `${base}/flags/new-checkout/code-references`, {
      token: viewer.token,
    });
    expect(read.status).toBe(200);
  });

  it('archiving a flag code still reads answers FLAG_STILL_REFERENCED naming the places, unless forced', async () => {
    const refused = await call(vexil, 'POST', `${base}/flags/new-checkout/archive`, {
      token: org.token,
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      error: 'FLAG_STILL_REFERENCED',
      fields: { places: ['acme/shop:src/api.ts:3'] },
    });
    // A reference on a branch other than the default does not hold the flag back.
    await createFlag('feature-only');
    await upload('acme/shop', 'feature', scan([reference('feature-only', 'src/f.ts', 1)]));
    expect(
      (await call(vexil, 'POST', `${base}/flags/feature-only/archive`, { token: org.token }))
        .status,
    ).toBe(204);
    const forced = await call(vexil, 'POST', `${base}/flags/new-checkout/archive?force=true`, {
      token: org.token,
    });
    expect(forced.status).toBe(204);
    await call(vexil, 'POST', `${base}/flags/new-checkout/restore`, { token: org.token });
  });

  it('removal candidates carry their references; references=none lists those safe to archive', async () => {
    await call(vexil, 'POST', `${base}/flags/dark-mode/environments/production/toggle`, {
      token: org.token,
      body: { enabled: true },
    });
    await call(vexil, 'POST', `${base}/flags/new-checkout/environments/production/toggle`, {
      token: org.token,
      body: { enabled: true },
    });
    for (let day = 0; day < 4; day += 1) {
      for (const flagKey of ['dark-mode', 'new-checkout']) {
        const evaluated = await call(vexil, 'POST', '/v1/sdk/evaluate', {
          token: sdkKey,
          body: { flagKey, context: {} },
        });
        expect(evaluated.status).toBe(200);
      }
      clock.advance(8 * DAY_MS);
    }
    const candidates = async (query: string) =>
      (
        await call(vexil, 'GET', `${base}/flags/removal-candidates?staleness=stale${query}`, {
          token: org.token,
        })
      ).body.items.map((item: { key: string; codeReferences: number | null }) => [
        item.key,
        item.codeReferences,
      ]);
    expect(await candidates('')).toEqual([
      ['dark-mode', 0],
      ['new-checkout', 1],
    ]);
    expect(await candidates('&references=none')).toEqual([['dark-mode', 0]]);
    expect(await candidates('&references=some')).toEqual([['new-checkout', 1]]);
  });

  it('deleting a repository forgets its references', async () => {
    const deleted = await call(
      vexil,
      'DELETE',
      `${base}/code-references/repositories/acme%2Fshop`,
      {
        token: org.token,
      },
    );
    expect(deleted.status).toBe(204);
    expect((await flagList()).every((flag) => flag.codeReferences === null)).toBe(true);
    const again = await call(vexil, 'DELETE', `${base}/code-references/repositories/acme%2Fshop`, {
      token: org.token,
    });
    expect(again.status).toBe(404);
  });
});
