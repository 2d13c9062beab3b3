import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createOrg,
  createTestVexil,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';

/** Just enough of a JSON schema to find a body's fields and the patterns it holds. */
interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  allOf?: Schema[];
  pattern?: string;
}

interface Operation {
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

/** Words of the validator that a person should never read. */
const VALIDATOR_WORDS = ['anyOf', 'oneOf', 'must match a schema', 'must match pattern', 'must NOT'];

/** Values of every JSON type, plus a few that break common limits (length, range, pattern). */
const WRONG_VALUES: unknown[] = [
  12345,
  'Not a Key!',
  true,
  null,
  [],
  {},
  1e9,
  -1,
  '',
  'x'.repeat(70_000),
];

function patternsOf(schema: Schema): string[] {
  return [
    ...(schema.pattern ? [schema.pattern] : []),
    ...Object.values(schema.properties ?? {}).flatMap(patternsOf),
    ...(schema.items ? patternsOf(schema.items) : []),
    ...[...(schema.anyOf ?? []), ...(schema.allOf ?? [])].flatMap(patternsOf),
  ];
}

/** The object branches of a schema (an object, an intersection, an object or null). */
function objectProperties(schema: Schema): Record<string, Schema> {
  return Object.assign(
    {},
    schema.properties,
    ...[...(schema.anyOf ?? []), ...(schema.allOf ?? [])].map(objectProperties),
  ) as Record<string, Schema>;
}

/** Wrong values for one field: every kind, and the field's own members each wrong. */
function wrongValuesFor(schema: Schema): unknown[] {
  const members = Object.keys(objectProperties(schema));
  const itemMembers = Object.keys(objectProperties(schema.items ?? {}));
  const everyMember = (keys: string[], value: unknown) =>
    Object.fromEntries(keys.map((key) => [key, value]));
  return [
    ...WRONG_VALUES,
    ...(members.length > 0
      ? [everyMember(members, 12345), everyMember(members, 'Not a Key!')]
      : []),
    ...(itemMembers.length > 0
      ? [[everyMember(itemMembers, 12345)], [everyMember(itemMembers, 'Not a Key!')]]
      : []),
    [12345],
  ];
}

/** Checks a `validation_failed` answer reads as plain sentences: one per field, no validator words. */
function expectPlainWords(response: TestResponse, patterns: string[], label: string): void {
  const { fields, message } = response.body as {
    fields: Record<string, string[]>;
    message: string;
  };
  for (const [field, problems] of Object.entries(fields)) {
    expect(problems, `${label}: ${field}`).toHaveLength(1);
    expect(message, `${label}: the message names ${field}`).toContain(field);
  }
  for (const text of [message, ...Object.values(fields).flat()]) {
    for (const word of [...VALIDATOR_WORDS, ...patterns])
      expect(text, `${label}: "${text}"`).not.toContain(word);
  }
}

describe('validation messages are plain sentences', () => {
  let vexil: TestVexil;
  let token: string;

  beforeAll(async () => {
    // Validation happens before any handler, alike on both databases: SQLite is enough here.
    vexil = await createTestVexil('sqlite', {
      config: { rateLimit: { points: 1_000_000, windowSeconds: 60 } },
    });
    token = (await createOrg(vexil)).token;
    await call(vexil, 'POST', '/api/v1/orgs/acme/projects', {
      token,
      body: { key: 'web', name: 'Web' },
    });
  });
  afterAll(() => vexil.close());

  it('a wrong type, a number out of range and a bad key, as the issue found them', async () => {
    const flag = await call(vexil, 'POST', '/api/v1/orgs/acme/projects/web/flags', {
      token,
      body: {
        key: 'has space',
        name: 5,
        variations: [{ key: 'a', value: 'a', name: 'x'.repeat(201) }],
      },
    });
    expect(flag.status).toBe(400);
    expect(flag.body).toMatchObject({
      error: 'validation_failed',
      message:
        "key must start with a letter or digit, contain only letters, digits, '.', '_' and '-', and not be a UUID; name must be a string or null; variations.0.name must be at most 200 characters long.",
      fields: {
        key: [
          "must start with a letter or digit, contain only letters, digits, '.', '_' and '-', and not be a UUID",
        ],
        name: ['must be a string or null'],
        'variations.0.name': ['must be at most 200 characters long'],
      },
    });
    const rules = '/api/v1/orgs/acme/projects/web/flags/f/environments/production/rules';
    const rule = await call(vexil, 'POST', rules, { token, body: { rolloutPercentage: 150 } });
    expect(rule.body.fields.rolloutPercentage).toEqual(['must be at most 100']);
    const limit = await call(vexil, 'GET', '/api/v1/orgs/acme/projects?limit=500', { token });
    expect(limit.body).toMatchObject({
      message: 'querystring.limit must be at most 200.',
      fields: { 'querystring.limit': ['must be at most 200'] },
    });
  });

  it('every management route: wrong values in every body field read as plain sentences', async () => {
    const document = vexil.app.swagger() as { paths: Record<string, Record<string, Operation>> };
    let routes = 0;
    for (const [path, operations] of Object.entries(document.paths)) {
      if (!path.startsWith('/api/v1/')) continue;
      // Every path segment accepts a key or an id, and a uuid satisfies both; a change request
      // is named by its number.
      const url = path
        .replace('{org}', 'acme')
        .replace('{number}', '1')
        .replace(/\{[^}]+\}/g, '0198c0de-0000-7000-8000-000000000000');
      for (const [method, operation] of Object.entries(operations)) {
        const schema = operation.requestBody?.content?.['application/json']?.schema;
        if (!schema) continue;
        routes++;
        const patterns = patternsOf(schema);
        for (const [field, fieldSchema] of Object.entries(objectProperties(schema))) {
          let refused = 0;
          for (const value of wrongValuesFor(fieldSchema)) {
            const label = `${method.toUpperCase()} ${path} ${field}=${JSON.stringify(value).slice(0, 40)}`;
            const response = await call(vexil, method.toUpperCase() as 'POST', url, {
              token,
              body: { [field]: value },
            });
            expect(response.status, `${label}: ${response.text}`).toBeLessThan(500);
            if (response.body?.error !== 'validation_failed') continue;
            expectPlainWords(response, patterns, label);
            if (Object.keys(response.body.fields).some((name) => name.split('.')[0] === field))
              refused++;
          }
          // A field that accepts anything (a variation value) is the only kind nothing refuses.
          if (Object.keys(fieldSchema).length > 0)
            expect(refused, `${method} ${path}: ${field} was never refused`).toBeGreaterThan(0);
        }
      }
    }
    expect(routes).toBeGreaterThan(15);
  });

  it('the evaluation API words its problem bodies the same way', async () => {
    const created = await call(
      vexil,
      'POST',
      '/api/v1/orgs/acme/projects/web/environments/production/sdk-keys',
      { token, body: { name: 'backend', type: 'ServerSide' } },
    );
    const response = await call(vexil, 'POST', '/v1/sdk/evaluate', {
      headers: { authorization: created.body.key as string },
      body: { flagKey: 5, context: { userId: 42 } },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      title: 'Invalid request',
      detail: 'flagKey must be a string; context.userId must be a string.',
      errors: { flagKey: ['must be a string'], 'context.userId': ['must be a string'] },
    });
  });
});
