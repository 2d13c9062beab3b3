import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createVexil } from '../node/full-node.js';
import { hashSecret } from '../auth/secrets.js';
import {
  call,
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../test-support/harness.js';
import { SseReader, type SseEvent } from '../test-support/sse-reader.js';
import { patchedSnapshot, snapshotFromCopy } from '../evaluation/snapshots.js';
import type {
  RelayEnvironmentEvent,
  RelayHelloEvent,
  RelayKeysEvent,
  RelayPatchEvent,
  RelayUsageBody,
} from './protocol.js';

const orgBase = '/api/v1/orgs/acme';
const web = `${orgBase}/projects/web`;

describe.each(testDialects())('relay feed on %s', (dialect) => {
  let vexil: TestVexil;
  let origin: string;
  let owner: string;
  let sdkKey: string;
  const ids: Record<string, string> = {};
  const open: SseReader[] = [];

  const manage = (method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) =>
    callOk(vexil, method, path, owner, body);
  const relayKey = async (body: Record<string, unknown> = {}) =>
    (await manage('POST', `${orgBase}/relay-keys`, { name: 'relay', ...body })) as {
      id: string;
      key: string;
    };

  async function feed(
    key: string | undefined,
    known: Record<string, number> = {},
    patches?: boolean,
  ) {
    const abort = new AbortController();
    const response = await fetch(`${origin}/v1/relay/feed`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      },
      body: JSON.stringify({ known, patches }),
      signal: abort.signal,
    });
    const reader = new SseReader(response, abort);
    open.push(reader);
    return reader;
  }

  /** Reads up to and including `ready`; returns what came before it. */
  async function initialSet(reader: SseReader): Promise<SseEvent[]> {
    const events: SseEvent[] = [];
    for (let event = await reader.next(); event.event !== 'ready'; event = await reader.next())
      events.push(event);
    return events;
  }

  /** The next event of `name`, skipping others. */
  async function nextOf(reader: SseReader, name: string): Promise<SseEvent> {
    for (;;) {
      const event = await reader.next();
      if (event.event === name) return event;
    }
  }

  const environments = (events: SseEvent[]) =>
    events
      .filter((event) => event.event === 'environment')
      .map((event) => JSON.parse(event.data) as RelayEnvironmentEvent);

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${String((vexil.app.server.address() as AddressInfo).port)}`;
    const org = await createOrg(vexil);
    owner = org.token;
    sdkKey = (await createProjectWithFlag(vexil, org)).sdkKey;
    await createProjectWithFlag(vexil, org, { project: 'mobile' });
    for (const project of ['web', 'mobile'])
      for (const env of ['development', 'production']) {
        const read = await callOk(
          vexil,
          'GET',
          `${orgBase}/projects/${project}/environments/${env}`,
          owner,
        );
        ids[`${project}/${env}`] = read.id as string;
      }
  });
  afterEach(() => {
    for (const reader of open.splice(0)) reader.close();
  });
  afterAll(() => vexil.close());

  it('refuses a missing, unknown, revoked or non-relay key with 401', async () => {
    const revoked = await relayKey();
    await manage('DELETE', `${orgBase}/relay-keys/${revoked.id}`);
    for (const key of [undefined, 'vxr_unknown', revoked.key, sdkKey, owner]) {
      const response = await call(vexil, 'POST', '/v1/relay/feed', {
        body: { known: {} },
        headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
      });
      expect(response.status, String(key)).toBe(401);
      expect(response.body).toMatchObject({ status: 401, title: 'Unauthorized' });
    }
  });

  it('sends hello, every covered environment as /v1/sdk/flags serves it, then ready', async () => {
    const { id, key } = await relayKey();
    const reader = await feed(key);
    const hello = await reader.next();
    expect(hello.event).toBe('hello');
    const greeting = JSON.parse(hello.data) as RelayHelloEvent;
    expect(greeting).toEqual({ protocol: 1, upstream: expect.any(String), relayKeyId: id });
    const sent = environments(await initialSet(reader));
    expect(sent.map((env) => env.environmentId).sort()).toEqual(Object.values(ids).sort());

    const production = sent.find((env) => env.environmentId === ids['web/production'])!;
    const served = await call(vexil, 'GET', '/v1/sdk/flags', { token: sdkKey });
    expect(production.configuration).toEqual(served.body);
    expect(production.version).toBe(served.body.version);
    expect(production.sdkKeys).toEqual([
      { id: expect.any(String), hash: hashSecret(sdkKey), type: 'ServerSide' },
    ]);
    expect(production.organizationId).toEqual(expect.any(String));
    expect(production.clientSideKeys).toEqual([]);
  });

  it('sends an environment again when its configuration changes', async () => {
    const reader = await feed((await relayKey()).key);
    const initial = environments(await initialSet(reader));
    const before = initial.find((env) => env.environmentId === ids['web/production'])!;
    await manage('POST', `${web}/flags/new-checkout/environments/production/toggle`, {
      enabled: true,
    });
    const changed = JSON.parse((await nextOf(reader, 'environment')).data) as RelayEnvironmentEvent;
    expect(changed.environmentId).toBe(ids['web/production']);
    expect(changed.version).toBeGreaterThan(before.version);
    expect(changed.configuration.flags[0]).toMatchObject({ key: 'new-checkout', enabled: true });
  });

  it('sends the key hashes when an SDK key is created or revoked', async () => {
    const reader = await feed((await relayKey()).key);
    await initialSet(reader);
    const created = await manage('POST', `${web}/environments/development/sdk-keys`, {
      name: 'dev',
      type: 'ClientSide',
    });
    const added = JSON.parse((await nextOf(reader, 'keys')).data) as RelayKeysEvent;
    expect(added).toEqual({
      environmentId: ids['web/development'],
      sdkKeys: [{ id: created.id, hash: hashSecret(created.key as string), type: 'ClientSide' }],
    });
    await manage('DELETE', `${web}/environments/development/sdk-keys/${created.id as string}`);
    const removed = JSON.parse((await nextOf(reader, 'keys')).data) as RelayKeysEvent;
    expect(removed).toEqual({ environmentId: ids['web/development'], sdkKeys: [] });
  });

  it('resumes from known versions: only what changed is sent whole', async () => {
    const { key } = await relayKey();
    const first = await feed(key);
    const known = Object.fromEntries(
      environments(await initialSet(first)).map((env) => [env.environmentId, env.version]),
    );
    first.close();
    await manage(
      'POST',
      `${orgBase}/projects/mobile/flags/new-checkout/environments/development/toggle`,
      {
        enabled: true,
      },
    );
    const resumed = await feed(key, known);
    const events = await initialSet(resumed);
    expect(environments(events).map((env) => env.environmentId)).toEqual([
      ids['mobile/development'],
    ]);
    // The key hashes are not versioned: those of unchanged environments come as `keys`.
    expect(events.filter((event) => event.event === 'keys')).toHaveLength(3);
  });

  it('to a relay that takes patches, sends a change as what changed, which rebuilds the document', async () => {
    const { key } = await relayKey();
    const first = await feed(key);
    const initial = environments(await initialSet(first));
    first.close();
    const production = initial.find((env) => env.environmentId === ids['web/production'])!;
    const reader = await feed(
      key,
      Object.fromEntries(initial.map((env) => [env.environmentId, env.version])),
      true,
    );
    await initialSet(reader);
    const enabled = production.configuration.flags[0]?.enabled;
    await manage('POST', `${web}/flags/new-checkout/environments/production/toggle`, {
      enabled: !enabled,
    });

    const next = await nextOf(reader, 'patch');
    const patch = JSON.parse(next.data) as RelayPatchEvent;
    const served = await call(vexil, 'GET', '/v1/sdk/flags', { token: sdkKey });
    expect(patch).toEqual({
      environmentId: ids['web/production'],
      from: production.version,
      version: served.body.version,
      etag: served.headers.etag,
      clientSideKeys: [],
      flags: [served.body.flags[0]],
      deletedFlags: [],
      segments: [],
      deletedSegments: [],
    });
    // Only the toggled flag: here one flag of one, so only just smaller than the whole state.
    expect(next.data.length).toBeLessThan(JSON.stringify(production).length);
    const rebuilt = await patchedSnapshot(await snapshotFromCopy(production), patch);
    expect(rebuilt.document.etag).toBe(served.headers.etag);
    expect(JSON.parse((await rebuilt.document.plain()).toString())).toEqual(served.body);
  });

  it('sends removed for a deleted environment, and for one the relay holds outside its scope', async () => {
    const reader = await feed((await relayKey()).key, { 'not-an-environment': 3 });
    const initial = await initialSet(reader);
    expect(initial.filter((event) => event.event === 'removed').map((event) => event.data)).toEqual(
      [JSON.stringify({ environmentId: 'not-an-environment' })],
    );
    const staging = await manage('POST', `${web}/environments`, {
      key: 'staging',
      name: 'Staging',
    });
    const added = JSON.parse((await nextOf(reader, 'environment')).data) as RelayEnvironmentEvent;
    expect(added.environmentId).toBe(staging.id);
    await manage('DELETE', `${web}/environments/staging`);
    expect(JSON.parse((await nextOf(reader, 'removed')).data)).toEqual({
      environmentId: staging.id,
    });
  });

  it("respects the key's projects and environment keys", async () => {
    const webId = (await callOk(vexil, 'GET', web, owner)).id as string;
    const reader = await feed(
      (await relayKey({ projectIds: [webId], environmentKeys: ['production'] })).key,
    );
    expect(environments(await initialSet(reader)).map((env) => env.environmentId)).toEqual([
      ids['web/production'],
    ]);
    await manage(
      'POST',
      `${orgBase}/projects/mobile/flags/new-checkout/environments/production/toggle`,
      {
        enabled: true,
      },
    );
    // A new flag changes both environments of `web`; only production is covered.
    await manage('POST', `${web}/flags`, { key: 'scoped', name: 'Scoped' });
    const changed = JSON.parse((await nextOf(reader, 'environment')).data) as RelayEnvironmentEvent;
    expect(changed.environmentId).toBe(ids['web/production']);
    expect(
      reader
        .unread()
        .map((event) => event.data)
        .join('\n'),
    ).not.toContain(ids['mobile/production']);
  });

  it('closes the feed with revoked when its relay key is revoked', async () => {
    const { id, key } = await relayKey();
    const reader = await feed(key);
    await initialSet(reader);
    await manage('DELETE', `${orgBase}/relay-keys/${id}`);
    expect((await nextOf(reader, 'revoked')).data).toBe('{}');
    await reader.until(() => reader.ended, 'the stream to end');
  });

  describe('intake', () => {
    it('counts relay evaluations where the archive guard sees them', async () => {
      const { key } = await relayKey();
      await manage('POST', `${orgBase}/projects/mobile/flags`, { key: 'relayed', name: 'Relayed' });
      const nowMs = vexil.services.clock.now().getTime();
      const body: RelayUsageBody = {
        evaluations: [
          {
            environmentId: ids['mobile/production']!,
            flagKey: 'relayed',
            variation: 'false',
            hourMs: nowMs - (nowMs % 3_600_000),
            count: 12,
            lastAtMs: nowMs,
          },
        ],
        customEvents: [],
        keyUses: [],
      };
      const archive = () =>
        call(vexil, 'POST', `${orgBase}/projects/mobile/flags/relayed/archive`, { token: owner });
      const sent = await call(vexil, 'POST', '/v1/relay/usage', { token: key, body });
      expect([sent.status, sent.body]).toEqual([200, { plans: [], experiments: [] }]);
      const refused = await archive();
      expect(refused.body.error).toBe('FLAG_RECENTLY_EVALUATED');
      expect(refused.body.fields).toEqual({ environments: ['production'] });
      await vexil.services.usage.flush();
      const usage = await vexil.services.db
        .selectFrom('flag_usage')
        .select((eb) => eb.fn.sum<number | string>('count').as('total'))
        .where('environment_id', '=', ids['mobile/production']!)
        .executeTakeFirstOrThrow();
      expect(Number(usage.total)).toBe(12);
    });

    it("names the guarded release plans of the key's scope, and takes exposures of those only", async () => {
      const flags = `${orgBase}/projects/mobile/flags`;
      const flag = await manage('POST', flags, { key: 'guarded', name: 'Guarded' });
      const variations = variationIdsByKey(flag);
      await manage('PATCH', `${flags}/guarded/environments/production`, {
        defaultVariationId: variations.false,
      });
      await manage('POST', `${flags}/guarded/environments/production/toggle`, { enabled: true });
      const plan = await callOk(
        vexil,
        'PUT',
        `${flags}/guarded/environments/production/release-plan`,
        owner,
        {
          variation: 'true',
          steps: [
            { percentage: 50, after: 'PT0S' },
            { percentage: 100, after: 'P1D' },
          ],
          guard: { metric: 'refund', minimumUsers: 100 },
        },
      );
      await vexil.services.usage.exposures?.refresh();
      const nowMs = vexil.services.clock.now().getTime();
      const body = (userHash: string): RelayUsageBody => ({
        evaluations: [],
        customEvents: [],
        keyUses: [],
        exposures: [{ planId: plan.id, userHash, side: 1, exposedMs: nowMs, metricMs: null }],
      });
      const everywhere = await relayKey();
      const developmentOnly = await relayKey({ environmentKeys: ['development'] });
      const outside = await call(vexil, 'POST', '/v1/relay/usage', {
        token: developmentOnly.key,
        body: body('outside'),
      });
      expect([outside.status, outside.body]).toEqual([200, { plans: [], experiments: [] }]);
      const inside = await call(vexil, 'POST', '/v1/relay/usage', {
        token: everywhere.key,
        body: body('inside'),
      });
      expect(inside.status).toBe(200);
      expect(inside.body.plans).toContainEqual({
        planId: plan.id,
        environmentId: ids['mobile/production'],
        flagKey: 'guarded',
        targetVariationKey: 'true',
        metric: 'refund',
      });
      await vexil.services.usage.flush();
      const stored = await vexil.services.db
        .selectFrom('release_plan_exposures')
        .select(['user_hash', 'side'])
        .where('plan_id', '=', plan.id as string)
        .execute();
      expect(stored).toEqual([{ user_hash: 'inside', side: 1 }]);
    });

    it('records relayed events as /v1/sdk/events would', async () => {
      const { key } = await relayKey();
      await manage('POST', `${orgBase}/projects/mobile/flags`, { key: 'evented', name: 'Evented' });
      const sent = await call(vexil, 'POST', '/v1/relay/events', {
        token: key,
        body: {
          environmentId: ids['mobile/development'],
          keyType: 'ServerSide',
          events: [
            { type: 'Evaluation', flagKey: 'evented', variation: 'true' },
            { type: 'Evaluation', flagKey: 'no-such-flag', variation: 'true' },
            { type: 'Custom', flagKey: 'checkout' },
          ],
        },
      });
      expect(sent.status, sent.text).toBe(202);
      expect(sent.body).toEqual({ accepted: 3 });
      const refused = await call(
        vexil,
        'POST',
        `${orgBase}/projects/mobile/flags/evented/archive`,
        {
          token: owner,
        },
      );
      expect(refused.body.fields).toEqual({ environments: ['development'] });
    });

    it('refuses environments outside the key with 403, and a wrong key with 401', async () => {
      const webId = (await callOk(vexil, 'GET', web, owner)).id as string;
      const { key } = await relayKey({ projectIds: [webId] });
      const usage = await call(vexil, 'POST', '/v1/relay/usage', {
        token: key,
        body: {
          evaluations: [],
          customEvents: [
            { environmentId: ids['mobile/production'], eventKey: 'x', hourMs: 0, count: 1 },
          ],
          keyUses: [],
        },
      });
      expect(usage.status).toBe(403);
      const events = await call(vexil, 'POST', '/v1/relay/events', {
        token: key,
        body: { environmentId: ids['mobile/production'], keyType: 'ServerSide', events: [] },
      });
      expect(events.status).toBe(403);
      const wrong = await call(vexil, 'POST', '/v1/relay/usage', {
        token: 'vxr_wrong',
        body: { evaluations: [], customEvents: [], keyUses: [] },
      });
      expect(wrong.status).toBe(401);
    });
  });
});

describe('relay feed across nodes on postgres', () => {
  it('a feed held by node B hears of keys, environments and its revocation committed on node A', async () => {
    const nodeA = await createTestVexil('postgres');
    // A keep-alive far beyond the test: only the bus's notices can reach node B's feed.
    const nodeB = await createVexil(
      { ...nodeA.config, streamHeartbeatMs: 600_000 },
      { logger: false, startWorkers: false },
    );
    try {
      const org = await createOrg(nodeA);
      await createProjectWithFlag(nodeA, org);
      const relay = await callOk(nodeA, 'POST', `${orgBase}/relay-keys`, org.token, {
        name: 'b',
      });
      await nodeB.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = nodeB.app.server.address() as AddressInfo;
      const abort = new AbortController();
      const reader = new SseReader(
        await fetch(`http://127.0.0.1:${String(port)}/v1/relay/feed`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${relay.key as string}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ known: {} }),
          signal: abort.signal,
        }),
        abort,
      );
      for (let event = await reader.next(); event.event !== 'ready'; event = await reader.next());

      const created = await callOk(
        nodeA,
        'POST',
        `${web}/environments/development/sdk-keys`,
        org.token,
        {
          name: 'dev',
          type: 'ServerSide',
        },
      );
      const keys = await reader.next();
      expect(keys.event).toBe('keys');
      expect(JSON.parse(keys.data).sdkKeys).toEqual([
        { id: created.id, hash: hashSecret(created.key as string), type: 'ServerSide' },
      ]);

      const staging = await callOk(nodeA, 'POST', `${web}/environments`, org.token, {
        key: 'staging',
        name: 'Staging',
      });
      const environment = await reader.next();
      expect(environment.event).toBe('environment');
      expect(JSON.parse(environment.data).environmentId).toBe(staging.id);

      await callOk(nodeA, 'DELETE', `${orgBase}/relay-keys/${relay.id as string}`, org.token);
      expect((await reader.next()).event).toBe('revoked');
      await reader.until(() => reader.ended, 'the stream to end');
    } finally {
      await nodeB.close();
      await nodeA.close();
    }
  });
});

describe('relay feed keep-alive', () => {
  it('writes keep-alive comments, and closes a feed whose key was revoked without a notice', async () => {
    const vexil = await createTestVexil('sqlite', { config: { streamHeartbeatMs: 50 } });
    try {
      const org = await createOrg(vexil);
      const relay = await callOk(vexil, 'POST', `${orgBase}/relay-keys`, org.token, {
        name: 'r',
      });
      await vexil.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = vexil.app.server.address() as AddressInfo;
      const abort = new AbortController();
      const reader = new SseReader(
        await fetch(`http://127.0.0.1:${String(port)}/v1/relay/feed`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${relay.key as string}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ known: {} }),
          signal: abort.signal,
        }),
        abort,
      );
      await reader.until(() => reader.comments >= 2, 'keep-alives');
      // Revoked behind the bus's back (as if its notice were lost): the keep-alive's check sees it.
      await vexil.services.db
        .updateTable('relay_keys')
        .set({ revoked_at: new Date().toISOString() })
        .where('id', '=', relay.id as string)
        .execute();
      await reader.until(() => reader.ended, 'the stream to end');
      expect(reader.events.at(-1)?.event).toBe('revoked');
    } finally {
      await vexil.close();
    }
  });
});

describe('relay feed at shutdown', () => {
  it('a node that closes ends its feeds, so that relays reconnect elsewhere', async () => {
    const vexil = await createTestVexil('sqlite');
    const org = await createOrg(vexil);
    const relay = await callOk(vexil, 'POST', `${orgBase}/relay-keys`, org.token, { name: 'r' });
    await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = vexil.app.server.address() as AddressInfo;
    const abort = new AbortController();
    const reader = new SseReader(
      await fetch(`http://127.0.0.1:${String(port)}/v1/relay/feed`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${relay.key as string}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ known: {} }),
        signal: abort.signal,
      }),
      abort,
    );
    for (let event = await reader.next(); event.event !== 'ready'; event = await reader.next());
    await vexil.close();
    await reader.until(() => reader.ended, 'the stream to end');
    expect(reader.events.map((event) => event.event)).not.toContain('revoked');
  });
});
