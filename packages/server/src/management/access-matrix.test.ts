import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueToken } from '../auth/tokens.js';
import type { Role } from '../db/schema.js';
import {
  call,
  createMember,
  createSession,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestResponse,
  type TestVexil,
} from '../test-support/harness.js';
import { managementRoutes, type ManagementRoute } from '../test-support/route-table.js';

/**
 * Proof of access control (spec: Authentication; design record 004): every management route,
 * taken from the live route table, is called with every kind of credential.
 *
 * Each route must be classified below. `minimum` is the lowest org role that may call it;
 * `authenticated` means any valid credential (no org in the path); `user` means any personal
 * token, while service tokens get 403. `body` is a valid request body, so that a caller below
 * the minimum reaches the role check instead of body validation.
 */
interface RouteClass {
  minimum: Role | 'authenticated' | 'user';
  body?: unknown;
  /** Also answers a request without any credential (an invitation accepted by a new user). */
  public?: boolean;
  /** Answers with a Server-Sent Events stream that stays open: called over a socket. */
  stream?: boolean;
  /** Only people call it: a service token is refused with 403 `people_only` (reviews). */
  peopleOnly?: true;
}

const UNKNOWN_ID = '00000000-0000-7000-8000-000000000000';

const ROUTES: Record<string, RouteClass> = {
  'GET /api/v1/me': { minimum: 'authenticated' },
  'POST /api/v1/me/tokens': { minimum: 'user', body: { name: 'matrix' } },
  'GET /api/v1/me/tokens': { minimum: 'user' },
  'DELETE /api/v1/me/tokens/{tokenId}': { minimum: 'user' },
  'GET /api/v1/orgs': { minimum: 'authenticated' },
  'GET /api/v1/orgs/{org}': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}': { minimum: 'Owner', body: { name: 'Acme' } },
  'POST /api/v1/orgs/{org}/service-tokens': {
    minimum: 'Admin',
    body: { name: 'matrix', role: 'Viewer' },
  },
  'GET /api/v1/orgs/{org}/service-tokens': { minimum: 'Admin' },
  'DELETE /api/v1/orgs/{org}/service-tokens/{tokenId}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/relay-keys': { minimum: 'Admin', body: { name: 'matrix' } },
  'GET /api/v1/orgs/{org}/relay-keys': { minimum: 'Admin' },
  'DELETE /api/v1/orgs/{org}/relay-keys/{relayKeyId}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/projects': { minimum: 'Admin', body: { key: 'matrix', name: 'M' } },
  'GET /api/v1/orgs/{org}/projects': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}': { minimum: 'Admin', body: { name: 'Web' } },
  'DELETE /api/v1/orgs/{org}/projects/{project}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/projects/{project}/environments': {
    minimum: 'Member',
    body: { key: 'matrix' },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/environments': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/export': { minimum: 'Viewer' },
  'POST /api/v1/orgs/{org}/projects/{project}/apply': {
    minimum: 'Member',
    body: { version: 1, project: { key: 'web' }, environments: [] },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/change-requests': { minimum: 'Viewer' },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests': {
    minimum: 'Member',
    body: {
      environment: 'development',
      title: 'Matrix',
      changes: [
        {
          kind: 'flag',
          flagKey: 'new-checkout',
          baseRevision: 1,
          configuration: { enabled: false, defaultVariation: 'true', offVariation: 'false' },
        },
      ],
    },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/change-requests/{number}': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/change-requests/{number}': {
    minimum: 'Member',
    body: { title: 'Matrix' },
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/submit': {
    minimum: 'Member',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/apply': {
    minimum: 'Member',
    body: {},
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/cancel': {
    minimum: 'Member',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/reviews': {
    minimum: 'Member',
    body: { decision: 'approve' },
    peopleOnly: true,
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/schedule': {
    minimum: 'Member',
  },
  'GET /api/v1/orgs/{org}/projects/{project}/environments/{env}': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/environments/{env}': {
    minimum: 'Member',
    body: { name: 'Production' },
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/environments/{env}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags': { minimum: 'Member', body: { key: 'm' } },
  'GET /api/v1/orgs/{org}/projects/{project}/flags': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}': {
    minimum: 'Member',
    body: { name: 'New checkout' },
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}': { minimum: 'Admin' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/removal-candidates': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/usage': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/history': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/usage': { minimum: 'Viewer' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/archive': { minimum: 'Member' },
  'PUT /api/v1/orgs/{org}/projects/{project}/code-references/{repository}/branches/{branch}': {
    minimum: 'Member',
    body: { scannedAt: '2026-11-28T10:00:00.000Z', references: [] },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/code-references/repositories': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/code-references/repositories/{repository}': {
    minimum: 'Member',
    body: { defaultBranch: 'main' },
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/code-references/repositories/{repository}': {
    minimum: 'Member',
  },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/code-references': { minimum: 'Viewer' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/restore': { minimum: 'Member' },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/expiry': { minimum: 'Member' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations': {
    minimum: 'Member',
    body: { key: 'matrix', value: 'true' },
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations/{variation}': {
    minimum: 'Member',
    body: { name: 'x' },
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations/{variation}': {
    minimum: 'Member',
  },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}': {
    minimum: 'Viewer',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}': {
    minimum: 'Member',
    body: {},
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/toggle': {
    minimum: 'Member',
    body: { enabled: true },
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/copy': {
    minimum: 'Member',
    body: { target: 'production' },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/release-plans': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan': {
    minimum: 'Viewer',
  },
  'PUT /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan': {
    minimum: 'Member',
    body: { variation: 'true', steps: [{ percentage: 100, after: 'PT0S' }] },
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan': {
    minimum: 'Member',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/pause': {
    minimum: 'Member',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/resume':
    { minimum: 'Member' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/rollback':
    { minimum: 'Member' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/guard': {
    minimum: 'Viewer',
  },
  'GET /api/v1/orgs/{org}/projects/{project}/metrics': { minimum: 'Viewer' },
  'POST /api/v1/orgs/{org}/projects/{project}/metrics': {
    minimum: 'Member',
    body: { key: 'm', name: 'm', eventKey: 'e', kind: 'conversion', direction: 'higher_is_better' },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/metrics/{metric}': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/metrics/{metric}': {
    minimum: 'Member',
    body: { name: 'm' },
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/metrics/{metric}': { minimum: 'Member' },
  'GET /api/v1/orgs/{org}/projects/{project}/experiments': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments': {
    minimum: 'Viewer',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments': {
    minimum: 'Member',
    body: {
      key: 'x',
      name: 'x',
      variations: [
        { key: 'true', weight: 5000 },
        { key: 'false', weight: 5000 },
      ],
      controlVariation: 'false',
      primaryMetric: 'none',
    },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}':
    { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}':
    { minimum: 'Member', body: { name: 'x' } },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}':
    { minimum: 'Member' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}/start':
    { minimum: 'Member' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}/stop':
    { minimum: 'Member', body: { decision: 'inconclusive' } },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}/results':
    { minimum: 'Viewer' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/evaluate': {
    minimum: 'Viewer',
    body: { context: {} },
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules': {
    minimum: 'Member',
    body: { variationId: UNKNOWN_ID },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules': {
    minimum: 'Viewer',
  },
  'GET /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}': {
    minimum: 'Viewer',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}': {
    minimum: 'Member',
    body: {},
  },
  'PUT /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}': {
    minimum: 'Member',
    body: { variationId: UNKNOWN_ID },
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}': {
    minimum: 'Member',
  },
  'PUT /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/reorder': {
    minimum: 'Member',
    body: { ruleIds: [] },
  },
  'POST /api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys': {
    minimum: 'Member',
    body: { name: 'matrix', type: 'ServerSide' },
  },
  'GET /api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys/{keyId}': {
    minimum: 'Viewer',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys/{keyId}': {
    minimum: 'Member',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/segments': { minimum: 'Member', body: { key: 's' } },
  'GET /api/v1/orgs/{org}/projects/{project}/segments': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/segments/{segment}': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/projects/{project}/segments/{segment}/usage': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/segments/{segment}': {
    minimum: 'Member',
    body: {},
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/segments/{segment}': { minimum: 'Member' },
  'POST /api/v1/orgs/{org}/webhooks': {
    minimum: 'Admin',
    // An IP literal: no DNS lookup, and refused as a non-public target, which is fine here.
    body: { name: 'matrix', url: 'https://203.0.113.10/hook' },
  },
  'GET /api/v1/orgs/{org}/webhooks': { minimum: 'Admin' },
  'GET /api/v1/orgs/{org}/webhooks/event-types': { minimum: 'Admin' },
  'GET /api/v1/orgs/{org}/webhooks/{id}': { minimum: 'Admin' },
  'PATCH /api/v1/orgs/{org}/webhooks/{id}': { minimum: 'Admin', body: { name: 'x' } },
  'DELETE /api/v1/orgs/{org}/webhooks/{id}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/webhooks/{id}/secrets': { minimum: 'Admin' },
  'DELETE /api/v1/orgs/{org}/webhooks/{id}/secrets/{secretId}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/webhooks/{id}/test': { minimum: 'Admin' },
  'GET /api/v1/orgs/{org}/webhooks/{id}/deliveries': { minimum: 'Admin' },
  'GET /api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}/redeliver': {
    minimum: 'Admin',
  },
  'GET /api/v1/orgs/{org}/audit-log': { minimum: 'Admin' },
  'GET /api/v1/orgs/{org}/events/stream': { minimum: 'Viewer', stream: true },
  // People and sign-in (design record 022).
  'GET /api/v1/me/sessions': { minimum: 'user' },
  'DELETE /api/v1/me/sessions/{id}': { minimum: 'user' },
  'POST /api/v1/me/password': {
    minimum: 'user',
    body: { currentPassword: 'not the password', newPassword: 'a fresh and long passphrase' },
  },
  'GET /api/v1/orgs/{org}/members': { minimum: 'Viewer' },
  'GET /api/v1/orgs/{org}/members/{userId}': { minimum: 'Viewer' },
  'PATCH /api/v1/orgs/{org}/members/{userId}': { minimum: 'Admin', body: { role: 'Viewer' } },
  'DELETE /api/v1/orgs/{org}/members/{userId}': { minimum: 'Admin' },
  'POST /api/v1/orgs/{org}/invitations': {
    minimum: 'Admin',
    body: { email: 'matrix@example.test', role: 'Viewer' },
  },
  'GET /api/v1/orgs/{org}/invitations': { minimum: 'Admin' },
  'DELETE /api/v1/orgs/{org}/invitations/{id}': { minimum: 'Admin' },
  'GET /api/v1/invitations/{token}': { minimum: 'authenticated', public: true },
  'POST /api/v1/invitations/accept': {
    minimum: 'user',
    public: true,
    body: { token: 'vxl_inv_unknown' },
  },
  'POST /api/v1/orgs/{org}/sso-connections': {
    minimum: 'Owner',
    // Nothing listens there: discovery fails at once, which is fine here.
    body: { name: 'matrix', issuer: 'https://127.0.0.1:1/', clientId: 'c', clientSecret: 's' },
  },
  'GET /api/v1/orgs/{org}/sso-connections': { minimum: 'Owner' },
  'GET /api/v1/orgs/{org}/sso-connections/{id}': { minimum: 'Owner' },
  'PATCH /api/v1/orgs/{org}/sso-connections/{id}': { minimum: 'Owner', body: { name: 'x' } },
  'DELETE /api/v1/orgs/{org}/sso-connections/{id}': { minimum: 'Owner' },
};

/** Path parameters name fixtures that exist; any other parameter gets an unknown id. */
const FIXTURES: Record<string, string> = {
  org: 'acme',
  project: 'web',
  env: 'production',
  flag: 'new-checkout',
  // The first change request of the fixture project (created by the POST route, or absent: 404).
  number: '1',
};

/** Deletions come last, deepest first, so that they never remove a fixture a later route needs. */
async function orderedRoutes(): Promise<ManagementRoute[]> {
  const depth = (route: ManagementRoute) => route.path.split('/').length;
  const rank = (route: ManagementRoute) => (route.method === 'DELETE' ? 1000 - depth(route) : 0);
  return (await managementRoutes()).sort((a, b) => rank(a) - rank(b));
}

const ROUTE_TABLE = await orderedRoutes();
const ORG_ROLES: readonly Role[] = ['Viewer', 'Member', 'Admin', 'Owner'];

function concretePath(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => FIXTURES[name] ?? UNKNOWN_ID);
}

function expectEnvelope(response: TestResponse): void {
  expect(response.body?.error, response.text).toEqual(expect.any(String));
  expect(response.body.docs_url).toMatch(new RegExp(`/docs/errors#${response.body.error}$`));
}

describe('access matrix: route classification', () => {
  it('every management route is classified (add new routes to ROUTES)', () => {
    const unclassified = ROUTE_TABLE.filter((route) => !(route.id in ROUTES)).map((r) => r.id);
    expect(unclassified, 'classify these routes in access-matrix.test.ts').toEqual([]);
  });

  it('every classified route exists', () => {
    const live = new Set(ROUTE_TABLE.map((route) => route.id));
    expect(Object.keys(ROUTES).filter((id) => !live.has(id))).toEqual([]);
  });
});

describe.each(testDialects())('access matrix on %s', (dialect) => {
  const clock = new TestClock();
  let vexil: TestVexil;
  const userTokens = {} as Record<Role, string>;
  /** Browser sessions of the same users: the cookie and a same-origin `Origin`. */
  const userSessions = {} as Record<Role, Record<string, string>>;
  const serviceTokens = {} as Record<Role, string>;
  let revoked: string;
  let expired: string;
  let otherOrgTokens: string[];
  /** Owner service tokens whose allowlist names only the fixture project, or only another one. */
  let ownProjectToken: string;
  let otherProjectToken: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, {
      clock,
      config: { rateLimit: { points: 100_000, windowSeconds: 60 } },
    });
    const org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    const now = clock.now().toISOString();
    const db = vexil.services.db;
    userTokens.Owner = org.token;
    for (const role of ORG_ROLES) {
      const userId =
        role === 'Owner' ? org.userId : (await createMember(vexil, org.orgId, role)).userId;
      if (role !== 'Owner')
        userTokens[role] = (
          await issueToken(db, { kind: 'personal', userId, name: 'matrix', expiresAt: null, now })
        ).token;
      userSessions[role] = (await createSession(vexil, userId)).headers;
      serviceTokens[role] = (
        await issueToken(db, {
          kind: 'service',
          organizationId: org.orgId,
          role,
          projectScope: null,
          name: `service ${role}`,
          expiresAt: null,
          now,
        })
      ).token;
    }
    const revokedToken = await issueToken(db, {
      kind: 'personal',
      userId: org.userId,
      name: 'revoked',
      expiresAt: null,
      now,
    });
    await db
      .updateTable('api_tokens')
      .set({ revoked_at: now })
      .where('id', '=', revokedToken.row.id)
      .execute();
    revoked = revokedToken.token;
    const expiring = await issueToken(db, {
      kind: 'personal',
      userId: org.userId,
      name: 'expiring',
      expiresAt: new Date(clock.now().getTime() + 60 * 60 * 1000).toISOString(),
      now,
    });
    expect((await call(vexil, 'GET', '/api/v1/me', { token: expiring.token })).status).toBe(200);
    clock.advance(2 * 60 * 60 * 1000);
    expired = expiring.token;
    const other = await createOrg(vexil, 'other');
    const otherService = await issueToken(db, {
      kind: 'service',
      organizationId: other.orgId,
      role: 'Owner',
      projectScope: null,
      name: 'other',
      expiresAt: null,
      now,
    });
    otherOrgTokens = [other.token, otherService.token];
    const projects = '/api/v1/orgs/acme/projects';
    const elsewhere = await call(vexil, 'POST', projects, {
      token: org.token,
      body: { key: 'elsewhere', name: 'Elsewhere' },
    });
    const web = await call(vexil, 'GET', `${projects}/web`, { token: org.token });
    const scopedTo = async (projectId: string) =>
      (
        await issueToken(db, {
          kind: 'service',
          organizationId: org.orgId,
          role: 'Owner',
          projectScope: [projectId],
          name: `scoped to ${projectId}`,
          expiresAt: null,
          now,
        })
      ).token;
    ownProjectToken = await scopedTo(web.body.id);
    otherProjectToken = await scopedTo(elsewhere.body.id);
  });
  afterAll(() => vexil.close());

  /** Opens a stream over a socket: its status, and its error body when refused; then hangs up. */
  async function openStream(url: string, headers: Record<string, string>): Promise<TestResponse> {
    if (!vexil.app.server.listening) await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const address = vexil.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const response = await fetch(`http://127.0.0.1:${String(port)}${url}`, { headers });
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      await response.body?.cancel();
      return { status: response.status, headers: {}, body: undefined, text: '' };
    }
    const text = await response.text();
    return { status: response.status, headers: {}, body: JSON.parse(text) as unknown, text };
  }

  it.each(ROUTE_TABLE.filter((route) => route.id in ROUTES))('$id', async (route) => {
    const { minimum, body, public: isPublic, stream, peopleOnly } = ROUTES[route.id]!;
    const url = concretePath(route.path);
    const send = (token: string | Record<string, string> | undefined) => {
      // Explicit header: the harness sends `vxl_s…` tokens raw, as it does SDK keys.
      const headers =
        typeof token === 'string' ? { authorization: `Bearer ${token}` } : (token ?? {});
      return stream ? openStream(url, headers) : call(vexil, route.method, url, { body, headers });
    };

    if (isPublic) {
      const response = await send(undefined);
      expect([401, 403, 500], `${route.id} without a credential`).not.toContain(response.status);
    }
    const strangers = [
      ...(isPublic ? [] : [undefined]),
      'vxl_pat_not-a-token',
      revoked,
      expired,
      { cookie: 'vexil_session=vxl_ses_not-a-session' },
    ];
    for (const token of strangers) {
      const response = await send(token);
      const label = `${route.id} with ${JSON.stringify(token) ?? 'no credential'}`;
      expect(response.status, label).toBe(401);
      expectEnvelope(response);
    }
    if (route.path.includes('{org}')) {
      for (const token of otherOrgTokens) {
        const response = await send(token);
        expect(response.status, `${route.id} from another org`).toBe(404);
        expectEnvelope(response);
      }
    }

    // Spec: a service token's project allowlist. Before the role callers, so that the fixture
    // project still exists when the token scoped to it calls (deletions included).
    if (route.path.includes('{project}')) {
      const outside = await send(otherProjectToken);
      expect(outside.status, `${route.id} scoped to another project: ${outside.text}`).toBe(404);
      expectEnvelope(outside);
      const inside = await send(ownProjectToken);
      const label = `${route.id} scoped to its project: ${inside.status} ${inside.text}`;
      if (peopleOnly) expect(inside.body?.error, label).toBe('people_only');
      else expect([401, 403, 500], label).not.toContain(inside.status);
      expect(inside.body?.message ?? '', label).not.toMatch(/^Project "/);
    }

    const callers = [
      ...ORG_ROLES.map((role) => ({ label: `user ${role}`, role, service: false, session: false })),
      ...ORG_ROLES.map((role) => ({
        label: `session ${role}`,
        role,
        service: false,
        session: true,
      })),
      ...ORG_ROLES.map((role) => ({
        label: `service ${role}`,
        role,
        service: true,
        session: false,
      })),
    ];
    for (const caller of callers) {
      const response = await send(
        caller.session
          ? userSessions[caller.role]
          : (caller.service ? serviceTokens : userTokens)[caller.role],
      );
      const label = `${route.id} as ${caller.label}: ${response.status} ${response.text}`;
      expect(response.status, label).not.toBe(500);
      expect(response.status, label).not.toBe(401);
      const refused =
        minimum === 'user'
          ? caller.service
          : minimum !== 'authenticated' &&
            ORG_ROLES.indexOf(caller.role) < ORG_ROLES.indexOf(minimum);
      if (refused) {
        expect(response.status, label).toBe(403);
        expect(response.body.error, label).toBe('forbidden');
      } else if (peopleOnly && caller.service) {
        expect(response.body?.error, label).toBe('people_only');
      } else {
        expect(response.body?.error, label).not.toBe('forbidden');
      }
      if (response.status >= 400) expectEnvelope(response);
    }
  });
});
