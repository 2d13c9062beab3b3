import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../events/types.js';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
  testWebhookSettings,
} from '../test-support/harness.js';

/** Private targets are refused here, as in production; nothing in this file sends a delivery. */
const strictWebhooks = {
  webhooks: testWebhookSettings({
    retryScheduleMs: [10, 10, 10, 10, 10],
    timeoutMs: 300,
    allowPrivateTargets: false,
  }),
};

// A public IP literal needs no DNS; no worker runs in these tests, so nothing is ever sent to it.
const PUBLIC_URL = 'https://93.184.215.14/hooks/vexil';

describe.each(testDialects())('webhook subscriptions on %s', (dialect) => {
  let vexil: TestVexil;
  let org: Awaited<ReturnType<typeof createOrg>>;
  let projectId: string;
  let environmentIds: Record<string, string>;
  const base = '/api/v1/orgs/acme/webhooks';

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, { config: strictWebhooks });
    org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    const project = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web', {
      token: org.token,
    });
    projectId = project.body.id;
    const environments = await call(vexil, 'GET', '/api/v1/orgs/acme/projects/web/environments', {
      token: org.token,
    });
    environmentIds = Object.fromEntries(
      environments.body.items.map((item: { key: string; id: string }) => [item.key, item.id]),
    );
  });
  afterAll(() => vexil.close());

  it('create returns the id, a whsec_ secret shown once, and a warning', async () => {
    const created = await call(vexil, 'POST', base, {
      token: org.token,
      body: {
        name: 'Audit',
        url: PUBLIC_URL,
        provider: 'GenericHttp',
        eventTypes: ['flag.toggled'],
        projectIds: [projectId],
        environmentIds: [environmentIds.production],
      },
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual(['id', 'secret', 'warning']);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(created.body.secret.slice(6), 'base64')).toHaveLength(32);

    const read = await call(vexil, 'GET', `${base}/${created.body.id}`, { token: org.token });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: created.body.id,
      name: 'Audit',
      url: PUBLIC_URL,
      provider: 'GenericHttp',
      eventTypes: ['flag.toggled'],
      projectIds: [projectId],
      environmentIds: [environmentIds.production],
      enabled: true,
      disabledReason: null,
      consecutiveFailures: 0,
      _actions: { update: { allowed: true, reason: null } },
    });
    expect(read.body.secrets).toHaveLength(1);
    expect(read.text).not.toContain(created.body.secret);

    const list = await call(vexil, 'GET', base, { token: org.token });
    expect(list.body.items.map((item: { id: string }) => item.id)).toContain(created.body.id);
    expect(list.body.items[0]).not.toHaveProperty('_actions');
    expect(list.text).not.toContain(created.body.secret);
  });

  it('update changes name, url and filters; delete removes the subscription', async () => {
    const created = await call(vexil, 'POST', base, {
      token: org.token,
      body: { name: 'Temp', url: PUBLIC_URL, provider: 'GenericHttp' },
    });
    const updated = await call(vexil, 'PATCH', `${base}/${created.body.id}`, {
      token: org.token,
      body: {
        name: 'Renamed',
        url: 'https://93.184.215.14/other',
        eventTypes: ['flag.archived', 'flag.archived'],
        environmentIds: [environmentIds.development],
      },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'Renamed',
      url: 'https://93.184.215.14/other',
      eventTypes: ['flag.archived'],
      projectIds: [],
      environmentIds: [environmentIds.development],
    });
    const disabled = await call(vexil, 'PATCH', `${base}/${created.body.id}`, {
      token: org.token,
      body: { enabled: false },
    });
    expect(disabled.body).toMatchObject({ enabled: false, disabledReason: expect.any(String) });
    expect(disabled.body._actions.test.allowed).toBe(false);

    expect(
      (await call(vexil, 'DELETE', `${base}/${created.body.id}`, { token: org.token })).status,
    ).toBe(204);
    const gone = await call(vexil, 'GET', `${base}/${created.body.id}`, { token: org.token });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('not_found');
  });

  it('event-types lists the catalogue', async () => {
    const response = await call(vexil, 'GET', `${base}/event-types`, { token: org.token });
    expect(response.status).toBe(200);
    expect(response.body).toEqual([...EVENT_TYPES]);
  });

  it('create validates provider, event types, projects and environments', async () => {
    const other = await createOrg(vexil, 'other-org');
    await createProjectWithFlag(vexil, other, { project: 'theirs' });
    const theirEnvironments = await call(
      vexil,
      'GET',
      '/api/v1/orgs/other-org/projects/theirs/environments',
      { token: other.token },
    );
    const foreignEnvironment = theirEnvironments.body.items[0].id as string;
    const cases: [Record<string, unknown>, string][] = [
      [{ provider: 'Slack' }, 'provider'],
      [{ eventTypes: ['flag.exploded'] }, 'eventTypes'],
      [{ projectIds: ['0190a6f0-0000-7000-8000-000000000000'] }, 'projectIds'],
      [{ environmentIds: [foreignEnvironment] }, 'environmentIds'],
      [{ name: undefined }, 'name'],
    ];
    for (const [patch, field] of cases) {
      const response = await call(vexil, 'POST', base, {
        token: org.token,
        body: { name: 'Bad', url: PUBLIC_URL, provider: 'GenericHttp', ...patch },
      });
      expect(response.status, field).toBe(400);
      expect(response.body.error).toBe('validation_failed');
      expect(Object.keys(response.body.fields).join(' ')).toContain(field);
    }
  });

  it('refuses non-public and non-https targets at create and update', async () => {
    const refused = [
      'https://127.0.0.1/hook',
      'https://10.0.0.1/hook',
      'https://172.16.5.4/hook',
      'https://192.168.1.1/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[fe80::1]/hook',
      'https://100.64.0.1/hook',
      'https://[fc00::1]/hook',
      'https://0.0.0.0/hook',
      'https://224.0.0.1/hook',
      'http://example.com/hook',
      'ftp://example.com/hook',
      'https://localhost/hook',
      'https://api.localhost/hook',
      'https://user:pass@93.184.215.14/hook',
      'not a url',
    ];
    for (const url of refused) {
      const response = await call(vexil, 'POST', base, {
        token: org.token,
        body: { name: 'SSRF', url, provider: 'GenericHttp' },
      });
      expect(response.status, url).toBe(400);
      expect(response.body).toMatchObject({
        error: 'validation_failed',
        fields: { url: [expect.any(String)] },
      });
    }
    const created = await call(vexil, 'POST', base, {
      token: org.token,
      body: { name: 'Fine', url: PUBLIC_URL, provider: 'GenericHttp' },
    });
    const update = await call(vexil, 'PATCH', `${base}/${created.body.id}`, {
      token: org.token,
      body: { url: 'https://169.254.169.254/' },
    });
    expect(update.status).toBe(400);
    expect(update.body.fields).toHaveProperty('url');
  });

  it('only Admins manage webhooks', async () => {
    const member = await createMember(vexil, org.orgId, 'Member');
    const list = await call(vexil, 'GET', base, { token: member.token });
    expect(list.status).toBe(403);
    const create = await call(vexil, 'POST', base, {
      token: member.token,
      body: { name: 'No', url: PUBLIC_URL, provider: 'GenericHttp' },
    });
    expect(create.status).toBe(403);
  });

  it('secrets: add, retire, and the last active one cannot be retired', async () => {
    const created = await call(vexil, 'POST', base, {
      token: org.token,
      body: { name: 'Rotating', url: PUBLIC_URL, provider: 'GenericHttp' },
    });
    const id = created.body.id as string;
    const added = await call(vexil, 'POST', `${base}/${id}/secrets`, { token: org.token });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      secretId: expect.any(String),
      secret: expect.stringMatching(/^whsec_/),
      warning: expect.any(String),
    });
    const read = await call(vexil, 'GET', `${base}/${id}`, { token: org.token });
    expect(read.body.secrets).toHaveLength(2);
    const [first, second] = read.body.secrets as { id: string }[];
    expect(second!.id).toBe(added.body.secretId);

    const retired = await call(vexil, 'DELETE', `${base}/${id}/secrets/${first!.id}`, {
      token: org.token,
    });
    expect(retired.status).toBe(204);
    const again = await call(vexil, 'DELETE', `${base}/${id}/secrets/${first!.id}`, {
      token: org.token,
    });
    expect(again.status).toBe(404);
    const last = await call(vexil, 'DELETE', `${base}/${id}/secrets/${second!.id}`, {
      token: org.token,
    });
    expect(last.status).toBe(400);
    expect(last.body.error).toBe('bad_request');
    const after = await call(vexil, 'GET', `${base}/${id}`, { token: org.token });
    expect(after.body.secrets).toEqual([{ id: second!.id, createdAt: expect.any(String) }]);
  });

  it('plan limits: a Solo org gets one subscription, a Team org three', async () => {
    for (const [slug, plan, limit] of [
      ['solo-org', 'Solo', 1],
      ['team-org', 'Team', 3],
    ] as const) {
      const owner = await createOrg(vexil, slug, { plan });
      const url = `/api/v1/orgs/${slug}/webhooks`;
      const body = { name: 'Hook', url: PUBLIC_URL, provider: 'GenericHttp' };
      for (let i = 0; i < limit; i++) {
        expect((await call(vexil, 'POST', url, { token: owner.token, body })).status).toBe(201);
      }
      const refused = await call(vexil, 'POST', url, { token: owner.token, body });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('plan_limit_reached');
      const list = await call(vexil, 'GET', url, { token: owner.token });
      expect(list.body.items).toHaveLength(limit);
      expect(list.body._actions.create.allowed).toBe(false);
      const secrets = await vexil.services.db
        .selectFrom('webhook_secrets')
        .innerJoin(
          'webhook_subscriptions',
          'webhook_subscriptions.id',
          'webhook_secrets.subscription_id',
        )
        .select('webhook_secrets.id')
        .where('webhook_subscriptions.organization_id', '=', owner.orgId)
        .execute();
      expect(secrets).toHaveLength(limit);
    }
  });
});
