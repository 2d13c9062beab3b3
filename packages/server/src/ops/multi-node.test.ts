import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../test-support/harness.js';
import {
  ServeProcess,
  bootstrapWithCli,
  createBetaFlag,
  eventually,
  prepareNodes,
  subscribeToToggles,
  type NodeTestbed,
} from '../test-support/processes.js';
import { SseReader } from '../test-support/sse-reader.js';
import { WebhookReceiver } from '../test-support/webhook-receiver.js';

/**
 * Several real `vexil serve` processes on one PostgreSQL database (issue: serving SDKs at
 * scale). The periodic version check is set to a minute, so changes can only travel by
 * LISTEN/NOTIFY within the waits below.
 */
describe('multi-node on PostgreSQL', { timeout: 60_000 }, () => {
  let testbed: NodeTestbed;
  let env: NodeJS.ProcessEnv;
  let token: string;
  let receiver: WebhookReceiver;
  const nodes: ServeProcess[] = [];
  const base = '/api/v1/orgs/acme/projects/web';

  beforeAll(async () => {
    testbed = await prepareNodes('postgres', {
      VEXIL_WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
    });
    ({ env, token, receiver } = testbed);
  });

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop('SIGKILL')));
    await testbed.close();
  });

  it('a toggle through node A reaches evaluations on node B by notification', async () => {
    const [a, b] = await Promise.all([
      ServeProcess.start(env),
      ServeProcess.start(env, ['--only', 'evaluation']),
    ]);
    nodes.push(a, b);
    const sdkKey = await createBetaFlag(a, token);
    const evaluateOnB = () =>
      b.request('POST', '/v1/sdk/evaluate', {
        sdkKey,
        body: { flagKey: 'beta', context: { userId: 'u' } },
      });
    expect((await evaluateOnB()).body.value).toBe(false);
    // B serves only evaluation: its management API is not mounted.
    expect((await b.request('GET', '/api/v1/me', { token })).status).toBe(404);

    await a.request('POST', `${base}/flags/beta/environments/production/toggle`, {
      token,
      body: { enabled: true },
    });
    const changed = await eventually(async () => (await evaluateOnB()).body.value === true, 3000);
    expect(changed).toBe(true);
  }, 60_000);

  it('identify through node A switches a client stream held by node B', async () => {
    const [a, b] = nodes;
    // gate: client-visible; when on, serves true to the pro plan and false to everyone else.
    const gate = await a!.request('POST', `${base}/flags`, {
      token,
      body: { key: 'gate', clientSideVisible: true },
    });
    const variation = (key: string) =>
      gate.body.variations.find((v: { key: string }) => v.key === key).id as string;
    const gatePath = `${base}/flags/gate/environments/production`;
    await a!.request('POST', `${gatePath}/rules`, {
      token,
      body: {
        variationId: variation('true'),
        conditionGroups: [
          {
            operator: 'And',
            conditions: [{ attribute: 'plan', operator: 'Equals', values: ['pro'] }],
          },
        ],
      },
    });
    await a!.request('PATCH', gatePath, {
      token,
      body: { defaultVariationId: variation('false') },
    });
    await a!.request('POST', `${gatePath}/toggle`, { token, body: { enabled: true } });
    const clientKey = (
      await a!.request('POST', `${base}/environments/production/sdk-keys`, {
        token,
        body: { name: 'web', type: 'ClientSide' },
      })
    ).body.key as string;

    const abort = new AbortController();
    const response = await fetch(`${b!.baseUrl}/v1/client/stream`, {
      method: 'POST',
      headers: { authorization: clientKey, 'content-type': 'application/json' },
      body: JSON.stringify({ context: { userId: 'u', plan: 'free' } }),
      signal: abort.signal,
    });
    const stream = new SseReader(response, abort);
    try {
      const { streamId } = JSON.parse((await stream.next()).data) as { streamId: string };
      const flags = async () => JSON.parse((await stream.next()).data).flags.gate.value as boolean;
      // Node B may have built its snapshot before the last change reached it.
      let value = await flags();
      while (!value && stream.unread().length > 0) value = await flags();
      expect(value).toBe(false);

      const identify = (id: string) =>
        fetch(`${a!.baseUrl}/v1/client/identify`, {
          method: 'POST',
          headers: {
            authorization: clientKey,
            'content-type': 'application/json',
            'x-vexil-stream-id': id,
          },
          body: JSON.stringify({ context: { userId: 'u', plan: 'pro' } }),
        });
      const switched = await identify(streamId);
      expect(switched.status).toBe(200);
      expect(switched.headers.get('x-vexil-stream-updated')).toBe('true');
      const answer = (await switched.json()) as { flags: { gate: { value: boolean } } };
      expect(answer.flags.gate.value).toBe(true);
      expect(await flags()).toBe(true);

      const unknown = await identify('no-such-stream');
      expect(unknown.headers.get('x-vexil-stream-updated')).toBe('false');
    } finally {
      stream.close();
    }
  }, 60_000);

  it('a burst of writes travels in fewer notices than writes, the last version of each included', async () => {
    const node = await ServeProcess.start(env);
    nodes.push(node);
    const burst = '/api/v1/orgs/acme/projects/burst';
    await node.request('POST', '/api/v1/orgs/acme/projects', {
      token,
      body: { key: 'burst', name: 'Burst' },
    });
    const sdkKey = (
      await node.request('POST', `${burst}/environments/production/sdk-keys`, {
        token,
        body: { name: 'burst', type: 'ServerSide' },
      })
    ).body.key as string;
    const listener = new pg.Client({ connectionString: testbed.databaseUrl });
    await listener.connect();
    const notices: unknown[][] = [];
    listener.on('notification', (message) => {
      if (message.payload) notices.push([JSON.parse(message.payload)].flat() as unknown[]);
    });
    await listener.query('LISTEN vexil_changes');
    try {
      const writes = 40;
      const answers = await Promise.all(
        Array.from({ length: writes }, (_, i) =>
          node.request('POST', `${burst}/flags`, {
            token,
            body: { key: `burst-${i}` },
          }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(writes).fill(201));
      const served = await node.request('GET', '/v1/sdk/flags', { sdkKey });
      const version = (served.body as { version: number }).version;
      const announced = () =>
        notices
          .flat()
          .filter(
            (notice): notice is { version: number } =>
              typeof notice === 'object' && notice !== null && 'version' in notice,
          )
          .map((notice) => notice.version);
      expect(await eventually(async () => announced().includes(version), 3000)).toBe(true);
      expect(notices.length).toBeLessThan(writes);
    } finally {
      await listener.end();
    }
  }, 60_000);

  it('killing a node mid-delivery loses no webhook delivery', async () => {
    const [a] = nodes;
    const hookId = await subscribeToToggles(a!, token, receiver.url());
    // Only A runs a worker now; it claims the delivery and hangs on the receiver.
    receiver.answer('hang');
    await a!.request('POST', `${base}/flags/beta/environments/production/toggle`, {
      token,
      body: { enabled: false },
    });
    expect(await eventually(() => receiver.received.length === 1, 5000)).toBe(true);
    await a!.stop('SIGKILL');

    const c = await ServeProcess.start(env);
    nodes.push(c);
    // After A's lease runs out, C retries the same event.
    const delivered = await eventually(() => receiver.received.length >= 2, 20_000);
    expect(delivered).toBe(true);
    expect(receiver.received[1]!.headers['webhook-id']).toBe(
      receiver.received[0]!.headers['webhook-id'],
    );
    // The receiver counts the request before C has recorded its answer.
    const recorded = await eventually(async () => {
      const deliveries = await c.request('GET', `/api/v1/orgs/acme/webhooks/${hookId}/deliveries`, {
        token,
      });
      return deliveries.body.items[0].status === 'Succeeded';
    }, 5000);
    expect(recorded).toBe(true);
  }, 60_000);
  it('two worker processes never send the same attempt twice', async () => {
    const d = await ServeProcess.start(env);
    nodes.push(d);
    const [, , c] = nodes;
    const already = receiver.received.length;
    for (let i = 0; i < 20; i++) {
      const node = i % 2 === 0 ? c! : d;
      await node.request('POST', `${base}/flags/beta/environments/production/toggle`, {
        token,
        body: { enabled: i % 2 === 0 },
      });
    }
    const arrived = await eventually(() => receiver.received.length >= already + 20, 20_000);
    expect(arrived).toBe(true);
    // Let any duplicate that was going to happen arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const ids = receiver.received.slice(already).map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(20);
    expect(new Set(ids).size).toBe(20);
  }, 60_000);
  it('concurrent redeliver requests through two nodes start one round', async () => {
    const [, , c, d] = nodes;
    const slow = await WebhookReceiver.start();
    try {
      const hook = await c!.request('POST', '/api/v1/orgs/acme/webhooks', {
        token,
        body: {
          name: 'slow',
          url: slow.url(),
          provider: 'GenericHttp',
          eventTypes: ['flag.toggled'],
        },
      });
      expect(hook.status).toBe(201);
      const deliveriesPath = `/api/v1/orgs/acme/webhooks/${hook.body.id}/deliveries`;
      await c!.request('POST', `${base}/flags/beta/environments/production/toggle`, {
        token,
        body: { enabled: true },
      });
      const deliveryId = (await c!.request('GET', deliveriesPath, { token })).body.items[0]
        .id as string;
      const finishedWith = (attempts: number) =>
        eventually(async () => {
          const { body } = await d!.request('GET', `${deliveriesPath}/${deliveryId}`, { token });
          return body.status === 'Succeeded' && body.attempts.length === attempts;
        }, 10_000);
      expect(await finishedWith(1)).toBe(true);

      // The new round's answer is held until every request has been answered: the requests
      // overlap whatever the machine's load (a round that finished first would rightly be redone).
      let release = () => {};
      slow.defaultAnswer = { status: 200, held: new Promise<void>((r) => (release = r)) };
      const responses = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (i % 2 === 0 ? c! : d!).request('POST', `${deliveriesPath}/${deliveryId}/redeliver`, {
            token,
          }),
        ),
      );
      release();
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses).toEqual([204, ...Array<number>(15).fill(400)]);
      expect(await finishedWith(2)).toBe(true);
      expect(slow.received).toHaveLength(2);
    } finally {
      await slow.close();
    }
  }, 60_000);
});

describe('rate limit shared through Redis', () => {
  it('two nodes enforce one quota, not two', async () => {
    const database = await createPostgresDatabase();
    const env = {
      VEXIL_DATABASE_URL: database.url,
      VEXIL_REDIS_URL: 'redis://127.0.0.1:6379',
      VEXIL_RATE_LIMIT: '4',
      VEXIL_RATE_LIMIT_WINDOW_SECONDS: '60',
    };
    const { token } = await bootstrapWithCli(env);
    const [a, b] = await Promise.all([ServeProcess.start(env), ServeProcess.start(env)]);
    try {
      const statuses: number[] = [];
      for (const node of [a, b, a, b, a, b])
        statuses.push((await node.request('GET', '/api/v1/me', { token })).status);
      expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
      expect(statuses.slice(4)).toEqual([429, 429]);
    } finally {
      await Promise.all([a.stop('SIGKILL'), b.stop('SIGKILL')]);
      await database.drop();
    }
  }, 60_000);
});
