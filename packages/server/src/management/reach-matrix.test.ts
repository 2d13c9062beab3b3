import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  testWebhookSettings,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';
import { managementRoutes } from '../test-support/route-table.js';
import { SseReader } from '../test-support/sse-reader.js';

/**
 * Proof that a project allowlist bounds every route (design record 033): every management route,
 * taken from the live route table, is classified by what it does with the organization, and
 * called by an Owner limited to project `web` while project `elsewhere` holds data, grants and
 * events the caller must never reach.
 *
 * Routes under `{project}` need no entry: they are resolved within the allowlist
 * (access-matrix.test.ts proves it).
 * - `organization`: changes the organization as a whole: refused (403 `outside_allowlist`).
 * - `grant`: gives access; `body` grants `elsewhere` (`{elsewhere}` is replaced by its id) and is
 *   refused on `projectIds`. `within` resolves path ids to grants inside the caller's reach.
 * - `reach`: reads or acts on organization-wide data: answers only within the caller's reach
 *   (path ids name things beyond it: 404 or 403 `outside_allowlist`).
 * - `none`: neither grants nor reads anything of a project; `why` says so.
 *
 * Every GET answer (and every answer of a `reach` or `none` route) must hold no id of
 * `elsewhere`'s data or of a grant beyond the caller's reach.
 */
type ReachClass =
  | { reach: 'organization'; body?: Record<string, unknown> }
  | { reach: 'grant'; body: Record<string, unknown>; within?: boolean }
  | { reach: 'reach'; stream?: boolean }
  | { reach: 'none'; why: string };

const NO_PROJECT_DATA = { reach: 'none', why: 'about the caller or the org itself' } as const;

const REACH: Record<string, ReachClass> = {
  'GET /api/v1/me': NO_PROJECT_DATA,
  'POST /api/v1/me/tokens': { reach: 'none', why: 'a personal token acts as its user' },
  'GET /api/v1/me/tokens': NO_PROJECT_DATA,
  'DELETE /api/v1/me/tokens/{tokenId}': NO_PROJECT_DATA,
  'GET /api/v1/me/sessions': NO_PROJECT_DATA,
  'DELETE /api/v1/me/sessions/{id}': NO_PROJECT_DATA,
  'POST /api/v1/me/password': { reach: 'none', why: 'the caller changes their own password' },
  'GET /api/v1/orgs': NO_PROJECT_DATA,
  'GET /api/v1/orgs/{org}': NO_PROJECT_DATA,
  'PATCH /api/v1/orgs/{org}': { reach: 'organization', body: { name: 'Acme' } },
  'POST /api/v1/orgs/{org}/projects': { reach: 'organization', body: { key: 'new', name: 'N' } },
  'GET /api/v1/orgs/{org}/projects': { reach: 'reach' },
  'POST /api/v1/orgs/{org}/service-tokens': {
    reach: 'grant',
    body: { name: 'wider', role: 'Viewer', projectIds: ['{elsewhere}'] },
  },
  'GET /api/v1/orgs/{org}/service-tokens': { reach: 'reach' },
  'DELETE /api/v1/orgs/{org}/service-tokens/{tokenId}': { reach: 'reach' },
  'POST /api/v1/orgs/{org}/relay-keys': {
    reach: 'grant',
    body: { name: 'wider', projectIds: ['{elsewhere}'] },
  },
  'GET /api/v1/orgs/{org}/relay-keys': { reach: 'reach' },
  'DELETE /api/v1/orgs/{org}/relay-keys/{relayKeyId}': { reach: 'reach' },
  'POST /api/v1/orgs/{org}/webhooks': {
    reach: 'grant',
    body: { name: 'wider', url: 'https://127.0.0.1:1/hook', projectIds: ['{elsewhere}'] },
  },
  'GET /api/v1/orgs/{org}/webhooks': { reach: 'reach' },
  'GET /api/v1/orgs/{org}/webhooks/event-types': { reach: 'none', why: 'the catalogue' },
  'GET /api/v1/orgs/{org}/webhooks/{id}': { reach: 'reach' },
  'PATCH /api/v1/orgs/{org}/webhooks/{id}': {
    reach: 'grant',
    body: { projectIds: ['{elsewhere}'] },
    within: true,
  },
  'DELETE /api/v1/orgs/{org}/webhooks/{id}': { reach: 'reach' },
  'POST /api/v1/orgs/{org}/webhooks/{id}/secrets': { reach: 'reach' },
  'DELETE /api/v1/orgs/{org}/webhooks/{id}/secrets/{secretId}': { reach: 'reach' },
  'POST /api/v1/orgs/{org}/webhooks/{id}/test': { reach: 'reach' },
  'GET /api/v1/orgs/{org}/webhooks/{id}/deliveries': { reach: 'reach' },
  'GET /api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}': { reach: 'reach' },
  'POST /api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}/redeliver': { reach: 'reach' },
  'GET /api/v1/orgs/{org}/audit-log': { reach: 'reach' },
  'GET /api/v1/orgs/{org}/events/stream': { reach: 'reach', stream: true },
  'GET /api/v1/orgs/{org}/members': { reach: 'reach' },
  'GET /api/v1/orgs/{org}/members/{userId}': { reach: 'reach' },
  'PATCH /api/v1/orgs/{org}/members/{userId}': {
    reach: 'grant',
    body: { projectIds: ['{elsewhere}'] },
    within: true,
  },
  'DELETE /api/v1/orgs/{org}/members/{userId}': { reach: 'reach' },
  'POST /api/v1/orgs/{org}/invitations': {
    reach: 'grant',
    body: { email: 'wider@example.test', role: 'Viewer', projectIds: ['{elsewhere}'] },
  },
  'GET /api/v1/orgs/{org}/invitations': { reach: 'reach' },
  'DELETE /api/v1/orgs/{org}/invitations/{id}': { reach: 'reach' },
  'GET /api/v1/invitations/{token}': { reach: 'none', why: 'reads what the link in hand is for' },
  'POST /api/v1/invitations/accept': { reach: 'none', why: 'takes what an invitation grants' },
  'POST /api/v1/orgs/{org}/sso-connections': {
    reach: 'organization',
    body: { name: 'x', issuer: 'https://127.0.0.1:1/', clientId: 'c', clientSecret: 's' },
  },
  'GET /api/v1/orgs/{org}/sso-connections': { reach: 'none', why: 'sign-in settings' },
  'GET /api/v1/orgs/{org}/sso-connections/{id}': { reach: 'none', why: 'sign-in settings' },
  'PATCH /api/v1/orgs/{org}/sso-connections/{id}': { reach: 'organization', body: { name: 'x' } },
  'DELETE /api/v1/orgs/{org}/sso-connections/{id}': { reach: 'organization' },
};

const UNKNOWN_ID = '00000000-0000-7000-8000-000000000000';

const ROUTE_TABLE = await managementRoutes();

describe('reach matrix: route classification', () => {
  it('every management route says what it does with the organization (add it to REACH)', () => {
    const unclassified = ROUTE_TABLE.filter((route) => {
      const known = REACH[route.id] ?? (route.path.includes('{project}') ? 'project' : undefined);
      return known === undefined;
    });
    expect(unclassified.map((route) => route.id)).toEqual([]);
    const live = new Set(ROUTE_TABLE.map((route) => route.id));
    expect(Object.keys(REACH).filter((id) => !live.has(id))).toEqual([]);
  });
});

describe.each(testDialects())('reach matrix on %s', (dialect) => {
  let vexil: TestVexil;
  /** An Owner member limited to `web`: no role minimum stops it, only its allowlist. */
  let limited: { token: string; userId: string };
  let owner: string;
  let webId: string;
  let elsewhereId: string;
  /** Path parameters naming grants beyond the caller's reach, and within it. */
  const beyond: Record<string, string> = {};
  const within: Record<string, string> = {};
  /** Ids the limited caller must never be shown. */
  const secrets: string[] = [];

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, {
      config: {
        webhooks: testWebhookSettings(),
        rateLimit: { points: 100_000, windowSeconds: 60 },
      },
    });
    const org = await createOrg(vexil);
    owner = org.token;
    const base = '/api/v1/orgs/acme';
    await createProjectWithFlag(vexil, org, { project: 'web' });
    const project = async (key: string) =>
      (await call(vexil, 'GET', `${base}/projects/${key}`, { token: owner })).body.id as string;
    webId = await project('web');
    const limitedTo = async (role: 'Owner' | 'Admin', projectId: string) => {
      const member = await createMember(vexil, org.orgId, role);
      await vexil.services.db
        .updateTable('memberships')
        .set({ project_ids: JSON.stringify([projectId]) })
        .where('user_id', '=', member.userId)
        .execute();
      return member;
    };
    limited = await limitedTo('Owner', webId);

    const post = async (path: string, body: object, token = owner) => {
      const response = await call(vexil, 'POST', `${base}${path}`, { token, body });
      expect(response.status, response.text).toBe(201);
      return response.body as Record<string, unknown> & { id: string };
    };
    const hook = { url: 'https://127.0.0.1:1/hook' };
    beyond.id = (await post('/webhooks', { name: 'everything', ...hook })).id;
    within.id = (
      await post('/webhooks', { name: 'web', ...hook, projectIds: [webId] }, limited.token)
    ).id;
    // Now `elsewhere` and its flag: events that reach the organization-wide subscription.
    await createProjectWithFlag(vexil, org, { project: 'elsewhere' });
    elsewhereId = await project('elsewhere');
    const elsewhereMember = await limitedTo('Admin', elsewhereId);
    beyond.userId = elsewhereMember.userId;
    within.userId = (await limitedTo('Admin', webId)).userId;
    beyond.tokenId = (
      await post('/service-tokens', {
        name: 'elsewhere',
        role: 'Viewer',
        projectIds: [elsewhereId],
      })
    ).id;
    beyond.relayKeyId = (
      await post('/relay-keys', { name: 'elsewhere', projectIds: [elsewhereId] })
    ).id;
    const invitation = await post('/invitations', {
      email: 'elsewhere@example.test',
      role: 'Viewer',
      projectIds: [elsewhereId],
    });
    beyond.invitationId = invitation.id;
    const db = vexil.services.db;
    const delivery = await db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('subscription_id', '=', beyond.id)
      .executeTakeFirstOrThrow();
    beyond.deliveryId = delivery.id;
    const elsewhereEvents = await db
      .selectFrom('webhook_events')
      .select('id')
      .where('project_id', '=', elsewhereId)
      .execute();
    const elsewhereRows = await db
      .selectFrom('flags')
      .select('id')
      .where('project_id', '=', elsewhereId)
      .union(db.selectFrom('environments').select('id').where('project_id', '=', elsewhereId))
      .execute();
    expect(elsewhereEvents.length).toBeGreaterThan(0);
    secrets.push(
      elsewhereId,
      elsewhereMember.userId,
      beyond.id,
      beyond.tokenId,
      beyond.relayKeyId,
      beyond.deliveryId,
      invitation.id,
      'elsewhere@example.test',
      ...elsewhereEvents.map((row) => row.id),
      ...elsewhereRows.map((row) => row.id),
    );
  });
  afterAll(() => vexil.close());

  function concrete(path: string, ids: Record<string, string>): string {
    return path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (name === 'org') return 'acme';
      if (name === 'project') return 'web';
      if (path.startsWith('/api/v1/me/')) return UNKNOWN_ID;
      // `{id}` names a webhook or an invitation (an SSO connection's is unknown).
      if (name === 'id' && !path.includes('/webhooks/'))
        return path.includes('/invitations/') ? (ids.invitationId ?? UNKNOWN_ID) : UNKNOWN_ID;
      return ids[name] ?? UNKNOWN_ID;
    });
  }

  /** The answer names nothing beyond the caller's reach, except what the request itself named. */
  function expectNoLeak(route: string, url: string, response: TestResponse): void {
    const leaked = secrets.filter(
      (secret) => !url.includes(secret) && response.text.includes(secret),
    );
    expect(leaked, `${route} showed ${response.text}`).toEqual([]);
  }

  /**
   * The stream's answer as the limited caller hears it: opened, then a change in `elsewhere` and
   * one in `web`, read until the one in `web` arrives.
   */
  async function streamed(url: string): Promise<TestResponse> {
    if (!vexil.app.server.listening) await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = vexil.app.server.address() as AddressInfo;
    const abort = new AbortController();
    const response = await fetch(`http://127.0.0.1:${String(port)}${url}`, {
      headers: { authorization: `Bearer ${limited.token}` },
      signal: abort.signal,
    });
    const reader = new SseReader(response, abort);
    expect((await reader.next()).event).toBe('ready');
    for (const key of ['elsewhere', 'web']) {
      const flag = `/api/v1/orgs/acme/projects/${key}/flags/new-checkout`;
      const renamed = await call(vexil, 'PATCH', flag, { token: owner, body: { name: key } });
      expect(renamed.status, renamed.text).toBe(200);
    }
    await reader.until(() => reader.events.some((event) => event.data.includes(webId)), 'web');
    reader.close();
    const text = reader.events.map((event) => event.data).join('\n');
    return { status: response.status, headers: {}, body: undefined, text };
  }

  const routes = ROUTE_TABLE.filter((route) => !route.path.includes('{project}'));
  it.each(routes)('$id', async (route) => {
    const kind = REACH[route.id];
    if (!kind) throw new Error(`unclassified: ${route.id}`);
    const ids = kind.reach === 'grant' && kind.within ? within : beyond;
    const url = concrete(route.path, ids);
    const body =
      kind.reach === 'grant' || kind.reach === 'organization'
        ? (JSON.parse(
            JSON.stringify(kind.body ?? {}).replaceAll('{elsewhere}', elsewhereId),
          ) as object)
        : route.method === 'GET' || route.method === 'DELETE'
          ? undefined
          : {};
    const response =
      kind.reach === 'reach' && kind.stream
        ? await streamed(url)
        : await call(vexil, route.method, url, { token: limited.token, body });
    const label = `${route.id}: ${response.status} ${response.text}`;
    expect(response.status, label).not.toBe(500);
    switch (kind.reach) {
      case 'organization':
        expect(response.status, label).toBe(403);
        expect(response.body.error, label).toBe('outside_allowlist');
        break;
      case 'grant':
        expect(response.status, label).toBe(400);
        expect(response.body.fields?.projectIds, label).toEqual([
          expect.stringMatching(/your own/),
        ]);
        break;
      case 'reach':
        if (route.path.match(/\{(id|userId|tokenId|relayKeyId|deliveryId)\}/))
          expect([403, 404], label).toContain(response.status);
        if (response.status === 403) expect(response.body.error, label).toBe('outside_allowlist');
        expectNoLeak(route.id, url, response);
        break;
      case 'none':
        expectNoLeak(route.id, url, response);
        break;
    }
  });
});
