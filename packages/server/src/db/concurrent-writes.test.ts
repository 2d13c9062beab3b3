import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../node/full-node.js';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testConfig,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';
import { eventually } from '../test-support/processes.js';
import { openDatabase } from './database.js';

const base = '/api/v1/orgs/acme/projects/web';
/** Of each kind of write, how many are sent at once (five kinds: 150 concurrent requests). */
const EACH = 30;
const range = (prefix: string) => Array.from({ length: EACH }, (_, i) => `${prefix}-${i}`);

/**
 * Bursts of concurrent management writes to one project on PostgreSQL (issue 37, design record
 * 036): creates, toggles, rule writes, segment edits and flags-as-code applies, sent all at once
 * to one node or spread over two nodes on one database. Every request must succeed (no deadlock
 * answered as 500, no busy pool answered as 503), every acknowledged write must be there
 * afterwards, and the configuration version must have moved on every node.
 */
describe('concurrent writes to one project on PostgreSQL', { timeout: 120_000 }, () => {
  let first: TestVexil;
  let second: Vexil;
  let token: string;
  let sdkKey: string;

  beforeAll(async () => {
    first = await createTestVexil('postgres');
    // A second node on the same database, with its own pool and change listener.
    second = await createVexil(testConfig({ databaseUrl: first.databaseUrl }), {
      database: openDatabase(first.databaseUrl),
      logger: false,
      startWorkers: false,
    });
    ({ token } = await createOrg(first, 'acme'));
    ({ sdkKey } = await createProjectWithFlag(first, { token, slug: 'acme' }));
  }, 60_000);

  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  /** Prepares flags, a rule target and segments for one burst; `round` keeps keys apart. */
  async function prepare(round: string) {
    const ok = (method: 'POST' | 'PATCH', url: string, body: unknown) =>
      callOk(first, method, url, token, body);
    for (const key of range(`${round}-t`)) await ok('POST', `${base}/flags`, { key });
    const ruled = (await ok('POST', `${base}/flags`, { key: `${round}-ruled` })) as {
      variations: { id: string }[];
    };
    for (const key of range(`${round}-s`)) await ok('POST', `${base}/segments`, { key });
    const exported = (await callOk(first, 'GET', `${base}/export`, token)) as {
      flags: { key: string }[];
    };
    const template = exported.flags.find((flag) => flag.key === `${round}-ruled`);
    // Left out: segments and the other flags, so that an apply (without prune) changes only its flag.
    return {
      document: { ...exported, segments: [], flags: [] },
      template,
      variationId: ruled.variations[0]!.id,
    };
  }

  async function burst(round: string, nodes: Vexil[]): Promise<TestResponse[]> {
    const { document, template, variationId } = await prepare(round);
    const ruled = `${base}/flags/${round}-ruled/environments/production/rules`;
    const writes: [string, string, unknown][] = [
      ...range(`${round}-c`).map((key): [string, string, unknown] => [
        'POST',
        `${base}/flags`,
        { key },
      ]),
      ...range(`${round}-t`).map((key): [string, string, unknown] => [
        'POST',
        `${base}/flags/${key}/environments/production/toggle`,
        { enabled: true },
      ]),
      ...range(`${round}-r`).map((description): [string, string, unknown] => [
        'POST',
        ruled,
        {
          description,
          variationId,
          conditionGroups: [
            { conditions: [{ attribute: 'user', operator: 'Equals', values: [description] }] },
          ],
        },
      ]),
      ...range(`${round}-s`).map((key): [string, string, unknown] => [
        'PATCH',
        `${base}/segments/${key}`,
        { conditions: [{ attribute: 'team', operator: 'Equals', values: [key] }] },
      ]),
      ...range(`${round}-a`).map((key): [string, string, unknown] => [
        'POST',
        `${base}/apply`,
        { ...document, flags: [{ ...template, key }] },
      ]),
    ];
    return Promise.all(
      writes.map(([method, url, body], i) =>
        call(nodes[i % nodes.length]!, method as 'POST' | 'PATCH', url, { token, body }),
      ),
    );
  }

  /** Every write of the burst is there, read through `node`. */
  async function expectAllPresent(round: string, node: Vexil) {
    const get = (url: string) => callOk(node, 'GET', url, token);
    for (const key of [...range(`${round}-c`), ...range(`${round}-a`)]) {
      expect((await get(`${base}/flags/${key}`)).key).toBe(key);
    }
    for (const key of range(`${round}-t`)) {
      const state = await get(`${base}/flags/${key}/environments/production`);
      expect(state.isEnabled, key).toBe(true);
    }
    const rules = (await get(`${base}/flags/${round}-ruled/environments/production/rules`)) as {
      items: { description: string }[];
    };
    expect(rules.items.map((rule) => rule.description).sort()).toEqual(range(`${round}-r`).sort());
    for (const key of range(`${round}-s`)) {
      const segment = await get(`${base}/segments/${key}`);
      expect(segment.conditions[0].values, key).toEqual([key]);
    }
  }

  const configuration = (node: Vexil) => call(node, 'GET', '/v1/sdk/flags', { token: sdkKey });

  it('one node: every write of a burst answers 2xx and is there afterwards', async () => {
    const before = await configuration(first);
    const answers = await burst('one', [first]);
    expect(answers.filter((answer) => answer.status >= 300).map((answer) => answer.text)).toEqual(
      [],
    );
    await expectAllPresent('one', first);
    const after = await configuration(first);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.body.version).toBeGreaterThan(before.body.version);
  });

  it('two nodes: every write of a burst spread over both answers 2xx, is there, and both serve it', async () => {
    const before = await configuration(second);
    const answers = await burst('two', [first, second]);
    expect(answers.filter((answer) => answer.status >= 300).map((answer) => answer.text)).toEqual(
      [],
    );
    await expectAllPresent('two', second);
    // Both nodes serve the same, newer configuration: the changes reached them by notice.
    const settled = await eventually(async () => {
      const [a, b] = await Promise.all([configuration(first), configuration(second)]);
      return (
        a.headers.etag === b.headers.etag &&
        b.body.flags.some((flag: { key: string }) => flag.key === 'two-c-29')
      );
    }, 5000);
    expect(settled).toBe(true);
    const after = await configuration(second);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.body.version).toBeGreaterThan(before.body.version);
  });
});
