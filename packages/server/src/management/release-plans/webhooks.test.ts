import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  testDialects,
  variationIdsByKey,
} from '../../test-support/harness.js';
import { nodeWithReceiver } from '../../test-support/webhook-receiver.js';

const base = '/api/v1/orgs/acme/projects/web';
const planPath = `${base}/flags/new-checkout/environments/production/release-plan`;

describe.each(testDialects())('release-plan events delivered to webhooks on %s', (dialect) => {
  const node = nodeWithReceiver(dialect);

  it('a subscription filtered to the environment receives the plan events and the configuration changes, signed', async () => {
    const { vexil, receiver } = node;
    const org = await createOrg(vexil);
    await createProjectWithFlag(vexil, org);
    const environments = await callOk(vexil, 'GET', `${base}/environments`, org.token);
    const production = (environments.items as { key: string; id: string }[]).find(
      (item) => item.key === 'production',
    );
    const { secret } = await callOk(vexil, 'POST', '/api/v1/orgs/acme/webhooks', org.token, {
      name: 'plans',
      url: receiver.url(),
      provider: 'GenericHttp',
      eventTypes: [
        'release_plan.started',
        'release_plan.advanced',
        'release_plan.rolled_back',
        'flag.environment_config.updated',
      ],
      environmentIds: [production?.id],
    });
    const ids = variationIdsByKey(
      await callOk(vexil, 'GET', `${base}/flags/new-checkout`, org.token),
    );
    await callOk(vexil, 'PATCH', `${base}/flags/new-checkout/environments/production`, org.token, {
      defaultVariationId: ids.false,
    });
    await callOk(vexil, 'PUT', planPath, org.token, {
      variation: 'true',
      steps: [
        { percentage: 5, after: 'PT0S' },
        { percentage: 100, after: 'P1D' },
      ],
    });
    await callOk(vexil, 'POST', `${planPath}/rollback`, org.token);
    while ((await vexil.webhookWorker.runOnce()) > 0);
    const delivered = receiver.received.map((request) => {
      const headers = Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
          name,
          String(request.headers[name]),
        ]),
      );
      return (new Webhook(secret as string).verify(request.body, headers) as { type: string }).type;
    });
    expect(delivered.sort()).toEqual(
      [
        'flag.environment_config.updated',
        'flag.environment_config.updated',
        'flag.environment_config.updated',
        'release_plan.advanced',
        'release_plan.rolled_back',
        'release_plan.started',
      ].sort(),
    );
  });
});
