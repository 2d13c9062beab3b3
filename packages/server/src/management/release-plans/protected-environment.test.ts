import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  callOk,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../../test-support/harness.js';

const HOUR = 3_600_000;
const base = '/api/v1/orgs/acme/projects/web';
const planPath = `${base}/flags/new-checkout/environments/production/release-plan`;
const requests = `${base}/change-requests`;
const STEPS = [
  { percentage: 10, after: 'PT0S' },
  { percentage: 100, after: 'PT1H' },
];

describe.each(testDialects())(
  'release plans where change requests are required, on %s',
  (dialect) => {
    const clock = new TestClock(new Date('2026-06-01T12:00:00.000Z'));
    let vexil: TestVexil;
    let org: Awaited<ReturnType<typeof createOrg>>;
    let reviewer: { token: string };
    let ids: Record<string, string>;

    beforeAll(async () => {
      vexil = await createTestVexil(dialect, { clock });
      org = await createOrg(vexil);
      await createProjectWithFlag(vexil, org);
      reviewer = await createMember(vexil, org.orgId, 'Member');
      ids = variationIdsByKey(await callOk(vexil, 'GET', `${base}/flags/new-checkout`, org.token));
      await callOk(
        vexil,
        'PATCH',
        `${base}/flags/new-checkout/environments/production`,
        org.token,
        {
          defaultVariationId: ids.false,
        },
      );
      await callOk(vexil, 'PATCH', `${base}/environments/production`, org.token, {
        changeRequests: { required: true, approvals: 1 },
      });
    });
    afterAll(() => vexil.close());

    it('a plan is started by an applied change request; its steps then advance without approval', async () => {
      const direct = await call(vexil, 'PUT', planPath, {
        token: org.token,
        body: { variation: 'true', steps: STEPS },
      });
      expect(direct.status).toBe(409);
      expect(direct.body.error).toBe('change_request_required');

      const invalid = await call(vexil, 'POST', requests, {
        token: org.token,
        body: {
          environment: 'production',
          title: 'Roll out',
          submit: true,
          changes: [
            {
              kind: 'releasePlan',
              flagKey: 'new-checkout',
              plan: { variation: 'true', steps: [{ percentage: 50, after: 'PT0S' }] },
            },
          ],
        },
      });
      expect(invalid.status).toBe(400);
      expect(Object.keys(invalid.body.fields)).toEqual(['changes[0].plan.steps.0.percentage']);

      const opened = await callOk(vexil, 'POST', requests, org.token, {
        environment: 'production',
        title: 'Roll out new checkout',
        submit: true,
        changes: [
          {
            kind: 'releasePlan',
            flagKey: 'new-checkout',
            plan: { variation: 'true', steps: STEPS, guard: { metric: 'errors' } },
          },
        ],
      });
      const detail = await callOk(vexil, 'GET', `${requests}/${opened.number}`, org.token);
      expect(detail.diff[0]).toMatchObject({
        kind: 'releasePlan',
        before: { fallthrough: { variation: 'false' } },
        conflict: false,
      });
      await callOk(vexil, 'POST', `${requests}/${opened.number}/reviews`, reviewer.token, {
        decision: 'approve',
      });
      await callOk(vexil, 'POST', `${requests}/${opened.number}/apply`, org.token);
      const plan = await callOk(vexil, 'GET', planPath, org.token);
      expect(plan).toMatchObject({ state: 'active', currentStep: 0, variation: 'true' });
      expect(plan.guard).toMatchObject({ metric: 'errors', minimumUsers: 500 });

      clock.advance(HOUR);
      await vexil.dueWork.runOnce();
      expect(await callOk(vexil, 'GET', planPath, org.token)).toMatchObject({
        state: 'completed',
        currentStep: 1,
      });
      const configuration = await callOk(
        vexil,
        'GET',
        `${base}/flags/new-checkout/environments/production`,
        org.token,
      );
      expect(configuration.rollout[0]).toEqual({ variationId: ids.true, weight: 100000 });
    });

    it('a rollback needs no approval and returns to the fallthrough before the plan', async () => {
      await callOk(vexil, 'DELETE', planPath, org.token);
      // Back to the reviewed state by a change request, then a new plan by another.
      const reset = await callOk(vexil, 'POST', requests, org.token, {
        environment: 'production',
        title: 'Reset and roll out again',
        submit: true,
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: (
              await callOk(
                vexil,
                'GET',
                `${base}/flags/new-checkout/environments/production`,
                org.token,
              )
            ).revision,
            configuration: { enabled: false, defaultVariation: 'false', offVariation: 'false' },
          },
        ],
      });
      await callOk(vexil, 'POST', `${requests}/${reset.number}/reviews`, reviewer.token, {
        decision: 'approve',
      });
      await callOk(vexil, 'POST', `${requests}/${reset.number}/apply`, org.token);
      const opened = await callOk(vexil, 'POST', requests, org.token, {
        environment: 'production',
        title: 'Roll out again',
        submit: true,
        changes: [
          {
            kind: 'releasePlan',
            flagKey: 'new-checkout',
            plan: { variation: 'true', steps: STEPS },
          },
        ],
      });
      await callOk(vexil, 'POST', `${requests}/${opened.number}/reviews`, reviewer.token, {
        decision: 'approve',
      });
      await callOk(vexil, 'POST', `${requests}/${opened.number}/apply`, org.token);
      const rolledBack = await callOk(vexil, 'POST', `${planPath}/rollback`, org.token);
      expect(rolledBack.state).toBe('rolledBack');
      const configuration = await callOk(
        vexil,
        'GET',
        `${base}/flags/new-checkout/environments/production`,
        org.token,
      );
      expect(configuration).toMatchObject({
        strategy: 'SingleVariation',
        defaultVariationId: ids.false,
      });
    });
  },
);
