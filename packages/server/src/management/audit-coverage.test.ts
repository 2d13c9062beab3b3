import { afterAll, describe, expect, it } from 'vitest';
import { call, createTestVexil, TestClock, testWebhookSettings } from '../test-support/harness.js';
import { seedOneOfEverything } from '../test-support/one-of-everything.js';
import { managementRoutes } from '../test-support/route-table.js';

/**
 * Every mutating management route writes an audit entry or is named here as exempt with a reason
 * (issue 43). The routes come from a real node's route table, so a new mutating route fails this
 * test until it is classified; the seeded organization's audit log then shows the entries of the
 * routes that seeded it.
 */
type Classification = { audited: string } | { exempt: string };

const PERSONAL =
  'changes a person’s own sign-in, not an organization’s data; the audit log is an organization’s';
const READS = 'evaluates without changing anything (POST for its body)';

const ROUTES: Record<string, Classification> = {
  'POST /api/v1/me/tokens': { exempt: PERSONAL },
  'DELETE /api/v1/me/tokens/{tokenId}': { exempt: PERSONAL },
  'DELETE /api/v1/me/sessions/{id}': { exempt: PERSONAL },
  'POST /api/v1/me/password': { exempt: PERSONAL },
  'PATCH /api/v1/orgs/{org}': { audited: 'organization.updated' },
  'POST /api/v1/orgs/{org}/service-tokens': { audited: 'api_token.created' },
  'DELETE /api/v1/orgs/{org}/service-tokens/{tokenId}': { audited: 'api_token.deleted' },
  'POST /api/v1/orgs/{org}/relay-keys': { audited: 'relay_key.created' },
  'DELETE /api/v1/orgs/{org}/relay-keys/{relayKeyId}': { audited: 'relay_key.revoked' },
  'POST /api/v1/orgs/{org}/projects': { audited: 'project.created' },
  'PATCH /api/v1/orgs/{org}/projects/{project}': { audited: 'project.updated' },
  'DELETE /api/v1/orgs/{org}/projects/{project}': { audited: 'project.deleted' },
  'POST /api/v1/orgs/{org}/projects/{project}/environments': { audited: 'environment.created' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/environments/{env}': {
    audited: 'environment.updated',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/environments/{env}': {
    audited: 'environment.deleted',
  },
  'PUT /api/v1/orgs/{org}/projects/{project}/code-references/{repository}/branches/{branch}': {
    audited: 'code_references.updated',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/code-references/repositories/{repository}': {
    audited: 'code_references.updated',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/code-references/repositories/{repository}': {
    audited: 'code_references.updated',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags': { audited: 'flag.created' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}': { audited: 'flag.updated' },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}': { audited: 'flag.deleted' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations': {
    audited: 'flag.variation.created',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations/{variation}': {
    audited: 'flag.variation.updated',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/variations/{variation}': {
    audited: 'flag.variation.deleted',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}': {
    audited: 'flag.environment_config.updated',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/toggle': {
    audited: 'flag.toggled',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/copy': {
    audited: 'flag.environment_config.updated',
  },
  'PUT /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan': {
    audited: 'release_plan.started',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan': {
    audited: 'release_plan.deleted',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/pause': {
    audited: 'release_plan.paused',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/resume':
    { audited: 'release_plan.resumed' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/rollback':
    { audited: 'release_plan.rolled_back' },
  'POST /api/v1/orgs/{org}/projects/{project}/metrics': { audited: 'metric.created' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/metrics/{metric}': { audited: 'metric.updated' },
  'DELETE /api/v1/orgs/{org}/projects/{project}/metrics/{metric}': { audited: 'metric.deleted' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments': {
    audited: 'experiment.created',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}':
    { audited: 'experiment.updated' },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}':
    { audited: 'experiment.deleted' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}/start':
    { audited: 'experiment.started' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/experiments/{experiment}/stop':
    { audited: 'experiment.stopped' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/archive': { audited: 'flag.archived' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/restore': { audited: 'flag.restored' },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/expiry': { audited: 'flag.updated' },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/evaluate': {
    exempt: READS,
  },
  'POST /api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys': {
    audited: 'sdk_key.created',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys/{keyId}': {
    audited: 'sdk_key.deleted',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/segments': { audited: 'segment.created' },
  'PATCH /api/v1/orgs/{org}/projects/{project}/segments/{segment}': {
    audited: 'segment.updated',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/segments/{segment}': {
    audited: 'segment.deleted',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules': {
    audited: 'flag.rule.created',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}': {
    audited: 'flag.rule.updated',
  },
  'PUT /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}': {
    audited: 'flag.rule.updated',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/{rule}': {
    audited: 'flag.rule.deleted',
  },
  'PUT /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules/reorder': {
    audited: 'flag.rule.updated',
  },
  'POST /api/v1/orgs/{org}/webhooks': { audited: 'webhook.created' },
  'PATCH /api/v1/orgs/{org}/webhooks/{id}': { audited: 'webhook.updated' },
  'DELETE /api/v1/orgs/{org}/webhooks/{id}': { audited: 'webhook.deleted' },
  'POST /api/v1/orgs/{org}/webhooks/{id}/secrets': { audited: 'webhook.secret.created' },
  'DELETE /api/v1/orgs/{org}/webhooks/{id}/secrets/{secretId}': {
    audited: 'webhook.secret.retired',
  },
  'POST /api/v1/orgs/{org}/webhooks/{id}/test': {
    exempt: 'queues a synthetic event for one subscription; its delivery log records it',
  },
  'POST /api/v1/orgs/{org}/webhooks/{id}/deliveries/{deliveryId}/redeliver': {
    exempt: 'sends a recorded event again; its delivery log records the attempt',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests': {
    audited: 'change_request.opened',
  },
  'PATCH /api/v1/orgs/{org}/projects/{project}/change-requests/{number}': {
    exempt:
      'a draft is its author’s own until submitted (then change_request.opened); editing a submitted request reopens it with change_request.opened',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/submit': {
    audited: 'change_request.opened',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/apply': {
    audited: 'change_request.applied',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/cancel': {
    audited: 'change_request.cancelled',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/reviews': {
    audited: 'change_request.approved',
  },
  'DELETE /api/v1/orgs/{org}/projects/{project}/change-requests/{number}/schedule': {
    audited: 'change_request.unscheduled',
  },
  'PATCH /api/v1/orgs/{org}/members/{userId}': { audited: 'member.updated' },
  'DELETE /api/v1/orgs/{org}/members/{userId}': { audited: 'member.deleted' },
  'POST /api/v1/orgs/{org}/invitations': { audited: 'invitation.created' },
  'DELETE /api/v1/orgs/{org}/invitations/{id}': { audited: 'invitation.deleted' },
  'POST /api/v1/invitations/accept': { audited: 'invitation.accepted' },
  'POST /api/v1/orgs/{org}/sso-connections': { audited: 'sso_connection.created' },
  'PATCH /api/v1/orgs/{org}/sso-connections/{id}': { audited: 'sso_connection.updated' },
  'DELETE /api/v1/orgs/{org}/sso-connections/{id}': { audited: 'sso_connection.deleted' },
  'POST /api/v1/orgs/{org}/projects/{project}/apply': {
    audited: 'flag.created',
  },
};

describe('audit coverage of the management API', () => {
  const clock = new TestClock();
  let close: (() => Promise<void>) | undefined;
  afterAll(() => close?.());

  it('classifies every mutating route of the live route table, and no route it lacks', async () => {
    const mutating = (await managementRoutes())
      .filter((route) => route.method !== 'GET')
      .map((route) => route.id);
    expect(
      mutating.filter((id) => !(id in ROUTES)),
      'unclassified mutating routes',
    ).toEqual([]);
    expect(
      Object.keys(ROUTES).filter((id) => !mutating.includes(id)),
      'stale',
    ).toEqual([]);
    for (const [id, classification] of Object.entries(ROUTES))
      if ('exempt' in classification) expect(classification.exempt.length, id).toBeGreaterThan(20);
    // Each starts a node of its own: generous on a machine running both CI suites.
  }, 60_000);

  it('the routes that seed an organization leave their entries in its audit log', async () => {
    const vexil = await createTestVexil('sqlite', {
      clock,
      config: { webhooks: testWebhookSettings() },
    });
    close = () => vexil.close();
    const seeded = await seedOneOfEverything(vexil);
    const log = await call(vexil, 'GET', '/api/v1/orgs/acme/audit-log?limit=200', {
      token: seeded.owner,
    });
    expect(log.status, log.text).toBe(200);
    const types = new Set(log.body.items.map((item: { type: string }) => item.type));
    // What seedOneOfEverything calls, by the route's classification.
    for (const id of [
      'POST /api/v1/orgs/{org}/projects',
      'POST /api/v1/orgs/{org}/projects/{project}/flags',
      'POST /api/v1/orgs/{org}/projects/{project}/environments/{env}/sdk-keys',
      'POST /api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules',
      'POST /api/v1/orgs/{org}/projects/{project}/segments',
      'POST /api/v1/orgs/{org}/service-tokens',
      'POST /api/v1/orgs/{org}/webhooks',
      'POST /api/v1/orgs/{org}/webhooks/{id}/secrets',
      'POST /api/v1/orgs/{org}/relay-keys',
    ]) {
      const classification = ROUTES[id];
      expect(classification && 'audited' in classification, id).toBe(true);
      if (classification && 'audited' in classification)
        expect(types.has(classification.audited), `${id}: ${classification.audited}`).toBe(true);
    }
    // Each starts a node of its own: generous on a machine running both CI suites.
  }, 60_000);
});
