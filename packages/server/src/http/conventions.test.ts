import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7 as uuid } from 'uuid';
import {
  call,
  createOrg,
  createTestVexil,
  testDialects,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';
import { ERROR_CODES } from '../errors.js';

/** Management API conventions (spec: Conventions, Error envelope, Paged result). */
describe.each(testDialects())('management conventions on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  const projects = '/api/v1/orgs/acme/projects';
  const emitted = new Set<string>();

  function expectEnvelope(response: TestResponse, status: number, code: string): void {
    expect(response.status, response.text).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toMatchObject({
      error: code,
      message: expect.any(String),
      docs_url: `${vexil.config.publicUrl}/docs/errors#${code}`,
      fields: expect.any(Object),
    });
    emitted.add(code);
  }

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    org = await createOrg(vexil);
  });
  afterAll(() => vexil.close());

  const send = (method: 'POST' | 'PATCH', url: string, contentType: string, payload: string) =>
    call(vexil, method, url, {
      token: org.token,
      body: payload,
      headers: { 'content-type': contentType },
    });

  it('accepts application/json, text/json and application/*+json bodies', async () => {
    const json = await send(
      'POST',
      projects,
      'application/json; charset=utf-8',
      '{"key":"a","name":"A"}',
    );
    expect(json.status).toBe(201);
    const text = await send('POST', projects, 'text/json', '{"key":"b","name":"B"}');
    expect(text.status).toBe(201);
    const patch = await send(
      'PATCH',
      `${projects}/b`,
      'application/merge-patch+json',
      '{"name":"Bee"}',
    );
    expect(patch.status).toBe(200);
    expect(patch.body.name).toBe('Bee');
  });

  it('text/plain is 415 unsupported_media_type naming application/json', async () => {
    const response = await send('POST', projects, 'text/plain', '{"key":"c","name":"C"}');
    expectEnvelope(response, 415, 'unsupported_media_type');
    expect(response.body.message).toContain('application/json');
  });

  it('malformed JSON is 400 malformed_json with the line and column', async () => {
    const response = await send('POST', projects, 'application/json', '{"key": "c",');
    expectEnvelope(response, 400, 'malformed_json');
    expect(response.body.message).toMatch(
      /^The request body is not valid JSON at line 1, column 13: /,
    );
    const second = await send(
      'POST',
      projects,
      'application/json',
      '{\n  "key": "c"\n  "name": "C"\n}',
    );
    expect(second.body.message).toBe(
      "The request body is not valid JSON at line 3, column 3: Expected ',' or '}' after property value.",
    );
  });

  it('an unknown route suggests the routes it nearly names in did_you_mean', async () => {
    const typo = await call(vexil, 'GET', '/api/v1/orgs/acme/projetcs?limit=5', {
      token: org.token,
    });
    expectEnvelope(typo, 404, 'not_found');
    expect(typo.body.did_you_mean).toEqual(['/api/v1/orgs/acme/projects']);
    const far = await call(vexil, 'GET', '/api/v1/orgs/acme/zzzzzzzzzz', { token: org.token });
    expectEnvelope(far, 404, 'not_found');
    expect(far.body.did_you_mean).toBeUndefined();
  });

  it('an SDK key sent as a bearer token is named as such', async () => {
    const response = await call(vexil, 'GET', projects, {
      headers: { authorization: 'Bearer vxl_srv_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
    });
    expectEnvelope(response, 401, 'unauthorized');
    expect(response.body.message).toMatch(
      /^The bearer token is a server-side SDK key, which only the evaluation API/,
    );
  });

  it('an invalid body is 400 validation_failed naming the field', async () => {
    const response = await send('POST', projects, 'application/json', '{"name":"no key"}');
    expectEnvelope(response, 400, 'validation_failed');
    expect(response.body.fields).toHaveProperty('key');
  });

  it('an unknown route is 404 not_found in the envelope', async () => {
    const response = await call(vexil, 'GET', '/api/v1/no-such-thing', { token: org.token });
    expectEnvelope(response, 404, 'not_found');
  });

  it('a known path with a wrong method is 405 method_not_allowed with Allow', async () => {
    const me = await call(vexil, 'DELETE', '/api/v1/me', { token: org.token });
    expectEnvelope(me, 405, 'method_not_allowed');
    expect(me.headers.allow).toBe('GET, HEAD');
    expect(me.body.message).toBe('DELETE is not allowed on /api/v1/me; it accepts GET, HEAD.');
    // Path parameters match too, and the query string is ignored.
    const projectsPut = await call(vexil, 'PUT', `${projects}?limit=5`, { token: org.token });
    expectEnvelope(projectsPut, 405, 'method_not_allowed');
    expect(String(projectsPut.headers.allow).split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);
    const project = await call(vexil, 'POST', `${projects}/no-such-project`, { token: org.token });
    expectEnvelope(project, 405, 'method_not_allowed');
    expect(String(project.headers.allow).split(', ').sort()).toEqual([
      'DELETE',
      'GET',
      'HEAD',
      'PATCH',
    ]);
  });

  it('a missing credential is 401 unauthorized', async () => {
    expectEnvelope(await call(vexil, 'GET', projects), 401, 'unauthorized');
  });

  describe('pagination', () => {
    const keys: string[] = [];

    beforeAll(async () => {
      const now = vexil.services.clock.now().toISOString();
      const rows = Array.from({ length: 55 }, (_, i) => ({
        id: uuid(),
        organization_id: org.orgId,
        key: `page-${String(i).padStart(2, '0')}`,
        name: `Page ${i}`,
        description: null,
        change_request_count: 0,
        created_at: now,
        updated_at: now,
      }));
      await vexil.services.db.insertInto('projects').values(rows).execute();
      const all = await vexil.services.db
        .selectFrom('projects')
        .select('key')
        .where('organization_id', '=', org.orgId)
        .execute();
      keys.push(...all.map((row) => row.key));
    });

    async function walk(limit: number): Promise<string[][]> {
      const pages: string[][] = [];
      let cursor: string | null = null;
      do {
        const query: string = `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
        const page = await call(vexil, 'GET', `${projects}${query}`, { token: org.token });
        expect(page.status).toBe(200);
        pages.push(page.body.items.map((item: { key: string }) => item.key));
        cursor = page.body.next_cursor;
      } while (cursor !== null);
      return pages;
    }

    it('limit and cursor walk every item exactly once', async () => {
      const pages = await walk(7);
      expect(pages.slice(0, -1).every((page) => page.length === 7)).toBe(true);
      const seen = pages.flat();
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort()).toEqual([...keys].sort());
      expect(pages.flat()).toEqual((await walk(7)).flat());
    });

    it('cursors are stable: re-reading a page gives the same items, new rows do not duplicate', async () => {
      const first = await call(vexil, 'GET', `${projects}?limit=10`, { token: org.token });
      const cursor = first.body.next_cursor as string;
      const second = await call(vexil, 'GET', `${projects}?limit=10&cursor=${cursor}`, {
        token: org.token,
      });
      await call(vexil, 'POST', projects, { token: org.token, body: { key: 'late', name: 'L' } });
      const again = await call(vexil, 'GET', `${projects}?limit=10&cursor=${cursor}`, {
        token: org.token,
      });
      expect(again.body.items).toEqual(second.body.items);
      const firstKeys = first.body.items.map((item: { key: string }) => item.key);
      for (const item of again.body.items) expect(firstKeys).not.toContain(item.key);
    });

    it('the default page size is 50 and the maximum 200', async () => {
      const page = await call(vexil, 'GET', projects, { token: org.token });
      expect(page.body.items).toHaveLength(50);
      expect(page.body.next_cursor).toEqual(expect.any(String));
      const max = await call(vexil, 'GET', `${projects}?limit=200`, { token: org.token });
      expect(max.body.next_cursor).toBeNull();
      expectEnvelope(
        await call(vexil, 'GET', `${projects}?limit=201`, { token: org.token }),
        400,
        'validation_failed',
      );
      expectEnvelope(
        await call(vexil, 'GET', `${projects}?limit=0`, { token: org.token }),
        400,
        'validation_failed',
      );
    });

    it('a cursor this endpoint did not return is 400', async () => {
      for (const cursor of ['garbage', Buffer.from('[1]').toString('base64url')]) {
        const response = await call(vexil, 'GET', `${projects}?cursor=${cursor}`, {
          token: org.token,
        });
        expectEnvelope(response, 400, 'validation_failed');
        expect(response.body.fields).toHaveProperty('cursor');
      }
    });
  });

  it('every docs_url resolves to an entry of the error reference', async () => {
    const page = await call(vexil, 'GET', '/docs/errors');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(emitted.size).toBeGreaterThan(4);
    for (const code of [...emitted, ...Object.keys(ERROR_CODES)]) {
      expect(page.text, code).toContain(`id="${code}"`);
    }
    // Entry texts are Markdown, rendered: code spans are <code>, no backtick is left showing.
    expect(page.text).toContain('<code>retry_after</code>');
    expect(page.text).toContain('<code>application/*+json</code>');
    expect(page.text).not.toContain('`');
  });
});
