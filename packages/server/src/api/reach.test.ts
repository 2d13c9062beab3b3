import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueToken } from '../auth/tokens.js';
import type { Role } from '../db/schema.js';
import {
  call,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  testWebhookSettings,
  type TestVexil,
} from '../test-support/harness.js';

/**
 * Issue 31, finding 2 (design record 033): a project allowlist bounds what its holder grants and
 * reads. Each case is one of the reported reproductions, or a neighbour of one.
 */
describe.each(testDialects())('grants within the granter’s reach on %s', (dialect) => {
  let vexil: TestVexil;
  let owner: string;
  let orgId: string;
  let web: string;
  let mobile: string;
  /** An Admin service token limited to `web`. */
  let webAdminToken: string;
  /** An Admin member limited to `web`, and their personal token. */
  let webAdmin: { token: string; userId: string };
  const base = '/api/v1/orgs/acme';

  const serviceToken = async (role: Role, projectScope: string[] | null) =>
    (
      await issueToken(vexil.services.db, {
        kind: 'service',
        organizationId: orgId,
        role,
        projectScope,
        name: `${role} ${JSON.stringify(projectScope)}`,
        expiresAt: null,
        now: vexil.services.clock.now().toISOString(),
      })
    ).token;

  const memberLimitedTo = async (role: Role, projectIds: string[] | null) => {
    const member = await createMember(vexil, orgId, role);
    await vexil.services.db
      .updateTable('memberships')
      .set({ project_ids: projectIds && JSON.stringify(projectIds) })
      .where('user_id', '=', member.userId)
      .execute();
    return member;
  };

  beforeAll(async () => {
    vexil = await createTestVexil(dialect, {
      config: { webhooks: testWebhookSettings() },
    });
    const org = await createOrg(vexil);
    owner = org.token;
    orgId = org.orgId;
    await createProjectWithFlag(vexil, org, { project: 'web' });
    await createProjectWithFlag(vexil, org, { project: 'mobile' });
    const projectId = async (key: string) =>
      (await call(vexil, 'GET', `${base}/projects/${key}`, { token: owner })).body.id as string;
    web = await projectId('web');
    mobile = await projectId('mobile');
    webAdminToken = await serviceToken('Admin', [web]);
    webAdmin = await memberLimitedTo('Admin', [web]);
  });
  afterAll(() => vexil.close());

  it('the audit log shows an allowlisted caller only events of its projects', async () => {
    for (const token of [webAdminToken, webAdmin.token]) {
      const log = await call(vexil, 'GET', `${base}/audit-log?limit=200`, { token });
      expect(log.status, log.text).toBe(200);
      const projects = new Set(log.body.items.map((item: { projectId: string }) => item.projectId));
      expect([...projects]).toEqual([web]);
      const asked = await call(vexil, 'GET', `${base}/audit-log?projectId=${mobile}`, { token });
      expect(asked.body.items).toEqual([]);
    }
    const all = await call(vexil, 'GET', `${base}/audit-log?limit=200`, { token: owner });
    const projects = new Set(all.body.items.map((item: { projectId: string }) => item.projectId));
    expect(projects).toEqual(new Set([web, mobile]));
  });

  it('an allowlisted caller cannot create a service token beyond its allowlist', async () => {
    for (const projectIds of [undefined, null, [mobile], [web, mobile]]) {
      const response = await call(vexil, 'POST', `${base}/service-tokens`, {
        token: webAdminToken,
        body: { name: 'wider', role: 'Admin', ...(projectIds === undefined ? {} : { projectIds }) },
      });
      expect(response.status, `${JSON.stringify(projectIds)}: ${response.text}`).toBe(400);
      expect(response.body.fields.projectIds).toEqual([expect.stringMatching(/your own/)]);
    }
    const within = await call(vexil, 'POST', `${base}/service-tokens`, {
      token: webAdminToken,
      body: { name: 'within', role: 'Member', projectIds: [web] },
    });
    expect(within.status, within.text).toBe(201);
    const reading = await call(vexil, 'GET', `${base}/projects/mobile`, {
      token: within.body.token,
    });
    expect(reading.status).toBe(404);
  });

  it('an allowlisted caller cannot subscribe a webhook to other projects or the whole org', async () => {
    for (const projectIds of [undefined, [], [mobile], [web, mobile]]) {
      const response = await call(vexil, 'POST', `${base}/webhooks`, {
        token: webAdminToken,
        body: {
          name: 'wider',
          url: 'https://127.0.0.1:1/hook',
          ...(projectIds === undefined ? {} : { projectIds }),
        },
      });
      expect(response.status, `${JSON.stringify(projectIds)}: ${response.text}`).toBe(400);
      expect(response.body.fields.projectIds).toEqual([expect.stringMatching(/your own/)]);
    }
  });

  it('an allowlisted caller cannot invite anyone beyond its allowlist', async () => {
    for (const projectIds of [undefined, null, [mobile]]) {
      const response = await call(vexil, 'POST', `${base}/invitations`, {
        token: webAdmin.token,
        body: {
          email: 'wider@example.test',
          role: 'Admin',
          ...(projectIds === undefined ? {} : { projectIds }),
        },
      });
      expect(response.status, `${JSON.stringify(projectIds)}: ${response.text}`).toBe(400);
      expect(response.body.fields.projectIds).toEqual([expect.stringMatching(/your own/)]);
    }
  });

  it('nobody changes their own role or allowlist', async () => {
    const member = await memberLimitedTo('Member', [web]);
    const path = (userId: string) => `${base}/members/${userId}`;
    for (const body of [{ projectIds: null }, { projectIds: [web, mobile] }, { role: 'Viewer' }]) {
      const response = await call(vexil, 'PATCH', path(webAdmin.userId), {
        token: webAdmin.token,
        body,
      });
      expect(response.status, response.text).toBe(403);
      expect(response.body.error).toBe('own_access');
    }
    const ownerId = (await call(vexil, 'GET', '/api/v1/me', { token: owner })).body.id as string;
    const ownerSelf = await call(vexil, 'PATCH', path(ownerId), {
      token: owner,
      body: { projectIds: [web] },
    });
    expect(ownerSelf.status, ownerSelf.text).toBe(403);
    // A Member limited to web cannot reach the route at all; an Admin limited to web lifts nobody.
    const lift = await call(vexil, 'PATCH', path(member.userId), {
      token: webAdmin.token,
      body: { projectIds: null },
    });
    expect(lift.status, lift.text).toBe(400);
  });

  it('a subscription made within an allowlist hears only of its projects, never of the org as a whole', async () => {
    const subscribe = async (token: string) => {
      const created = await call(vexil, 'POST', `${base}/webhooks`, {
        token,
        body: { name: 'web', url: 'https://127.0.0.1:1/hook', projectIds: [web] },
      });
      expect(created.status, created.text).toBe(201);
      return created.body.id as string;
    };
    const scoped = await subscribe(webAdminToken);
    const unscoped = await subscribe(owner);
    const read = await call(vexil, 'GET', `${base}/webhooks/${scoped}`, { token: webAdminToken });
    expect(read.body.projectScope).toEqual([web]);
    // An organization-wide change, and one in each project.
    await call(vexil, 'POST', `${base}/invitations`, {
      token: owner,
      body: { email: 'org-wide@example.test', role: 'Viewer' },
    });
    for (const project of ['web', 'mobile'])
      await call(vexil, 'PATCH', `${base}/projects/${project}/flags/new-checkout`, {
        token: owner,
        body: { name: `Renamed in ${project}` },
      });
    const heard = async (subscriptionId: string) =>
      (
        await vexil.services.db
          .selectFrom('webhook_deliveries')
          .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
          .select(['webhook_events.type', 'webhook_events.project_id'])
          .where('subscription_id', '=', subscriptionId)
          .execute()
      )
        .map((row) => `${row.type} ${row.project_id ?? 'org'}`)
        // The rows come in no particular order (PostgreSQL moves a delivery's row as it updates it).
        .sort();
    expect(await heard(scoped)).toEqual([`flag.updated ${web}`]);
    // Without an allowlist, the project filter narrows project events only (spec).
    expect(await heard(unscoped)).toEqual([`flag.updated ${web}`, 'invitation.created org']);
    // The organization-wide subscription is beyond the allowlisted caller's reach.
    const list = await call(vexil, 'GET', `${base}/webhooks`, { token: webAdminToken });
    expect(list.body.items.map((item: { id: string }) => item.id)).toEqual([scoped]);
    const other = await call(vexil, 'DELETE', `${base}/webhooks/${unscoped}`, {
      token: webAdminToken,
    });
    expect(other.status).toBe(404);
  });
});
