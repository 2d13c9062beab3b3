import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dialect } from '../db/database.js';
import { foldVersionBumps } from '../db/environment-versions.js';
import type { Schema } from '../db/schema.js';
import { EVENTS_BODY_LIMIT_BYTES } from '../evaluation/events-routes.js';
import { seedOneOfEverything as seed, type Fixtures } from '../test-support/one-of-everything.js';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
  testWebhookSettings,
} from '../test-support/harness.js';

/**
 * Input hardening (issue 6, SECURITY.md "Input limits"): every management and evaluation route,
 * read from the OpenAPI document, is sent hostile input that is invalid by construction —
 * arbitrary JSON of the wrong shape, wrong types, 100 KB strings, 5,000 levels of nesting,
 * lone surrogates, NUL and bidi marks, malformed JSON, foreign media types, garbage
 * credentials, unknown path references and oversized bodies. The answer is always a 4xx in the
 * API's own error shape, never a 500, and the database is byte-for-byte unchanged.
 */

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type Method = (typeof METHODS)[number];
type Api = 'management' | 'evaluation' | 'ofrep';

interface JsonSchema {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  maxLength?: number;
  pattern?: string;
}

interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  schema: JsonSchema;
}

interface Route {
  id: string;
  api: Api;
  method: Method;
  path: string;
  params: Parameter[];
  body: JsonSchema | undefined;
}

/** A request to send: everything already encoded. */
interface Attempt {
  label: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

const MIB = 1024 * 1024;
const HUGE = 100 * 1024;
const DEPTH = 5000;

/** Strings that break naive code: lone surrogates, NUL, bidi and zero-width marks, astral planes. */
const EDGE_PIECES = [
  '\uD800',
  '\uDFFF',
  '\u0000',
  '\u200F',
  '\u202E',
  '\u2066',
  '\uFEFF',
  '\u0301',
  '\u2028',
  '\uFFFF',
  '𝔘𝔫𝔦',
  '%',
  '../',
  "'; --",
  '${x}',
];
const edgeString = fc
  .array(fc.oneof(fc.constantFrom(...EDGE_PIECES), fc.string({ unit: 'binary', maxLength: 8 })), {
    minLength: 1,
    maxLength: 6,
  })
  .map((parts) => parts.join(''));
const hugeString = fc.constantFrom('x', 'é', '\u202E', '\u0000').map((c) => c.repeat(HUGE));

/** JSON text spliced in as is: nesting this deep would overflow `JSON.stringify` in the test. */
class RawJson {
  constructor(
    readonly text: string,
    readonly type: 'array' | 'object',
  ) {}
}
const deep = fc.constantFrom(
  new RawJson(`${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`, 'array'),
  new RawJson(`${'{"a":'.repeat(DEPTH)}{}${'}'.repeat(DEPTH)}`, 'object'),
);

/** JSON text of a value whose nested {@link RawJson} parts are spliced in. */
function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([name, member]) => `${JSON.stringify(name)}:${toJson(member)}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

type JsonType = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

function jsonType(value: unknown): JsonType {
  if (value instanceof RawJson) return value.type;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as JsonType;
}

/** The JSON types a schema admits, or null when it admits anything. */
function admittedTypes(schema: JsonSchema): Set<JsonType> | null {
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) {
    const union = new Set<JsonType>();
    for (const branch of branches) {
      const types = admittedTypes(branch);
      if (!types) return null;
      types.forEach((type) => union.add(type));
    }
    return union;
  }
  if (schema.enum) return new Set(schema.enum.map(jsonType));
  if (schema.const !== undefined) return new Set([jsonType(schema.const)]);
  if (!schema.type) return null;
  const types = new Set((Array.isArray(schema.type) ? schema.type : [schema.type]) as JsonType[]);
  if (types.has('number')) types.add('integer');
  return types;
}

/** Any JSON value, hostile ones included. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  edgeString,
  hugeString,
  deep,
  fc.jsonValue({ maxDepth: 3 }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
);

/** A value the property's schema refuses, or null when it accepts anything. */
function refusedValue(schema: JsonSchema): fc.Arbitrary<unknown> | null {
  const types = admittedTypes(schema);
  if (!types) return null;
  const choices: fc.Arbitrary<unknown>[] = [
    anyValue.filter((value) => !types.has(jsonType(value))),
  ];
  const strings = [schema, ...(schema.anyOf ?? [])].filter((s) => s.type === 'string');
  if (strings.length > 0 && strings.every((s) => s.maxLength !== undefined && s.maxLength < HUGE))
    choices.push(hugeString);
  if (strings.length > 0 && strings.every((s) => s.pattern)) {
    const patterns = strings.map((s) => new RegExp(s.pattern!, 'u'));
    choices.push(edgeString.filter((value) => patterns.every((p) => !p.test(value))));
  }
  if (schema.enum && types.size === 1 && types.has('string'))
    choices.push(edgeString.filter((value) => !schema.enum!.includes(value)));
  return fc.oneof(...choices);
}

/** A JSON body the schema refuses: the wrong top-level shape, or one property it refuses. */
function refusedBody(schema: JsonSchema): fc.Arbitrary<string> {
  const topLevel = anyValue.filter((value) => jsonType(value) !== 'object');
  const properties = Object.entries(schema.properties ?? {}).flatMap(([name, property]) => {
    const refused = refusedValue(property);
    return refused ? [refused.map((value) => ({ name, value }))] : [];
  });
  const shapes: fc.Arbitrary<unknown>[] = [topLevel];
  if (properties.length > 0)
    shapes.push(
      fc
        .tuple(fc.oneof(...properties), fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })))
        .map(([{ name, value }, extra]) => ({ ...extra, [name]: value })),
    );
  return fc.oneof(...shapes).map(toJson);
}

/** Text that is not JSON at all. */
const malformedJson = fc.oneof(
  fc.constantFrom('{', '{"a":', '[1,]', "{'a':1}", 'NaN', '{"a":1}}', '\u0000', '{"__proto__":{}}'),
  edgeString.filter((text) => {
    try {
      JSON.parse(text);
      return false;
    } catch {
      return true;
    }
  }),
);

/** A path segment or query value, percent-encoded; lone surrogates become invalid UTF-8. */
function encode(text: string): string {
  let encoded = '';
  for (const character of text) {
    try {
      encoded += encodeURIComponent(character);
    } catch {
      encoded += '%ED%A0%80';
    }
  }
  return encoded;
}

const pathGarbage = fc.oneof(
  edgeString,
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.constantFrom(
    'x'.repeat(2000),
    'web\u0000',
    '%',
    '%zz',
    '%C0%AF',
    '..',
    '00000000-0000-7000-8000-000000000000',
  ),
);

/** Authorization headers that name no credential (printable: anything else is not a header). */
const garbageCredential = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', maxLength: 80 }),
  fc
    .constantFrom('Bearer ', 'bearer ', 'Basic ', '', 'Bearer vxl_pat_', 'vxl_srv_', 'vxl_cli_')
    .chain((prefix) =>
      fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 60 }).map((s) => prefix + s),
    ),
);

function integerQueryGarbage(schema: JsonSchema): fc.Arbitrary<string> {
  const max = (schema as { maximum?: number }).maximum ?? Number.MAX_SAFE_INTEGER;
  const min = (schema as { minimum?: number }).minimum ?? Number.MIN_SAFE_INTEGER;
  return fc
    .oneof(
      edgeString,
      fc.constantFrom('0', '-1', '1.5', '1e400', 'NaN', String(max + 1), String(min - 1), ''),
    )
    .filter((text) => {
      const number = Number(text);
      return text.trim() === '' || !(Number.isInteger(number) && number >= min && number <= max);
    });
}

function cursorGarbage(): fc.Arbitrary<string> {
  return fc.oneof(edgeString, fc.string(), fc.constant('x'.repeat(600))).filter((text) => {
    // An empty cursor is no cursor: the first page, rightly.
    if (text === '') return false;
    try {
      const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
      return !(Array.isArray(value) && value.length === 2 && typeof value[1] === 'string');
    } catch {
      return true;
    }
  });
}

function apiOf(path: string): Api | null {
  if (path.startsWith('/api/v1/')) return 'management';
  if (path.startsWith('/v1/')) return 'evaluation';
  if (path.startsWith('/ofrep/v1/')) return 'ofrep';
  return null;
}

/** Every route of the three APIs, as the OpenAPI document publishes it. */
function routesOf(vexil: TestVexil): Route[] {
  const document = vexil.app.swagger() as {
    paths: Record<
      string,
      Record<
        string,
        {
          parameters?: Parameter[];
          requestBody?: { content: Record<string, { schema: JsonSchema }> };
        }
      >
    >;
  };
  const routes: Route[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    const api = apiOf(path);
    if (!api) continue;
    for (const [name, operation] of Object.entries(operations)) {
      const method = name.toUpperCase() as Method;
      if (!METHODS.includes(method)) continue;
      const content = operation.requestBody?.content;
      routes.push({
        id: `${method} ${path}`,
        api,
        method,
        path,
        params: operation.parameters ?? [],
        body: content ? Object.values(content)[0]?.schema : undefined,
      });
    }
  }
  return routes;
}

/** Routes that hold the connection open on success: only ever sent requests that fail first. */
const STREAMS = new Set([
  'GET /v1/sdk/stream',
  'GET /v1/client/stream',
  'POST /v1/client/stream',
  'GET /v1/ofrep/events',
]);

/** Valid evaluation bodies, so that a garbage credential is the only fault. */
function validEvaluationBody(route: Route): string | undefined {
  if (route.method !== 'POST') return undefined;
  if (route.path.endsWith('/events')) return '{"events":[]}';
  if (route.path === '/v1/sdk/evaluate') return '{"flagKey":"new-checkout","context":{}}';
  return '{"context":{}}';
}

function credentialFor(route: Route, keys: { server: string; client: string }, owner: string) {
  if (route.api === 'management') return `Bearer ${owner}`;
  return route.path.startsWith('/v1/client/') ? keys.client : `Bearer ${keys.server}`;
}

/** The hostile requests a route can be sent, each invalid by construction. */
function attemptsFor(route: Route, fixtures: Fixtures, credential: string): fc.Arbitrary<Attempt> {
  const pathParams = route.params.filter((p) => p.in === 'path');
  for (const param of pathParams)
    if (!(param.name in fixtures)) throw new Error(`no fixture for {${param.name}} (${route.id})`);
  const url = (overrides: Record<string, string> = {}, query = '') =>
    route.path.replace(
      /\{(\w+)\}/g,
      (_, name: string) => overrides[name] ?? encode(fixtures[name]!),
    ) + query;
  const json = { 'content-type': 'application/json' };
  const authorized = { authorization: credential };
  const stream = STREAMS.has(route.id);
  const knownValues = new Set(Object.values(fixtures));
  const choices: fc.Arbitrary<Attempt>[] = [];

  // A credential that is not one: 401 before anything else happens.
  const validBody = route.api === 'management' ? undefined : validEvaluationBody(route);
  choices.push(
    garbageCredential.map((header) => ({
      label: `credential ${JSON.stringify(header)}`,
      url: url(),
      headers: { ...(header ? { authorization: header } : {}), ...(validBody ? json : {}) },
      ...(validBody ? { payload: validBody } : {}),
    })),
  );
  if (stream) return fc.oneof(...choices);

  const body = route.body;
  if (body) {
    choices.push(
      refusedBody(body).map((payload) => ({
        label: `body ${payload.slice(0, 120)}`,
        url: url(),
        headers: { ...authorized, ...json },
        payload,
      })),
      malformedJson.map((payload) => ({
        label: `malformed ${JSON.stringify(payload)}`,
        url: url(),
        headers: { ...authorized, ...json },
        payload,
      })),
      fc
        .constantFrom(
          Buffer.from('["\xff\xfe"]', 'latin1'),
          Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0xc0, 0xaf, 0x7d]),
        )
        .map((payload) => ({
          label: 'invalid UTF-8',
          url: url(),
          headers: { ...authorized, ...json },
          payload,
        })),
      fc.constantFrom('text/plain', 'application/xml', 'multipart/form-data').map((type) => ({
        label: `media type ${type}`,
        url: url(),
        headers: { ...authorized, 'content-type': type },
        payload: '{}',
      })),
    );
  }
  // A reference to nothing in one path segment (with a refused body: nothing may change).
  if (pathParams.length > 0) {
    const refused = body ? refusedBody(body) : fc.constant(undefined);
    choices.push(
      fc
        .tuple(
          fc.constantFrom(...pathParams.map((p) => p.name)),
          pathGarbage.filter((text) => !knownValues.has(text)),
          refused,
        )
        .map(([name, garbage, payload]) => ({
          label: `{${name}} = ${JSON.stringify(garbage.slice(0, 80))}`,
          url: url({ [name]: encode(garbage) }),
          headers: { ...authorized, ...(payload !== undefined ? json : {}) },
          ...(payload !== undefined ? { payload } : {}),
        })),
    );
  }
  // A query parameter of the wrong type or out of range.
  for (const param of route.params.filter((p) => p.in === 'query')) {
    const garbage =
      param.schema.type === 'integer'
        ? integerQueryGarbage(param.schema)
        : param.schema.type === 'boolean'
          ? edgeString.filter((text) => text !== 'true' && text !== 'false')
          : param.name === 'cursor'
            ? cursorGarbage()
            : null;
    if (!garbage) continue;
    choices.push(
      garbage.map((value) => ({
        label: `?${param.name}=${JSON.stringify(value.slice(0, 80))}`,
        url: url({}, `?${param.name}=${encode(value)}`),
        headers: authorized,
      })),
    );
  }
  return fc.oneof(...choices);
}

/** The body larger than the route accepts, or null for routes that take none. */
function oversizedAttempt(route: Route, fixtures: Fixtures, credential: string): Attempt | null {
  if (route.method === 'GET' || STREAMS.has(route.id)) return null;
  const limit = route.path.endsWith('/events') ? EVENTS_BODY_LIMIT_BYTES : MIB;
  return {
    label: `oversized body (${limit + 16} bytes)`,
    url: route.path.replace(/\{(\w+)\}/g, (_, name: string) => encode(fixtures[name]!)),
    headers: { authorization: credential, 'content-type': 'application/json' },
    payload: `{"a":"${'x'.repeat(limit + 8)}"}`,
  };
}

function expectErrorShape(route: Route, attempt: Attempt, status: number, text: string): void {
  const label = `${route.id} — ${attempt.label}: ${status} ${text.slice(0, 300)}`;
  expect(status, label).toBeGreaterThanOrEqual(400);
  expect(status, label).toBeLessThan(500);
  const body = JSON.parse(text) as Record<string, unknown>;
  if (route.api === 'management') {
    expect(body.error, label).toEqual(expect.any(String));
    expect(body.message, label).toEqual(expect.any(String));
    expect(body.docs_url, label).toEqual(expect.any(String));
    expect(body.fields, label).toEqual(expect.any(Object));
  } else if (route.api === 'evaluation') {
    expect(body.type, label).toEqual(expect.any(String));
    expect(body.title, label).toEqual(expect.any(String));
    expect(body.status, label).toBe(status);
  } else {
    expect(body.errorDetails, label).toEqual(expect.any(String));
    if (body.errorCode !== undefined) expect(body.errorCode, label).toEqual(expect.any(String));
  }
}

/** Every row of every table, in a stable order: what "the data is unchanged" compares. */
async function snapshot(vexil: TestVexil): Promise<Record<string, string[]>> {
  const tables: (keyof Schema)[] = [
    'organizations',
    'users',
    'memberships',
    'api_tokens',
    'projects',
    'environments',
    'flags',
    'variations',
    'flag_environments',
    'rules',
    'segments',
    'sdk_keys',
    'webhook_subscriptions',
    'webhook_secrets',
    'webhook_events',
    'webhook_deliveries',
    'webhook_attempts',
    'idempotency_keys',
    'flag_usage',
    'custom_event_usage',
  ];
  // Environment versions are folded on a timer; folded first, a fold between two snapshots has
  // nothing left to move, while a version a request bumped still shows.
  await foldVersionBumps(vexil.services.db);
  const rows: Record<string, string[]> = {};
  for (const table of tables) {
    const all = await vexil.services.db.selectFrom(table).selectAll().execute();
    // A credential that authenticated records its use (and its person's), whatever the request's
    // fate afterwards: written with a usage flush, which may fall between two snapshots.
    rows[table] = all.map((row) => JSON.stringify(withoutLastUse(table, row))).sort();
  }
  return rows;
}

/** A row without the time its credential or person was last seen (design record 048). */
function withoutLastUse(table: keyof Schema, row: object): object {
  if (table === 'sdk_keys' || table === 'api_tokens') return { ...row, last_used_at: null };
  if (table === 'users') return { ...row, last_seen_at: null };
  return row;
}

function sweep(dialect: Dialect, numRuns: number) {
  describe(`input hardening on ${dialect} (${numRuns} runs per route)`, () => {
    let vexil: TestVexil;
    let seeded: Awaited<ReturnType<typeof seed>>;
    let routes: Route[] = [];

    beforeAll(async () => {
      vexil = await createTestVexil(dialect, {
        clock: new TestClock(),
        config: {
          rateLimit: { points: 10_000_000, windowSeconds: 60 },
          clientEventsRateLimit: { points: 10_000_000, windowSeconds: 60 },
          webhooks: testWebhookSettings({ retryScheduleMs: [1000] }),
        },
      });
      seeded = await seed(vexil);
      routes = routesOf(vexil);
    });
    afterAll(() => vexil.close());

    it('covers every route of the three APIs', () => {
      const apis = new Set(routes.map((route) => route.api));
      expect([...apis].sort()).toEqual(['evaluation', 'management', 'ofrep']);
      expect(routes.length).toBeGreaterThan(60);
    });

    it('every route refuses hostile input with a 4xx in its own shape and changes nothing', async () => {
      for (const route of routes) {
        const credential = credentialFor(route, seeded.keys, seeded.owner);
        const before = await snapshot(vexil);
        const send = async (attempt: Attempt) => {
          const response = await vexil.inject({
            method: route.method,
            url: attempt.url,
            headers: attempt.headers,
            ...(attempt.payload !== undefined ? { payload: attempt.payload } : {}),
          });
          expectErrorShape(route, attempt, response.statusCode, response.body);
        };
        await fc.assert(fc.asyncProperty(attemptsFor(route, seeded.fixtures, credential), send), {
          numRuns,
          seed: 6,
          endOnFailure: true,
        });
        const oversized = oversizedAttempt(route, seeded.fixtures, credential);
        if (oversized) await send(oversized);
        expect(await snapshot(vexil), `${route.id} changed the data`).toEqual(before);
      }
    }, 120_000);
  });
}

sweep('sqlite', 25);
sweep('postgres', 4);

// Found by the sweep: PostgreSQL text cannot hold U+0000, so NUL reached the database as a 500
// (management) or stopped every later usage flush (events). Checked here on purpose, not by luck.
describe.each(testDialects())('NUL characters on %s', (dialect) => {
  let vexil: TestVexil;
  let owner: string;
  let sdkKey: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    owner = org.token;
    sdkKey = (await createProjectWithFlag(vexil, org)).sdkKey;
  });
  afterAll(() => vexil.close());

  it('in a management path, query or body: 400, nothing stored', async () => {
    for (const url of [
      '/api/v1/orgs/ac%00me',
      '/api/v1/orgs/acme/projects/web%00',
      '/api/v1/orgs/acme/projects/web/flags?q=a%00',
    ]) {
      const response = await call(vexil, 'GET', url, { token: owner });
      expect(response.status, url).toBe(400);
      expect(response.body.error).toBe('bad_request');
    }
    const created = await call(vexil, 'POST', '/api/v1/orgs/acme/projects/web/flags', {
      token: owner,
      body: { key: 'nul', name: 'a\u0000b' },
    });
    expect(created.status).toBe(400);
    expect(created.body.fields).toEqual({ name: [expect.stringContaining('NUL')] });
    const flag = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web/flags/nul', {
      token: owner,
    });
    expect(flag.status).toBe(404);
  });

  it('in an event key: that event is discarded and later counts still land', async () => {
    const events = [
      { type: 'Custom', flagKey: 'poison\u0000' },
      { type: 'Evaluation', flagKey: 'new-checkout', variation: 'true\u0000' },
      { type: 'Custom', flagKey: 'checkout-completed' },
    ];
    const response = await call(vexil, 'POST', '/v1/sdk/events', {
      token: sdkKey,
      body: { events },
    });
    expect(response.status).toBe(202);
    await vexil.services.usage.flush();
    const rows = await vexil.services.db.selectFrom('custom_event_usage').selectAll().execute();
    expect(rows.map((row) => row.event_key)).toEqual(['checkout-completed']);
    expect(await vexil.services.db.selectFrom('flag_usage').selectAll().execute()).toEqual([]);
  });
});
