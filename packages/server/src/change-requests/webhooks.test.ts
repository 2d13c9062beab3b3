import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { EventPayload } from '../events/types.js';
import {
  callOk,
  createMember,
  createOrg,
  createProjectWithFlag,
  testDialects,
} from '../test-support/harness.js';
import { nodeWithReceiver } from '../test-support/webhook-receiver.js';

const base = '/api/v1/orgs/acme/projects/web';
const production = `${base}/flags/new-checkout/environments/production`;
const requests = `${base}/change-requests`;
const MINUTE = 60_000;

describe.each(testDialects())('change-request events delivered to webhooks on %s', (dialect) => {
  const node = nodeWithReceiver(dialect);

  it('a subscription to the environment receives each state of a request and the changes it applies, signed', async () => {
    const { vexil, receiver, clock } = node;
    const org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    const author = await createMember(vexil, org.orgId, 'Member');
    const reviewer = await createMember(vexil, org.orgId, 'Member');
    const environments = await callOk(vexil, 'GET', `${base}/environments`, org.token);
    const ids = Object.fromEntries(
      (environments.items as { key: string; id: string }[]).map((item) => [item.key, item.id]),
    );
    await callOk(vexil, 'PATCH', `${base}/environments/production`, org.token, {
      changeRequests: { required: true, approvals: 1 },
    });
    const { secret } = await callOk(vexil, 'POST', '/api/v1/orgs/acme/webhooks', org.token, {
      name: 'reviews',
      url: receiver.url(),
      provider: 'GenericHttp',
      eventTypes: [
        'change_request.opened',
        'change_request.approved',
        'change_request.rejected',
        'change_request.scheduled',
        'change_request.applied',
        'change_request.failed',
        'change_request.cancelled',
        'flag.toggled',
        'flag.environment_config.updated',
      ],
      environmentIds: [ids.production],
    });
    // Development is not subscribed: its request's events must not arrive.
    await callOk(vexil, 'POST', requests, author.token, {
      environment: 'development',
      title: 'Elsewhere',
      submit: true,
      changes: [
        {
          kind: 'flag',
          flagKey: 'new-checkout',
          baseRevision: (
            await callOk(
              vexil,
              'GET',
              `${base}/flags/new-checkout/environments/development`,
              org.token,
            )
          ).revision,
          configuration: { enabled: true, defaultVariation: 'true', offVariation: 'false' },
        },
      ],
    });

    const propose = async (title: string, configuration: Record<string, unknown>) =>
      callOk(vexil, 'POST', requests, author.token, {
        environment: 'production',
        title,
        submit: true,
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: (await callOk(vexil, 'GET', production, org.token)).revision,
            configuration: { defaultVariation: 'true', offVariation: 'false', ...configuration },
          },
        ],
      });
    const review = (number: unknown, decision: 'approve' | 'reject') =>
      callOk(vexil, 'POST', `${requests}/${String(number)}/reviews`, reviewer.token, {
        decision,
        comment: decision === 'approve' ? 'Looks right' : 'Not this week',
      });

    // Opened, approved, applied: the toggle and the serving change name the request.
    const applied = await propose('Turn it on', { enabled: true, defaultVariation: 'false' });
    await review(applied.number, 'approve');
    await callOk(vexil, 'POST', `${requests}/${String(applied.number)}/apply`, author.token);
    // Opened, rejected.
    const rejected = await propose('Serve false when off', { enabled: true, offVariation: 'true' });
    await review(rejected.number, 'reject');
    // Opened, approved, scheduled, then failed: an emergency off moved the revision meanwhile.
    const failed = await propose('Serve true', { enabled: true });
    await review(failed.number, 'approve');
    await callOk(vexil, 'POST', `${requests}/${String(failed.number)}/apply`, author.token, {
      applyAt: new Date(clock.now().getTime() + MINUTE).toISOString(),
    });
    await callOk(vexil, 'POST', `${production}/toggle`, author.token, { enabled: false });
    clock.advance(MINUTE);
    await vexil.dueWork.runOnce();
    // Opened, cancelled.
    const cancelled = await propose('Never mind', { enabled: true });
    await callOk(vexil, 'POST', `${requests}/${String(cancelled.number)}/cancel`, author.token);

    while ((await vexil.webhookWorker.runOnce()) > 0);
    const delivered = receiver.received.map((request) => {
      const headers = Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
          name,
          String(request.headers[name]),
        ]),
      );
      return new Webhook(secret as string).verify(request.body, headers) as EventPayload;
    });
    const about = (request: Record<string, unknown>) =>
      delivered
        .filter((event) => event.type.startsWith('change_request.'))
        .filter((event) => event.entity.id === request.id)
        .map((event) => event.type)
        .sort();
    // Sorted: the test clock stands still, and delivery order is not guaranteed (spec).
    expect(about(applied)).toEqual([
      'change_request.applied',
      'change_request.approved',
      'change_request.opened',
    ]);
    expect(about(rejected)).toEqual(['change_request.opened', 'change_request.rejected']);
    expect(about(failed)).toEqual([
      'change_request.approved',
      'change_request.failed',
      'change_request.opened',
      'change_request.scheduled',
    ]);
    expect(about(cancelled)).toEqual(['change_request.cancelled', 'change_request.opened']);
    const requestEvents = delivered.filter((event) => event.type.startsWith('change_request.'));
    expect(requestEvents).toHaveLength(11);

    // Each names its request (id and number), the project, the environment, and who acted.
    const byId = new Map(
      [applied, rejected, failed, cancelled].map((request) => [request.id, request]),
    );
    for (const event of requestEvents) {
      const request = byId.get(event.entity.id);
      expect(event).toMatchObject({
        organizationId: org.orgId,
        environmentId: ids.production,
        entity: { type: 'change_request', id: request?.id },
        changeRequest: { id: request?.id, number: request?.number },
      });
      expect(event.projectId).toEqual(expect.any(String));
      const reviewed = ['change_request.approved', 'change_request.rejected'].includes(event.type);
      expect(event.actor.userId).toBe(reviewed ? reviewer.userId : author.userId);
    }

    // The applied request's changes arrive as direct changes would, each naming the request;
    // the emergency off names none and says it went past the policy.
    const serving = delivered.filter((event) => event.type.startsWith('flag.'));
    expect(serving.map((event) => event.type).sort()).toEqual([
      'flag.environment_config.updated',
      'flag.toggled',
      'flag.toggled',
    ]);
    const ofApply = serving.filter((event) => event.changeRequest !== undefined);
    expect(ofApply.map((event) => event.type).sort()).toEqual([
      'flag.environment_config.updated',
      'flag.toggled',
    ]);
    for (const event of ofApply)
      expect(event).toMatchObject({
        environmentId: ids.production,
        actor: { userId: author.userId },
        changeRequest: { id: applied.id, number: applied.number },
      });
    expect(serving.find((event) => event.changeRequest === undefined)).toMatchObject({
      type: 'flag.toggled',
      bypassedChangeRequest: true,
    });
  });
});
