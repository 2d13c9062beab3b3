import { Webhook as SvixWebhook } from 'svix';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createVexil } from '../node/full-node.js';
import type { Config } from '../config.js';
import { openDatabase, type Dialect } from '../db/database.js';
import {
  TestClock,
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  testWebhookSettings,
  type TestVexil,
} from '../test-support/harness.js';
import { WebhookReceiver, closedPort } from '../test-support/webhook-receiver.js';
import { findFinishedDelivery, restartDelivery } from './queries.js';

const SCHEDULE = [10, 10, 10, 10, 10];
/** Longer than any test: a delivery made within one was woken, not polled for. */
const NEVER_POLL_MS = 10 * 60_000;
const RETENTION_MS = 24 * 60 * 60_000;
const webhooks = (allowPrivateTargets = true, pollIntervalMs = 500): Partial<Config> => ({
  webhooks: testWebhookSettings({
    retryScheduleMs: SCHEDULE,
    allowPrivateTargets,
    pollIntervalMs,
    deliveryRetentionMs: RETENTION_MS,
  }),
});

interface Setup {
  vexil: TestVexil;
  clock: TestClock;
  receiver: WebhookReceiver;
  token: string;
  /** `/api/v1/orgs/{slug}` of this test's organization. */
  orgPath: string;
  /** `/api/v1/orgs/{slug}/webhooks`. */
  base: string;
  projectId: string;
  env: Record<string, string>;
}

let orgCounter = 0;

describe.each(testDialects())('webhook delivery on %s', (dialect: Dialect) => {
  // One Vexil per dialect; each test has its own organization, and no delivery outlives a test.
  const clock = new TestClock();
  let shared: TestVexil;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    shared = await createTestVexil(dialect, { clock, config: webhooks() });
  });
  afterAll(() => shared.close());
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
    await shared.services.db.deleteFrom('webhook_deliveries').execute();
  });

  /**
   * An organization with a project `web` (development, production) and a flag, a receiver, and
   * the clock at the real time (so receivers' 5-minute timestamp check passes).
   */
  async function setup(vexil: TestVexil = shared): Promise<Setup> {
    clock.set(new Date());
    const receiver = await WebhookReceiver.start();
    cleanups.push(() => receiver.close());
    const org = await createOrg(vexil, `org-${++orgCounter}`);
    await createProjectWithFlag(vexil, org);
    const orgPath = `/api/v1/orgs/${org.slug}`;
    const project = await call(vexil, 'GET', `${orgPath}/projects/web`, { token: org.token });
    const environments = await call(vexil, 'GET', `${orgPath}/projects/web/environments`, {
      token: org.token,
    });
    const env = Object.fromEntries(
      environments.body.items.map((item: { key: string; id: string }) => [item.key, item.id]),
    );
    return {
      vexil,
      clock,
      receiver,
      token: org.token,
      orgPath,
      base: `${orgPath}/webhooks`,
      projectId: project.body.id,
      env,
    };
  }

  async function subscribe(s: Setup, body: Record<string, unknown> = {}) {
    const response = await call(s.vexil, 'POST', s.base, {
      token: s.token,
      body: { name: 'Hook', url: s.receiver.url(), provider: 'GenericHttp', ...body },
    });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; secret: string };
  }

  async function toggle(s: Setup, enabled: boolean, env = 'production') {
    const response = await call(
      s.vexil,
      'POST',
      `${s.orgPath}/projects/web/flags/new-checkout/environments/${env}/toggle`,
      {
        token: s.token,
        body: { enabled },
      },
    );
    expect(response.status).toBe(204);
  }

  async function deliveries(s: Setup, subscriptionId: string) {
    const response = await call(s.vexil, 'GET', `${s.base}/${subscriptionId}/deliveries`, {
      token: s.token,
    });
    expect(response.status).toBe(200);
    return response.body.items as {
      id: string;
      webhookEventId: string;
      status: string;
      attemptCount: number;
      nextAttemptAt: string;
      lastResponseStatusCode: number | null;
      lastError: string | null;
      completedAt: string | null;
    }[];
  }

  async function detail(s: Setup, subscriptionId: string, deliveryId: string) {
    const response = await call(
      s.vexil,
      'GET',
      `${s.base}/${subscriptionId}/deliveries/${deliveryId}`,
      { token: s.token },
    );
    expect(response.status).toBe(200);
    return response.body;
  }

  /** Runs attempts until the delivery leaves Pending, moving the clock along the schedule. */
  async function runAllAttempts(s: Setup): Promise<void> {
    for (let i = 0; i <= SCHEDULE.length; i++) {
      await s.vexil.webhookWorker.runOnce();
      s.clock.advance(SCHEDULE[i] ?? 0);
    }
  }

  const headersOf = (request: { headers: Record<string, unknown> }) =>
    Object.fromEntries(
      ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
        name,
        String(request.headers[name]),
      ]),
    );

  it('a flag toggle is delivered signed, verifiable with standardwebhooks and svix', async () => {
    const s = await setup();
    const { id, secret } = await subscribe(s);
    await toggle(s, true);
    expect(await s.vexil.webhookWorker.runOnce()).toBe(1);

    expect(s.receiver.received).toHaveLength(1);
    const request = s.receiver.received[0]!;
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe('Vexil-Webhooks/1');
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(request.headers['webhook-timestamp']).toBe(
      String(Math.floor(s.clock.now().getTime() / 1000)),
    );
    const payload = new Webhook(secret).verify(request.body, headersOf(request)) as {
      type: string;
      environmentId: string;
    };
    expect(payload).toMatchObject({ type: 'flag.toggled', environmentId: s.env.production });
    expect(new SvixWebhook(secret).verify(request.body, headersOf(request))).toEqual(payload);

    const [delivery] = await deliveries(s, id);
    expect(delivery).toMatchObject({
      eventType: 'flag.toggled',
      status: 'Succeeded',
      attemptCount: 1,
      lastResponseStatusCode: 200,
      lastError: null,
      completedAt: expect.any(String),
    });
    expect(request.headers['webhook-id']).toBe(delivery!.webhookEventId);
    // The body is the stored event text, byte for byte.
    const event = await s.vexil.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('id', '=', delivery!.webhookEventId)
      .executeTakeFirstOrThrow();
    expect(request.body).toBe(event.payload);
    const read = await detail(s, id, delivery!.id);
    expect(read.eventType).toBe('flag.toggled');
    expect(read.payload).toEqual(payload);
    expect(read.attempts).toEqual([
      {
        attemptNumber: 1,
        attemptedAt: expect.any(String),
        responseStatusCode: 200,
        durationMs: expect.any(Number),
        error: null,
      },
    ]);
  });

  it('relay keys created and revoked are delivered, with the id and never the secret', async () => {
    const s = await setup();
    await subscribe(s, { eventTypes: ['relay_key.created', 'relay_key.revoked'] });
    const created = await call(s.vexil, 'POST', `${s.orgPath}/relay-keys`, {
      token: s.token,
      body: { name: 'edge' },
    });
    expect(created.status).toBe(201);
    const revoked = await call(s.vexil, 'DELETE', `${s.orgPath}/relay-keys/${created.body.id}`, {
      token: s.token,
    });
    expect(revoked.status).toBe(204);
    expect(await s.vexil.webhookWorker.runOnce()).toBe(2);
    const payloads = s.receiver.received.map(
      (request) => JSON.parse(request.body) as { type: string; entity: unknown },
    );
    expect(payloads.map((payload) => payload.type).sort()).toEqual([
      'relay_key.created',
      'relay_key.revoked',
    ]);
    for (const payload of payloads)
      expect(payload.entity).toEqual({ type: 'relay_key', id: created.body.id });
    expect(s.receiver.received.map((request) => request.body).join('')).not.toContain(
      created.body.key,
    );
  });

  it('signs with every active secret during a rotation, and stops with a retired one', async () => {
    const s = await setup();
    const { id, secret: oldSecret } = await subscribe(s);
    const added = await call(s.vexil, 'POST', `${s.base}/${id}/secrets`, { token: s.token });
    const newSecret = added.body.secret as string;
    await toggle(s, true);
    await s.vexil.webhookWorker.runOnce();
    const rotating = s.receiver.received[0]!;
    expect(String(rotating.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [oldSecret, newSecret]) {
      expect(() => new Webhook(secret).verify(rotating.body, headersOf(rotating))).not.toThrow();
      expect(() =>
        new SvixWebhook(secret).verify(rotating.body, headersOf(rotating)),
      ).not.toThrow();
    }

    const read = await call(s.vexil, 'GET', `${s.base}/${id}`, { token: s.token });
    const oldId = read.body.secrets[0].id as string;
    await call(s.vexil, 'DELETE', `${s.base}/${id}/secrets/${oldId}`, { token: s.token });
    await toggle(s, false);
    await s.vexil.webhookWorker.runOnce();
    const rotated = s.receiver.received[1]!;
    expect(String(rotated.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(newSecret).verify(rotated.body, headersOf(rotated))).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(rotated.body, headersOf(rotated))).toThrow();
  });

  it('retries on the schedule and dead-letters after 6 attempts', async () => {
    const s = await setup();
    const { id } = await subscribe(s);
    s.receiver.defaultAnswer = { status: 500 };
    await toggle(s, true);

    await s.vexil.webhookWorker.runOnce();
    const [afterFirst] = await deliveries(s, id);
    expect(afterFirst).toMatchObject({
      status: 'Pending',
      attemptCount: 1,
      lastResponseStatusCode: 500,
      completedAt: null,
    });
    expect(Date.parse(afterFirst!.nextAttemptAt)).toBe(s.clock.now().getTime() + SCHEDULE[0]!);
    // Not due yet: nothing is claimed until the clock reaches the retry time.
    expect(await s.vexil.webhookWorker.runOnce()).toBe(0);

    for (let attempt = 2; attempt <= 6; attempt++) {
      s.clock.advance(SCHEDULE[attempt - 2]!);
      expect(await s.vexil.webhookWorker.runOnce()).toBe(1);
    }
    s.clock.advance(60_000);
    expect(await s.vexil.webhookWorker.runOnce()).toBe(0);

    const [dead] = await deliveries(s, id);
    expect(dead).toMatchObject({
      status: 'DeadLettered',
      attemptCount: 6,
      completedAt: expect.any(String),
    });
    const read = await detail(s, id, dead!.id);
    expect(read.attempts.map((a: { attemptNumber: number }) => a.attemptNumber)).toEqual([
      1, 2, 3, 4, 5, 6,
    ]);
    expect(s.receiver.received).toHaveLength(6);
    // The same webhook-id on every retry, each one signed afresh.
    expect(new Set(s.receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const subscription = await call(s.vexil, 'GET', `${s.base}/${id}`, { token: s.token });
    expect(subscription.body.consecutiveFailures).toBe(1);
  });

  it('records time-outs and refused connections, then succeeds and resets the failure count', async () => {
    const s = await setup();
    const { id } = await subscribe(s);
    await s.vexil.services.db
      .updateTable('webhook_subscriptions')
      .set({ consecutive_failures: 5 })
      .where('id', '=', id)
      .execute();
    s.receiver.answer('hang');
    await toggle(s, true);
    await s.vexil.webhookWorker.runOnce();
    const [timedOut] = await deliveries(s, id);
    expect(timedOut).toMatchObject({
      status: 'Pending',
      lastResponseStatusCode: null,
      lastError: 'timed out after 1000 ms',
    });

    const port = await closedPort();
    await s.vexil.services.db
      .updateTable('webhook_subscriptions')
      .set({ url: `http://127.0.0.1:${port}/hook` })
      .where('id', '=', id)
      .execute();
    s.clock.advance(SCHEDULE[0]!);
    await s.vexil.webhookWorker.runOnce();
    const [refused] = await deliveries(s, id);
    expect(refused!.lastError).toContain('ECONNREFUSED');

    await s.vexil.services.db
      .updateTable('webhook_subscriptions')
      .set({ url: s.receiver.url() })
      .where('id', '=', id)
      .execute();
    s.clock.advance(SCHEDULE[1]!);
    await s.vexil.webhookWorker.runOnce();
    const [succeeded] = await deliveries(s, id);
    expect(succeeded).toMatchObject({ status: 'Succeeded', attemptCount: 3, lastError: null });
    const subscription = await call(s.vexil, 'GET', `${s.base}/${id}`, { token: s.token });
    expect(subscription.body.consecutiveFailures).toBe(0);
  });

  it('refuses non-public targets at connect time when private targets are not allowed', async () => {
    const strict = await createTestVexil(dialect, { clock, config: webhooks(false) });
    cleanups.push(() => strict.close());
    const s = await setup(strict);
    // Saved with a public literal, then re-pointed in the database, as DNS rebinding would.
    const { id } = await subscribe(s, { url: 'https://93.184.215.14/hook' });
    const targets = [
      `https://127.0.0.1:${s.receiver.port}/hook`,
      `https://[::ffff:127.0.0.1]:${s.receiver.port}/hook`,
      `https://localhost:${s.receiver.port}/hook`,
    ];
    await toggle(s, true);
    for (const [index, url] of targets.entries()) {
      await s.vexil.services.db
        .updateTable('webhook_subscriptions')
        .set({ url })
        .where('id', '=', id)
        .execute();
      s.clock.advance(index === 0 ? 0 : SCHEDULE[index - 1]!);
      expect(await s.vexil.webhookWorker.runOnce()).toBe(1);
      const [delivery] = await deliveries(s, id);
      expect(delivery!.attemptCount, url).toBe(index + 1);
      expect(delivery!.lastError, url).toMatch(/refused to connect: .*(not a public|non-public)/);
    }
    expect(s.receiver.received).toHaveLength(0);
  });

  it('filters: event types, projects, and environments only for environment-scoped events', async () => {
    const s = await setup();
    const other = await call(s.vexil, 'POST', `${s.orgPath}/projects`, {
      token: s.token,
      body: { key: 'other', name: 'Other' },
    });
    const subs = {
      archivedOnly: await subscribe(s, { eventTypes: ['flag.archived'] }),
      web: await subscribe(s, { projectIds: [s.projectId] }),
      other: await subscribe(s, { projectIds: [other.body.id] }),
      production: await subscribe(s, { environmentIds: [s.env.production] }),
      development: await subscribe(s, { environmentIds: [s.env.development] }),
      everything: await subscribe(s),
    };
    const typesFor = async (subscriptionId: string) => {
      const rows = await s.vexil.services.db
        .selectFrom('webhook_deliveries')
        .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
        .select('webhook_events.type')
        .where('webhook_deliveries.subscription_id', '=', subscriptionId)
        .orderBy('webhook_deliveries.id')
        .execute();
      return rows.map((row) => row.type);
    };

    await toggle(s, true, 'production');
    const created = await call(s.vexil, 'POST', `${s.orgPath}/projects/web/flags`, {
      token: s.token,
      body: { key: 'second-flag' },
    });
    expect(created.status).toBe(201);

    expect(await typesFor(subs.archivedOnly.id)).toEqual([]);
    expect(await typesFor(subs.web.id)).toEqual(['flag.toggled', 'flag.created']);
    expect(await typesFor(subs.other.id)).toEqual([]);
    expect(await typesFor(subs.production.id)).toEqual(['flag.toggled', 'flag.created']);
    // The environment filter cannot narrow a flag's own lifecycle event.
    expect(await typesFor(subs.development.id)).toEqual(['flag.created']);
    expect(await typesFor(subs.everything.id)).toEqual(['flag.toggled', 'flag.created']);
  });

  it('deleting an environment or project prunes filters, disables emptied ones, and still notifies them', async () => {
    const s = await setup();
    const other = await call(s.vexil, 'POST', `${s.orgPath}/projects`, {
      token: s.token,
      body: { key: 'other', name: 'Other' },
    });
    const devOnly = await subscribe(s, { environmentIds: [s.env.development] });
    const both = await subscribe(s, {
      environmentIds: [s.env.development, s.env.production],
    });
    const otherOnly = await subscribe(s, { projectIds: [other.body.id] });

    const removed = await call(
      s.vexil,
      'DELETE',
      `${s.orgPath}/projects/web/environments/development`,
      { token: s.token },
    );
    expect(removed.status).toBe(204);
    const devRead = await call(s.vexil, 'GET', `${s.base}/${devOnly.id}`, { token: s.token });
    expect(devRead.body).toMatchObject({
      enabled: false,
      environmentIds: [],
      disabledReason: expect.any(String),
    });
    const bothRead = await call(s.vexil, 'GET', `${s.base}/${both.id}`, { token: s.token });
    expect(bothRead.body).toMatchObject({ enabled: true, environmentIds: [s.env.production] });

    await s.vexil.webhookWorker.runOnce();
    const deletionEvents = s.receiver.received.map((r) => JSON.parse(r.body).type);
    expect(deletionEvents).toEqual(['environment.deleted', 'environment.deleted']);
    // That was the last event the disabled subscription receives.
    await toggle(s, true, 'production');
    expect((await deliveries(s, devOnly.id)).map((d) => d.status)).toEqual(['Succeeded']);
    expect(await deliveries(s, both.id)).toHaveLength(2);

    const projectRemoved = await call(s.vexil, 'DELETE', `${s.orgPath}/projects/other`, {
      token: s.token,
    });
    expect(projectRemoved.status).toBe(204);
    const otherRead = await call(s.vexil, 'GET', `${s.base}/${otherOnly.id}`, { token: s.token });
    expect(otherRead.body).toMatchObject({ enabled: false, projectIds: [] });
    const otherDeliveries = await deliveries(s, otherOnly.id);
    expect(otherDeliveries).toHaveLength(1);
    const event = await s.vexil.services.db
      .selectFrom('webhook_events')
      .select('type')
      .where('id', '=', otherDeliveries[0]!.webhookEventId)
      .executeTakeFirstOrThrow();
    expect(event.type).toBe('project.deleted');
  });

  it('deleting a project prunes its environments from environment filters and disables emptied ones', async () => {
    const s = await setup();
    const other = await call(s.vexil, 'POST', `${s.orgPath}/projects`, {
      token: s.token,
      body: { key: 'other', name: 'Other' },
    });
    const otherEnvironments = await call(
      s.vexil,
      'GET',
      `${s.orgPath}/projects/other/environments`,
      { token: s.token },
    );
    const otherProduction = otherEnvironments.body.items.find(
      (item: { key: string }) => item.key === 'production',
    ).id;
    const webOnly = await subscribe(s, { environmentIds: [s.env.production] });
    const mixed = await subscribe(s, { environmentIds: [s.env.production, otherProduction] });

    const removed = await call(s.vexil, 'DELETE', `${s.orgPath}/projects/web`, { token: s.token });
    expect(removed.status).toBe(204);
    const webOnlyRead = await call(s.vexil, 'GET', `${s.base}/${webOnly.id}`, { token: s.token });
    expect(webOnlyRead.body).toMatchObject({
      enabled: false,
      environmentIds: [],
      disabledReason: expect.any(String),
    });
    const mixedRead = await call(s.vexil, 'GET', `${s.base}/${mixed.id}`, { token: s.token });
    expect(mixedRead.body).toMatchObject({ enabled: true, environmentIds: [otherProduction] });

    // The deletion is the last event the emptied subscription receives.
    const created = await call(s.vexil, 'POST', `${s.orgPath}/projects/${other.body.key}/flags`, {
      token: s.token,
      body: { key: 'after-the-deletion' },
    });
    expect(created.status).toBe(201);
    await s.vexil.webhookWorker.runOnce();
    const typesOf = async (subscriptionId: string) =>
      (
        await s.vexil.services.db
          .selectFrom('webhook_deliveries')
          .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
          .select('webhook_events.type')
          .where('webhook_deliveries.subscription_id', '=', subscriptionId)
          .orderBy('webhook_deliveries.id')
          .execute()
      ).map((row) => row.type);
    expect(await typesOf(webOnly.id)).toEqual(['project.deleted']);
    expect(await typesOf(mixed.id)).toEqual(['project.deleted', 'flag.created']);
    expect((await deliveries(s, webOnly.id)).map((d) => d.status)).toEqual(['Succeeded']);
  });

  it('redelivery restarts the schedule, and is refused while pending, disabled or uncovered', async () => {
    const s = await setup();
    const { id } = await subscribe(s, { eventTypes: ['flag.toggled'] });
    await toggle(s, true);
    const [pending] = await deliveries(s, id);
    const redeliver = (deliveryId: string) =>
      call(s.vexil, 'POST', `${s.base}/${id}/deliveries/${deliveryId}/redeliver`, {
        token: s.token,
      });

    const whilePending = await redeliver(pending!.id);
    expect(whilePending.status).toBe(400);
    expect(whilePending.body.error).toBe('bad_request');

    s.receiver.defaultAnswer = { status: 500 };
    await runAllAttempts(s);
    expect((await deliveries(s, id))[0]!.status).toBe('DeadLettered');

    s.receiver.defaultAnswer = { status: 204 };
    expect((await redeliver(pending!.id)).status).toBe(204);
    const [requeued] = await deliveries(s, id);
    expect(requeued).toMatchObject({ status: 'Pending', attemptCount: 0, completedAt: null });
    expect(requeued!.nextAttemptAt).toBe(s.clock.now().toISOString());
    await s.vexil.webhookWorker.runOnce();
    const [resent] = await deliveries(s, id);
    expect(resent).toMatchObject({
      status: 'Succeeded',
      attemptCount: 1,
      lastResponseStatusCode: 204,
    });
    expect((await detail(s, id, pending!.id)).attempts).toHaveLength(7);
    expect(new Set(s.receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);

    await call(s.vexil, 'PATCH', `${s.base}/${id}`, {
      token: s.token,
      body: { eventTypes: ['flag.archived'] },
    });
    const uncovered = await redeliver(pending!.id);
    expect(uncovered.status).toBe(400);
    expect(uncovered.body.message).toContain('filters');

    await call(s.vexil, 'PATCH', `${s.base}/${id}`, {
      token: s.token,
      body: { eventTypes: [], enabled: false },
    });
    const disabled = await redeliver(pending!.id);
    expect(disabled.status).toBe(400);
    expect(disabled.body.message).toContain('disabled');
  });

  it('a redeliver request that saw the delivery before another round ran starts none', async () => {
    const s = await setup();
    const { id } = await subscribe(s);
    await toggle(s, true);
    await s.vexil.webhookWorker.runOnce();
    const [delivery] = await deliveries(s, id);
    const { db } = s.vexil.services;
    const seen = await findFinishedDelivery(db, delivery!.id);
    expect(seen).toEqual({ id: delivery!.id, attempts: 1 });

    // Another request restarts the delivery and its round finishes before this one acts.
    const other = await call(
      s.vexil,
      'POST',
      `${s.base}/${id}/deliveries/${delivery!.id}/redeliver`,
      {
        token: s.token,
      },
    );
    expect(other.status).toBe(204);
    await s.vexil.webhookWorker.runOnce();
    expect((await deliveries(s, id))[0]!.status).toBe('Succeeded');

    const now = s.clock.now().toISOString();
    expect(await restartDelivery(db, seen!, now)).toBe(false);
    expect(await restartDelivery(db, (await findFinishedDelivery(db, delivery!.id))!, now)).toBe(
      true,
    );
  });

  it('concurrent redeliver requests for one finished delivery start one round', async () => {
    // Polling too: on PostgreSQL the losers' row locks can make the woken pass skip the delivery.
    const live = await createTestVexil(dialect, { config: webhooks(), startWorkers: true });
    cleanups.push(() => live.close());
    const s = await setup(live);
    const { id } = await subscribe(s);
    await toggle(s, true);
    const [delivery] = await deliveries(s, id);
    const finished = async (attempts: number) => {
      const current = await detail(s, id, delivery!.id);
      expect(current.status).toBe('Succeeded');
      expect(current.attempts).toHaveLength(attempts);
    };
    await vi.waitFor(() => finished(1), { timeout: 5000 });

    // The receiver holds the new round's answer until every request has been answered: the
    // requests overlap whatever the machine's load. (A round that finishes before a late request
    // reads is the stale-count case, tested on restartDelivery above.)
    let release = () => {};
    s.receiver.defaultAnswer = { status: 200, held: new Promise<void>((r) => (release = r)) };
    const responses = await Promise.all(
      Array.from({ length: 12 }, () =>
        call(live, 'POST', `${s.base}/${id}/deliveries/${delivery!.id}/redeliver`, {
          token: s.token,
        }),
      ),
    );
    release();
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([204, ...Array<number>(11).fill(400)]);
    for (const refused of responses.filter((response) => response.status === 400))
      expect(refused.body.message).toContain('pending');
    await vi.waitFor(() => finished(2), { timeout: 5000 });
    expect(s.receiver.received).toHaveLength(2);
  });

  it('a test event goes to that subscription only, and is refused while disabled', async () => {
    const s = await setup();
    const target = await subscribe(s);
    const bystander = await subscribe(s);
    const test = await call(s.vexil, 'POST', `${s.base}/${target.id}/test`, { token: s.token });
    expect(test.status).toBe(202);
    expect(test.body).toEqual({
      webhookEventId: expect.any(String),
      webhookDeliveryId: expect.any(String),
    });
    await s.vexil.webhookWorker.runOnce();
    expect(s.receiver.received).toHaveLength(1);
    const request = s.receiver.received[0]!;
    expect(request.headers['webhook-id']).toBe(test.body.webhookEventId);
    expect(new Webhook(target.secret).verify(request.body, headersOf(request))).toMatchObject({
      type: 'flag.toggled',
    });
    expect((await deliveries(s, target.id))[0]).toMatchObject({
      id: test.body.webhookDeliveryId,
      status: 'Succeeded',
    });
    expect(await deliveries(s, bystander.id)).toEqual([]);

    await call(s.vexil, 'PATCH', `${s.base}/${target.id}`, {
      token: s.token,
      body: { enabled: false },
    });
    const refused = await call(s.vexil, 'POST', `${s.base}/${target.id}/test`, { token: s.token });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('bad_request');
  });

  it('20 dead-lettered deliveries in a row disable a subscription; re-enabling resets the count', async () => {
    const s = await setup();
    const { id } = await subscribe(s);
    await s.vexil.services.db
      .updateTable('webhook_subscriptions')
      .set({ consecutive_failures: 19 })
      .where('id', '=', id)
      .execute();
    s.receiver.defaultAnswer = { status: 503 };
    await toggle(s, true);
    await runAllAttempts(s);

    const disabled = await call(s.vexil, 'GET', `${s.base}/${id}`, { token: s.token });
    expect(disabled.body).toMatchObject({
      enabled: false,
      consecutiveFailures: 20,
      disabledReason: expect.stringContaining('20'),
    });
    const test = await call(s.vexil, 'POST', `${s.base}/${id}/test`, { token: s.token });
    expect(test.status).toBe(400);
    await toggle(s, false);
    expect(await deliveries(s, id)).toHaveLength(1);

    const enabled = await call(s.vexil, 'PATCH', `${s.base}/${id}`, {
      token: s.token,
      body: { enabled: true },
    });
    expect(enabled.body).toMatchObject({
      enabled: true,
      consecutiveFailures: 0,
      disabledReason: null,
    });
  });

  it('a lease left by a dead worker expires and another pass retries the delivery', async () => {
    const s = await setup();
    const { id } = await subscribe(s);
    await toggle(s, true);
    await s.vexil.services.db
      .updateTable('webhook_deliveries')
      .set({
        lease_owner: 'crashed-worker',
        lease_until: new Date(s.clock.now().getTime() + 60_000).toISOString(),
      })
      .where('subscription_id', '=', id)
      .execute();
    expect(await s.vexil.webhookWorker.runOnce()).toBe(0);
    s.clock.advance(60_001);
    expect(await s.vexil.webhookWorker.runOnce()).toBe(1);
    expect((await deliveries(s, id))[0]!.status).toBe('Succeeded');
  });

  it('the background worker delivers without being driven', async () => {
    const live = await createTestVexil(dialect, { config: webhooks(), startWorkers: true });
    cleanups.push(() => live.close());
    const s = await setup(live);
    await subscribe(s);
    await toggle(s, true);
    await vi.waitFor(() => expect(s.receiver.received).toHaveLength(1), { timeout: 5000 });
  });

  it('finished deliveries leave the log after their retention; pending ones and events stay', async () => {
    const s = await setup();
    const { id } = await subscribe(s);
    await toggle(s, true);
    expect(await s.vexil.webhookWorker.runOnce()).toBe(1);
    const [old] = await deliveries(s, id);
    s.clock.advance(RETENTION_MS - 60_000);
    await toggle(s, false);
    expect(await s.vexil.webhookWorker.runOnce()).toBe(1);
    await toggle(s, true); // left pending
    s.clock.advance(120_000);

    expect(await s.vexil.webhookWorker.prune()).toBe(1);
    const kept = await deliveries(s, id);
    expect(kept.map((delivery) => delivery.status).sort()).toEqual(['Pending', 'Succeeded']);
    expect(kept.map((delivery) => delivery.id)).not.toContain(old!.id);
    const { db } = s.vexil.services;
    const attempts = await db
      .selectFrom('webhook_attempts')
      .select('delivery_id')
      .where('delivery_id', '=', old!.id)
      .execute();
    expect(attempts).toEqual([]);
    const event = await db
      .selectFrom('webhook_events')
      .select('id')
      .where('id', '=', old!.webhookEventId)
      .execute();
    expect(event).toHaveLength(1);
    expect(await s.vexil.webhookWorker.prune()).toBe(0);
  });

  it('queued deliveries wake the worker: no wait for its next poll', async () => {
    const live = await createTestVexil(dialect, {
      config: webhooks(true, NEVER_POLL_MS),
      startWorkers: true,
    });
    cleanups.push(() => live.close());
    const s = await setup(live);
    const { id } = await subscribe(s);
    // The worker's first pass, at start, has long found nothing: it now waits for its next poll.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await toggle(s, true);
    await vi.waitFor(() => expect(s.receiver.received).toHaveLength(1), { timeout: 5000 });
    const test = await call(live, 'POST', `${s.base}/${id}/test`, { token: s.token });
    expect(test.status).toBe(202);
    await vi.waitFor(() => expect(s.receiver.received).toHaveLength(2), { timeout: 5000 });
    const testDelivery = test.body.webhookDeliveryId as string;
    await vi.waitFor(async () =>
      expect((await detail(s, id, testDelivery)).status).toBe('Succeeded'),
    );
    const redeliver = await call(
      live,
      'POST',
      `${s.base}/${id}/deliveries/${testDelivery}/redeliver`,
      { token: s.token },
    );
    expect(redeliver.status, redeliver.text).toBe(204);
    await vi.waitFor(() => expect(s.receiver.received).toHaveLength(3), { timeout: 5000 });
  });

  it.runIf(dialect === 'postgres')(
    "a delivery queued through one node wakes another node's worker",
    async () => {
      const s = await setup();
      await subscribe(s);
      const worker = await createVexil(
        {
          ...s.vexil.config,
          webhooks: { ...s.vexil.config.webhooks, pollIntervalMs: NEVER_POLL_MS },
        },
        { database: openDatabase(s.vexil.databaseUrl), logger: false, roles: ['worker'] },
      );
      cleanups.push(() => worker.close());
      await new Promise((resolve) => setTimeout(resolve, 300));
      await toggle(s, true);
      await vi.waitFor(() => expect(s.receiver.received).toHaveLength(1), { timeout: 5000 });
    },
  );

  it.runIf(dialect === 'postgres')(
    'two workers on one database never attempt a delivery twice',
    async () => {
      const s = await setup();
      const { id } = await subscribe(s);
      const second = await createVexil(
        { ...s.vexil.config },
        {
          clock: s.clock,
          database: openDatabase(s.vexil.databaseUrl),
          logger: false,
          startWorkers: false,
        },
      );
      cleanups.push(() => second.close());
      for (let i = 0; i < 40; i++) {
        const response = await call(s.vexil, 'POST', `${s.base}/${id}/test`, { token: s.token });
        expect(response.status).toBe(202);
      }
      let claimed = 1;
      while (claimed > 0) {
        const counts = await Promise.all([
          s.vexil.webhookWorker.runOnce(),
          second.webhookWorker.runOnce(),
        ]);
        claimed = counts[0] + counts[1];
      }
      const attempts = await s.vexil.services.db
        .selectFrom('webhook_attempts')
        .select('delivery_id')
        .execute();
      expect(attempts).toHaveLength(40);
      expect(new Set(attempts.map((a) => a.delivery_id)).size).toBe(40);
      // Under load a few attempts may time out; none was ever sent twice.
      const ids = s.receiver.received.map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(ids.length);
    },
  );
});
