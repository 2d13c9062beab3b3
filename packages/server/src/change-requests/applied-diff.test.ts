import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

const project = '/api/v1/orgs/acme/projects/web';
const flag = `${project}/flags/new-checkout`;
const requests = `${project}/change-requests`;
const MINUTE = 60_000;

/** Issue 43, item 2: an applied request keeps showing what it changed, as it was when applied. */
describe.each(testDialects())('the diff of an applied change request on %s', (dialect) => {
  let vexil: TestVexil;
  let clock: TestClock;
  let owner: string;
  let author: string;
  let reviewer: string;

  const revision = async (environment: string) =>
    (await callOk(vexil, 'GET', `${flag}/environments/${environment}`, owner)).revision as number;

  const propose = async (environment: string, extra: Record<string, unknown> = {}) =>
    callOk(vexil, 'POST', requests, author, {
      environment,
      title: `Serve false to everyone in ${environment}`,
      submit: true,
      changes: [
        {
          kind: 'flag',
          flagKey: 'new-checkout',
          baseRevision: await revision(environment),
          configuration: { enabled: true, defaultVariation: 'false', offVariation: 'false' },
        },
      ],
      ...extra,
    });

  const detail = async (number: number) =>
    callOk(vexil, 'GET', `${requests}/${number}`, owner) as Promise<{
      state: string;
      diff: {
        before: Record<string, unknown>;
        after: Record<string, unknown>;
        conflict: boolean;
      }[];
    }>;

  beforeAll(async () => {
    clock = new TestClock();
    vexil = await createTestVexil(dialect, { clock });
    const org = await createOrg(vexil);
    owner = org.token;
    await createProjectWithFlag(vexil, org);
    author = (await createMember(vexil, org.orgId, 'Member')).token;
    reviewer = (await createMember(vexil, org.orgId, 'Member')).token;
    await callOk(vexil, 'PATCH', `${project}/environments/production`, owner, {
      changeRequests: { required: true, approvals: 1 },
    });
  });
  afterAll(() => vexil.close());

  it('shows the state before and after the apply, without a conflict, also after later changes', async () => {
    const opened = await propose('production');
    const pending = await detail(opened.number);
    expect(pending.diff[0]).toMatchObject({
      before: { enabled: false, defaultVariation: 'true' },
      after: { enabled: true, defaultVariation: 'false' },
      conflict: false,
    });
    await callOk(vexil, 'POST', `${requests}/${opened.number}/reviews`, reviewer, {
      decision: 'approve',
    });
    const applied = await callOk(vexil, 'POST', `${requests}/${opened.number}/apply`, author);
    expect(applied.state).toBe('applied');
    expect(applied.diff).toEqual(pending.diff);

    // An emergency off afterwards moves the configuration on: the request still shows its change.
    await callOk(vexil, 'POST', `${flag}/environments/production/toggle`, owner, {
      enabled: false,
    });
    const later = await detail(opened.number);
    expect(later.state).toBe('applied');
    expect(later.diff).toEqual(pending.diff);
    expect(later.diff[0]?.before).not.toEqual(later.diff[0]?.after);
  });

  it('keeps it for a request applied on its schedule', async () => {
    const scheduled = await propose('development', {
      applyAt: new Date(clock.now().getTime() + MINUTE).toISOString(),
    });
    expect(scheduled.state).toBe('scheduled');
    const pending = await detail(scheduled.number);
    clock.advance(MINUTE);
    await vexil.dueWork.runOnce();
    const applied = await detail(scheduled.number);
    expect(applied.state).toBe('applied');
    expect(applied.diff).toEqual(pending.diff);
    expect(applied.diff[0]).toMatchObject({
      before: { enabled: false },
      after: { enabled: true },
      conflict: false,
    });
  });
});
